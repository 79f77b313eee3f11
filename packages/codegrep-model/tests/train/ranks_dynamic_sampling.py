"""One rank of ms-swift's DAPO dynamic sampling in CodeGrep's trainer, on CPU over gloo.

Not a test module: `test_dynamic_sampling_ranks.py` runs it as
`torchrun --nproc_per_node 2 ranks_dynamic_sampling.py OUT_DIR`. Each rank holds one GRPO group
of 2 rollouts per batch (4 rollouts over the 2 ranks, `generation_batch_size` 4). ms-swift's own
`GRPOTrainer._dynamic_sampling`, `_compute_rewards_per_func` (scoring with the real
`codegrep_v3` ORM) and `compute_std` run with their collectives (accelerate's `gather` and
`gather_object`, torch.distributed under them) as on a node; the plugin's trainer wraps them.
Only the rollout itself (`_generate_completions`) is scripted: each batch's answers are fixed
below, so which groups have reward variance is known.

Rank r writes OUT_DIR/rank{r}.json: the instance ids and request ids it trains on. Rank 0 also
writes the set-aside log (OUT_DIR/codegrep_rollouts.set_aside.jsonl).
"""

from __future__ import annotations

import contextlib
import datetime
import itertools
import json
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs
from codegrep_model.train import swift_plugin_path
from swift.rewards import orms
from swift.rl_core.data import GRPOSample
from swift.utils import import_external_file

GOLD = ["shop/cart.py"]
WRONG = ["shop/pricing.py"]
# batch -> rank -> (instance id, the answers of its group's two rollouts)
BATCHES = [
    [("P0", [GOLD, WRONG]), ("P1", [WRONG, WRONG])],  # P0 varies, P1 does not: resample
    [("P2", [WRONG, WRONG]), ("P3", [GOLD, GOLD])],  # neither varies: resample
    [("P4", [GOLD, WRONG]), ("P5", [WRONG, GOLD])],  # both vary: 6 varied, the first 4 train
]
TRAINED = ["P0", "P0", "P4", "P4"]  # in gather order: rank 0 trains P0's, rank 1 P4's


def main(out: Path) -> None:
    # a peer that never enters a collective fails the run within a minute instead of hanging
    timeout = InitProcessGroupKwargs(timeout=datetime.timedelta(seconds=60))
    accelerator = Accelerator(cpu=True, kwargs_handlers=[timeout])
    rank, world = accelerator.process_index, accelerator.num_processes
    assert world == 2, f"run with torchrun --nproc_per_node 2 (world size {world})"
    assert torch.distributed.get_backend() == "gloo"

    plugin = import_external_file(str(swift_plugin_path()))
    trainer: Any = object.__new__(plugin.CodegrepGRPOTrainer)
    batches = iter(BATCHES)

    def rows(batch: list[tuple[str, list[list[str]]]]) -> list[dict[str, Any]]:
        iid, answers = batch[rank]
        return [
            {
                "messages": [
                    {"role": "system", "content": "s"},
                    {"role": "user", "content": f"issue {iid}"},
                ],
                "instance_id": iid,
                "gold_files": GOLD,
                "answer": json.dumps({"files": a}),
                "files": a,
            }
            for a in answers
        ]

    def generate(samples: list[GRPOSample]) -> list[GRPOSample]:
        """The rollout, scripted: what ms-swift's scheduler output would leave on a sample."""
        for s in samples:
            s.request_id = f"chatcmpl-{uuid.uuid4().hex}"
            s.prompt_id = s.extra["instance_id"]
            s.messages = [*s.messages, {"role": "assistant", "content": s.extra.pop("answer")}]
            s.rollout_infos = {
                "num_turns": 2,
                "num_tool_calls": 1,
                "tool_calls_per_turn": [1, 0],
                "max_calls_per_turn": 8,
                "answer_files": s.extra.pop("files"),
                "answer_error": None,
                "episode_status": "answered",
            }
            s.finish_reason = "stop"
        return samples

    trainer.accelerator = accelerator
    trainer.args = SimpleNamespace(generation_batch_size=4, report_to=[])
    trainer.max_resample_times = 3
    trainer.dynamic_resample_iterator = (rows(b) for b in itertools.islice(batches, 1, None))
    trainer.template = SimpleNamespace(truncation_strategy="delete")
    trainer._generate_completions = generate
    trainer.model = SimpleNamespace(training=True)
    trainer.num_generations = 2
    trainer.num_generations_eval = 2
    trainer.dynamic_num_samples = False
    trainer.enable_server_multi_turn = False
    trainer.use_gym_env = False
    trainer.reward_funcs = [orms["codegrep_v3"]()]
    trainer.reward_func_names = ["codegrep_v3"]
    trainer.reward_model_plugins = [None]
    trainer.reward_weights = torch.tensor([1.0])
    trainer._disable_sp_context = contextlib.nullcontext
    trainer.state = SimpleNamespace(global_step=0)
    trainer.codegrep_zero_unanswered = False
    trainer.codegrep_reward = "codegrep_v3"
    trainer.codegrep_rollout_log = out / "codegrep_rollouts.jsonl"
    trainer.codegrep_set_aside_log = out / "codegrep_rollouts.set_aside.jsonl"

    first = generate(trainer.to_samples(rows(BATCHES[0])))
    rewards = trainer._compute_rewards_per_func(first)  # gathered: both ranks' rollouts
    kept, kept_rewards = trainer._dynamic_sampling(first, rewards)
    accelerator.wait_for_everyone()
    (out / f"rank{rank}.json").write_text(
        json.dumps(
            {
                "trained": [s.extra["instance_id"] for s in kept],
                "request_ids": [s.request_id for s in kept],
                "kept_rewards": kept_rewards.squeeze(1).tolist(),
            }
        )
    )
    accelerator.wait_for_everyone()
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
