"""`--dynamic_sample true` on two processes: ms-swift's DAPO resampling with the plugin's
trainer under `torchrun --nproc_per_node 2` on CPU (gloo), every collective real
(`ranks_dynamic_sampling.py` is the rank's program). The set-aside log must hold exactly the
drawn rollouts that did not train, whichever rank drew them, and neither rank may wait on a
gather the other never enters (gloo's timeout is 60 s there, so a missing peer fails the run
instead of hanging it).

Needs ms-swift: run through packages/codegrep-model/ci/swift-tier.sh.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = [pytest.mark.train, pytest.mark.slow]
pytest.importorskip(
    "swift.rollout",
    reason="needs ms-swift 4.6 (the training tier: packages/codegrep-model/ci/swift-tier.sh)",
)

from codegrep_model.train import read_rollout_log  # noqa: E402

RANK_PROGRAM = Path(__file__).with_name("ranks_dynamic_sampling.py")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_two_ranks_gather_on_every_rank_and_match_by_request_id(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "CUDA_VISIBLE_DEVICES": "",
        "OMP_NUM_THREADS": "1",
        "MASTER_ADDR": "127.0.0.1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    argv = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
        "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
        str(RANK_PROGRAM), str(tmp_path),
    ]  # fmt: skip
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
    assert proc.returncode == 0, tail

    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    # ms-swift keeps the first 4 varied rollouts in gather order: P0's on rank 0, P4's on rank 1
    assert [r["trained"] for r in ranks] == [["P0", "P0"], ["P4", "P4"]]
    assert ranks[0]["kept_rewards"] == ranks[1]["kept_rewards"] == [1.0, 0.0, 1.0, 0.0]
    trained_ids = ranks[0]["request_ids"] + ranks[1]["request_ids"]
    assert len(set(trained_ids)) == 4

    aside = read_rollout_log(tmp_path / "codegrep_rollouts.set_aside.jsonl")
    # drawn on either rank and not trained: P1 (rank 1, no variance), P2 and P3 (the second
    # batch, neither varied), P5 (rank 1, varied but past the batch size); nothing trained
    assert Counter(e.instance_id for e in aside) == {"P1": 2, "P2": 2, "P3": 2, "P5": 2}
    assert {e.advantage for e in aside} == {0.0}
    rewards = {(e.instance_id, e.reward) for e in aside}
    assert rewards == {("P1", 0.0), ("P2", 0.0), ("P3", 1.0), ("P5", 0.0), ("P5", 1.0)}
    assert not (tmp_path / "codegrep_rollouts.jsonl").exists()
