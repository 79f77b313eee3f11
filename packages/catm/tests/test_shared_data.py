"""Stage 1 against the independently made `index.jsonl` files of the shared OpenHands data.

The index lists, per trajectory, the files each agent opened with the editor's `view`. Every one
of those that is a repository file must be in catm's mined set, and whenever the index says the
agent viewed a gold file, catm must have mined it.
"""

from __future__ import annotations

import json
import os
import posixpath
from pathlib import Path

import pytest
from catm._mining import mine_trajectory
from catm._paths import classify
from catm._readers import read_trajectories
from catm._records import Skip, Trajectory

DATA = Path(
    os.environ.get(
        "CATM_SHARED_DATA", Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
    )
)
SETS = [
    ("openhands_glm46_lite/sessions.jsonl.gz", "openhands_glm46_lite/index.jsonl"),
    ("openhands_claude35_verified/trajs.jsonl.gz", "openhands_claude35_verified/index.jsonl"),
]

pytestmark = pytest.mark.skipif(
    not (DATA / SETS[0][0]).exists(),
    reason=f"shared data not found at {DATA} (set CATM_SHARED_DATA)",
)


@pytest.mark.parametrize(("trajectories", "index"), SETS, ids=["glm46_lite", "claude35_verified"])
def test_stage1_agrees_with_the_index(trajectories: str, index: str) -> None:
    rows = [json.loads(line) for line in (DATA / index).read_text().splitlines() if line.strip()]
    records = list(read_trajectories(DATA / trajectories))
    assert not [r for r in records if isinstance(r, Skip)]
    assert len(records) == len(rows)
    gold_viewed = gold_mined = 0
    for record, row in zip(records, rows, strict=True):
        assert isinstance(record, Trajectory)
        assert record.instance_id == row["instance_id"]
        mining = mine_trajectory(record)
        mined = mining.files
        for path in map(posixpath.normpath, row["files_viewed"]):  # the index keeps "./a.py"
            # The index keeps directories, docs, out-of-repo paths, views that returned "path
            # does not exist" and files the agent created itself; stage 1 drops those.
            if path.startswith("/") or classify(path) is not None:
                continue
            assert path in mined or path in mining.excluded, (
                f"{row['instance_id']}: index viewed {path}, catm did not mine it"
            )
        if row["gold_viewed"]:
            gold_viewed += 1
            gold_mined += bool(set(row["gold_files"]) & set(mined))
    assert gold_viewed > 0
    assert gold_mined == gold_viewed


def test_shell_reads_add_to_editor_views() -> None:
    """The Claude run reads mostly through the shell: catm must find more than the index."""
    trajectories, index = SETS[1]
    rows = [json.loads(line) for line in (DATA / index).read_text().splitlines() if line.strip()]
    viewed = sum(
        1
        for row in rows
        for p in row["files_viewed"]
        if not p.startswith("/") and classify(p) is None
    )
    mined = sum(
        len(mine_trajectory(r).files)
        for r in read_trajectories(DATA / trajectories)
        if isinstance(r, Trajectory)
    )
    assert mined > viewed
