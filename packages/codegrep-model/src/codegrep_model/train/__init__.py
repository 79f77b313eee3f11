"""Training the CodeGrep agent with ms-swift GRPO: the pieces that need no trainer installed.

- `RolloutEnvironment`: the RL environment as one object, one `Episode` per rollout (the same
  agent as inference), its stop rules and its reward, writing one `grpo_rewards.RolloutInfo`
  per rollout; the trees pooled on a loop of their own (`SandboxHost`). ms-swift's multi-turn
  scheduler and its ORMs are thin wrappers around it;
- `fold_follow_up`: what follows a reply (tool results, the episode's next prompt) as the one
  user turn ms-swift's encoder accepts, in the tokens the model's chat template makes of it
  (defined in `codegrep_model.datasets`, whose SFT rows are written with it too);
- `advantage_scale(s)`: CodeGrep's advantage-layer discount sqrt(min(c̄/4, 1)) for a reward that
  declares it (v2, v3; 1.0 for v1), as `grpo_rewards.advantage_scales` defines it once (with
  this package's setup error), `efficiency_reward` (which reward decides it), and
  `RolloutLogEntry`, the per-rollout log line the trainer writes.

The rows come from `codegrep_model.datasets` (`grpo_rows`: the prompts exactly as the episode
renders them, which the scheduler checks, and the sandbox columns it needs).

Serving a trained Qwen3 for evaluation: `qwen3_chat_template_path()` is the chat template that
renders a conversation as training did (`vllm serve --chat-template`).

The ms-swift side is a plugin file, `plugins/swift_plugin.py` (`swift_plugin_path()` gives its
path) for `swift rlhf --external_plugins`: it registers the rewards (`codegrep_v1`, `codegrep_v2`,
`codegrep_v3`, ... through `grpo_rewards.swift_orm`), the `codegrep_tools` scheduler (and,
TEST ONLY, one scheduler per `TEST_POLICIES` entry, named by `scheduler_with_test_policy`) and
the GRPOTrainer that scales advantages. It lives in a folder that is not a Python package, so that
importing `codegrep_model` (or walking its modules) never imports ms-swift or torch.
"""

from __future__ import annotations

from pathlib import Path

from codegrep_model.train._advantage import (
    ROLLOUT_LOG_FILE,
    ROLLOUT_LOG_SCHEMA_VERSION,
    AdvantageScale,
    RolloutLogEntry,
    advantage_scale,
    advantage_scales,
    efficiency_reward,
    overflow_rate,
    read_rollout_log,
    set_aside_log,
)
from codegrep_model.train._environment import RolloutEnvironment, TurnOutcome
from codegrep_model.train._scheduler_core import (
    CHATML_TURN_BREAK,
    REQUIRED_COLUMNS,
    TEST_POLICIES,
    TRAINING_BUDGET,
    PolicyOverride,
    SandboxHost,
    TrainingSetupError,
    fold_follow_up,
    hermes_text,
    named_test_override,
    policy_reply,
    scheduler_with_test_policy,
)

__all__ = [
    "CHATML_TURN_BREAK",
    "REQUIRED_COLUMNS",
    "ROLLOUT_LOG_ENV",
    "ROLLOUT_LOG_FILE",
    "ROLLOUT_LOG_SCHEMA_VERSION",
    "TEST_POLICIES",
    "TRAINING_BUDGET",
    "AdvantageScale",
    "PolicyOverride",
    "RolloutEnvironment",
    "RolloutLogEntry",
    "SandboxHost",
    "TrainingSetupError",
    "TurnOutcome",
    "advantage_scale",
    "advantage_scales",
    "efficiency_reward",
    "fold_follow_up",
    "hermes_text",
    "named_test_override",
    "overflow_rate",
    "policy_reply",
    "qwen3_chat_template_path",
    "read_rollout_log",
    "scheduler_with_test_policy",
    "set_aside_log",
    "swift_plugin_path",
]

#: Where the ms-swift trainer writes its per-rollout log (JSON lines, `RolloutLogEntry`);
#: unset: `<output_dir>/ROLLOUT_LOG_FILE`.
ROLLOUT_LOG_ENV = "CODEGREP_ROLLOUT_LOG"


def swift_plugin_path() -> Path:
    """The file to pass to `swift rlhf --external_plugins`."""
    return Path(__file__).resolve().parent / "plugins" / "swift_plugin.py"


def qwen3_chat_template_path() -> Path:
    """Qwen3's chat template as a trained checkpoint must be served with (`vllm serve ...
    --chat-template` this file): each assistant turn keeps its `<think>` block, empty or not,
    as ms-swift's qwen3 template encodes every turn of a rollout in training. Qwen3's own
    template drops it from every turn before the last user message, which in an episode is
    every earlier turn (the turn reminder is a user message)."""
    return Path(__file__).resolve().parent.parent / "chat_templates" / "qwen3.jinja"
