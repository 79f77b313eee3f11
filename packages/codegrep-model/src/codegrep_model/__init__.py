"""codegrep-model: the CodeGrep retrieval agent at inference time.

Prompts and tool schemas, the answer schema and its tolerant parser, the rollout as a
synchronous state machine (`Episode`: 3 exploration turns of up to 8 calls, then an answer turn)
with an asyncio driver (`run_rollout`, the calls of a turn run concurrently), the policies behind
one Protocol (`OpenAIPolicy`, `LexicalPolicy`, `ScriptedPolicy`) and a resumable batch runner.
"""

from importlib import metadata as _metadata

from codegrep_model.answer import Answer, answer_path
from codegrep_model.batch import (
    BadInputRow,
    BatchEvent,
    BatchPlan,
    BatchStarted,
    BatchSummary,
    RolloutDone,
    run_batch,
    run_batch_file,
)
from codegrep_model.budget import CharEstimate, TokenBudget, TokenCounter, TokenizerCounter
from codegrep_model.engine import (
    DEFAULT_MAX_ISSUE_BYTES,
    RolloutConfig,
    ToolTree,
    definitions_mode,
    rollout_stats,
    run_rollout,
)
from codegrep_model.episode import (
    Action,
    AskPolicy,
    Done,
    Episode,
    PlannedCall,
    RunCalls,
)
from codegrep_model.errors import (
    BatchError,
    BatchInputError,
    BatchStoppedError,
    CodegrepModelError,
    EndpointError,
    EndpointTimeoutError,
    EpisodeError,
    PolicyError,
    PolicySpecError,
)
from codegrep_model.lexical import LexicalConfig, LexicalPolicy
from codegrep_model.openai_policy import OpenAIPolicy
from codegrep_model.policy import Observation, Policy, PolicyReply, PolicyRequest
from codegrep_model.policy_options import base_url_problem, spec_from_options
from codegrep_model.policy_spec import (
    POLICY_KINDS,
    PolicyKind,
    PolicySpec,
    parse_policy_spec,
    policy_from_spec,
    served_spec,
)
from codegrep_model.prompts import PromptSet, render_top_levels
from codegrep_model.records import (
    ChatMessage,
    Instance,
    Prediction,
    RewardView,
    RolloutCounts,
    RolloutRecord,
    ToolCall,
    ToolCallRecord,
    TurnRecord,
    Usage,
    prediction_from_rollout,
)
from codegrep_model.scripted import ScriptedPolicy, call
from codegrep_model.tools import openai_tools, tool_names

# pyproject.toml holds the version; a source checkout that was never installed has no metadata.
try:
    __version__ = _metadata.version("codegrep-model")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

__all__ = [
    "DEFAULT_MAX_ISSUE_BYTES",
    "POLICY_KINDS",
    "Action",
    "Answer",
    "AskPolicy",
    "BadInputRow",
    "BatchError",
    "BatchEvent",
    "BatchInputError",
    "BatchPlan",
    "BatchStarted",
    "BatchStoppedError",
    "BatchSummary",
    "CharEstimate",
    "ChatMessage",
    "CodegrepModelError",
    "Done",
    "EndpointError",
    "EndpointTimeoutError",
    "Episode",
    "EpisodeError",
    "Instance",
    "LexicalConfig",
    "LexicalPolicy",
    "Observation",
    "OpenAIPolicy",
    "PlannedCall",
    "Policy",
    "PolicyError",
    "PolicyKind",
    "PolicyReply",
    "PolicyRequest",
    "PolicySpec",
    "PolicySpecError",
    "Prediction",
    "PromptSet",
    "RewardView",
    "RolloutConfig",
    "RolloutCounts",
    "RolloutDone",
    "RolloutRecord",
    "RunCalls",
    "ScriptedPolicy",
    "TokenBudget",
    "TokenCounter",
    "TokenizerCounter",
    "ToolCall",
    "ToolCallRecord",
    "ToolTree",
    "TurnRecord",
    "Usage",
    "__version__",
    "answer_path",
    "base_url_problem",
    "call",
    "definitions_mode",
    "openai_tools",
    "parse_policy_spec",
    "policy_from_spec",
    "prediction_from_rollout",
    "render_top_levels",
    "rollout_stats",
    "run_batch",
    "run_batch_file",
    "run_rollout",
    "served_spec",
    "spec_from_options",
    "tool_names",
]
