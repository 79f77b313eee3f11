"""Stages 1-3 end to end on small hand-made trajectories, with the combination rules."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import pytest
from catm import JudgeRequest, JudgeResult, MiningConfig, NoJudge, mine_labels
from catm._mining import mine_trajectory
from catm._records import Skip, Step, Trajectory, TrajectoryCall, TrajectoryFormat
from catm._weights import median_beta, saturation_weight
from codegrep_records import GoldRule, Instance, Verdict

WS = "/workspace/o__p__1"
WORDS = "word "  # one token each under the regex tokenizer


def view(path: str, observation: str = "Here's the result of running `cat -n`") -> TrajectoryCall:
    return TrajectoryCall("editor", "view", path, observation)


def shell(command: str) -> TrajectoryCall:
    return TrajectoryCall("shell", command)


def trajectory(tid: str, steps: list[Step], instance: str = "o__p-1") -> Trajectory:
    return Trajectory(instance, tid, TrajectoryFormat.MESSAGES, tuple(steps), workspace_root=WS)


def test_stage1_reads_filters_and_post_reasoning() -> None:
    t = trajectory(
        "t1",
        [
            Step("start", (view(WS), view(f"{WS}/pkg"), view(f"{WS}/pkg/a.py"))),
            Step(WORDS * 10, (shell("cd pkg && grep -n foo b.py"), view(f"{WS}/README.md"))),
            Step(
                WORDS * 4, (shell(f"cat > {WS}/repro.py << 'EOF'\nx\nEOF"), view(f"{WS}/repro.py"))
            ),
            Step(WORDS * 3, (view(f"{WS}/pkg/a.py"), shell("cat /usr/lib/x.py"))),
            Step(WORDS * 2, (view(f"{WS}/nope.py", "ERROR: Invalid `path` parameter"),)),
            Step("", (view(f"{WS}/pkg/a.py"), view(f"{WS}/pkg/a.py"))),
        ],
    )
    mined = mine_trajectory(t)
    assert dict(mined.dropped) == {
        "repository_root": 1,
        "extensionless": 1,
        "documentation": 1,
        "created_by_agent": 1,
        "outside_repository": 1,
        "read_failed": 1,
    }
    assert sorted(mined.files) == ["pkg/a.py", "pkg/b.py"]
    a = mined.files["pkg/a.py"]
    # Read in turns 0, 3 and twice in 5: followed by turns 1 (10 tokens), 4 (2) and nothing.
    assert (a.n_reads, a.reasoning_tokens, a.steps) == (4, 12, [1, 4])
    b = mined.files["pkg/b.py"]  # relative to the `cd pkg` of the same line
    assert (b.n_reads, b.reasoning_tokens) == (1, 4)
    assert mined.evidence_text("pkg/a.py").count("word") == 12


class ScriptedJudge:
    """A judge with fixed answers per path, behind the same interface as OpenAIJudge."""

    name = "scripted"

    def __init__(self, answers: dict[str, Verdict]) -> None:
        self.answers = answers
        self.seen: list[JudgeRequest] = []

    def judge(
        self,
        requests: Sequence[JudgeRequest],
        on_result: Callable[[JudgeResult], None] | None = None,
    ) -> list[JudgeResult]:
        self.seen.extend(requests)
        return [JudgeResult(self.answers.get(r.path, Verdict.RELEVANT), "x") for r in requests]


def _corpus() -> list[Trajectory | Skip]:
    # Instance 1, two trajectories: a.py read in both (l = 30 and 6 -> max 30), c.py in one.
    t1 = trajectory(
        "t1",
        [Step("", (view(f"{WS}/a.py"),)), Step(WORDS * 30, (view(f"{WS}/c.py"),)), Step(WORDS * 1)],
    )
    t2 = trajectory("t2", [Step("", (view(f"{WS}/a.py"), view(f"{WS}/x.py"))), Step(WORDS * 6)])
    # Instance 2: the patch file and a long-reasoned auxiliary file, plus one the judge rejects.
    t3 = trajectory(
        "t3",
        [
            Step("", (view(f"{WS}/fix.py"),)),
            Step(WORDS * 20, (view(f"{WS}/aux.py"),)),
            Step(WORDS * 50, (view(f"{WS}/junk.py"),)),
            Step(WORDS * 400),
        ],
        instance="o__p-2",
    )
    orphan = trajectory("t4", [Step("", (view(f"{WS}/a.py"),)), Step("x")], instance="o__p-9")
    return [t1, t2, Skip("f.jsonl", 3, "invalid JSON: x"), t3, orphan, t1]


INSTANCES = {
    "o__p-1": Instance(
        instance_id="o__p-1",
        repo="o/p",
        patch="diff --git a/a.py b/a.py\n",
        problem_statement="issue one",
    ),
    # No patch: the row's `gold_files` are the patch files, taken as given.
    "o__p-2": Instance(
        instance_id="o__p-2",
        repo="o/p",
        gold_files=("fix.py", "never_read.py"),
        problem_statement="issue two",
    ),
}


def test_labels_weights_and_gold() -> None:
    judge = ScriptedJudge({"junk.py": Verdict.NOT_RELEVANT})
    result = mine_labels(_corpus(), INSTANCES, judge)
    stats = result.stats
    assert stats.records_read == 6
    assert stats.skip_reasons == {
        "invalid JSON": 1,
        "no patch files for instance": 1,
        "duplicate trajectory_id": 1,
    }
    assert (stats.trajectories, stats.instances, stats.instances_without_patch) == (3, 2, 1)
    assert stats.mined_files == 6  # a, c, x | fix, aux, junk
    assert stats.judged_not_relevant == 1
    # β is the median over the 5 kept pairs: l = a 30, c 1, x 6, fix 20, aux 50 -> 20.
    assert stats.beta == 20.0 == median_beta([30, 1, 6, 20, 50])
    raw = {n: saturation_weight(n, 20.0) for n in (30, 1, 6, 20, 50)}
    mean = sum(raw.values()) / 5
    assert stats.mean_weight_raw == pytest.approx(mean)
    one, two = result.labels
    by_path = {m.path: m for m in one.mined}
    assert by_path["a.py"].reasoning_tokens == 30  # max over trajectories, not the sum
    assert by_path["a.py"].n_reads == 2
    assert by_path["a.py"].trajectories == ["t1", "t2"]
    assert by_path["a.py"].weight == pytest.approx(raw[30] / mean, abs=1e-6)
    # c.py: w = (1 - 2^(-1/20)) / mean ≈ 0.04 < 0.15, so it stays out of gold.
    c_weight = by_path["c.py"].weight
    assert c_weight is not None
    assert c_weight < 0.15
    assert one.gold == ["a.py", "x.py"]
    assert two.gold == ["aux.py", "fix.py", "never_read.py"]
    junk = next(m for m in two.mined if m.path == "junk.py")
    assert (junk.verdict, junk.weight, junk.in_gold) == (Verdict.NOT_RELEVANT, None, False)
    assert stats.mined_not_in_patch == 2  # x.py and aux.py
    assert stats.trajectories_contributing == 3
    # The judge saw the post-reasoning of the trajectory with the largest l(f).
    seen = {r.path: r for r in judge.seen}
    assert seen["a.py"].reasoning.count("word") == 30
    assert seen["aux.py"].issue == "issue two"


def test_judge_none_keeps_everything_and_says_so() -> None:
    result = mine_labels(_corpus(), INSTANCES, NoJudge())
    assert result.stats.judge == "none"
    assert result.stats.unjudged == result.stats.mined_files == 6
    assert all(m.verdict is Verdict.UNJUDGED for label in result.labels for m in label.mined)
    assert {label.judge for label in result.labels} == {"none"}


def test_limit_stops_early() -> None:
    result = mine_labels(_corpus(), INSTANCES, NoJudge(), config=MiningConfig(limit=2))
    assert result.stats.records_read == 2
    assert result.stats.trajectories == 2
    assert all(m.reasoning == "" for label in result.labels for m in label.mined)


def test_keep_reasoning_writes_the_evidence() -> None:
    result = mine_labels(_corpus(), INSTANCES, NoJudge(), config=MiningConfig(keep_reasoning=True))
    aux = next(m for label in result.labels for m in label.mined if m.path == "aux.py")
    assert aux.reasoning.split() == ["word"] * 50


def test_eval_output_records_carry_their_own_patch() -> None:
    """An OpenHands eval `output.jsonl` row has `instance.patch`: no instance file is needed."""
    from catm._readers import parse_record

    row = {
        "instance_id": "o__p-3",
        "instance": {"repo": "o/p", "version": "1", "patch": "diff --git a/m.py b/m.py\n"},
        "history": [
            {
                "id": 1,
                "source": "agent",
                "action": "read",
                "args": {"path": "/workspace/o__p__1/m.py", "thought": "open"},
            },
            {"id": 2, "source": "agent", "action": "message", "args": {"content": "m.py it is"}},
        ],
    }
    record = parse_record(row)
    assert isinstance(record, Trajectory)
    assert record.workspace_root == "/workspace/o__p__1"
    [label] = mine_labels([record], {}, NoJudge()).labels
    assert label.patch_files == ["m.py"]
    assert [m.path for m in label.mined] == ["m.py"]


# A rename (pkg/old.py -> pkg/new.py), an added file and a test file: only the renamed file's
# old path is at the base commit and is code, so it is the one patch file.
RENAME_ADD_TEST = (
    "diff --git a/pkg/old.py b/pkg/new.py\n"
    "similarity index 90%\n"
    "rename from pkg/old.py\n"
    "rename to pkg/new.py\n"
    "diff --git a/pkg/added.py b/pkg/added.py\n"
    "new file mode 100644\n"
    "--- /dev/null\n"
    "+++ b/pkg/added.py\n"
    "@@ -0,0 +1 @@\n"
    "+x = 1\n"
    "diff --git a/tests/test_pkg.py b/tests/test_pkg.py\n"
    "--- a/tests/test_pkg.py\n"
    "+++ b/tests/test_pkg.py\n"
    "@@ -1 +1 @@\n"
    "-a\n"
    "+b\n"
)


def _reads_old_and_new() -> Trajectory:
    return trajectory(
        "t1",
        [
            Step("", (view(f"{WS}/pkg/old.py"), view(f"{WS}/pkg/other.py"))),
            Step(WORDS * 10),
        ],
    )


def test_patch_files_follow_the_shared_gold_rule() -> None:
    instance = Instance(instance_id="o__p-1", repo="o/p", patch=RENAME_ADD_TEST)
    [label] = mine_labels([_reads_old_and_new()], {"o__p-1": instance}, NoJudge()).labels
    assert label.patch_files == ["pkg/old.py"]
    old = next(m for m in label.mined if m.path == "pkg/old.py")
    assert old.in_patch  # the file the agent read at the base commit is the patch's file
    assert not {"pkg/new.py", "pkg/added.py", "tests/test_pkg.py"} & set(label.gold)


def test_the_trajectory_records_own_patch_follows_the_same_rule() -> None:
    record = replace(_reads_old_and_new(), patch=RENAME_ADD_TEST, repo="o/p")
    [label] = mine_labels([record], {}, NoJudge()).labels
    assert label.patch_files == ["pkg/old.py"]
    assert next(m for m in label.mined if m.path == "pkg/old.py").in_patch


def test_another_gold_rule_is_a_config_choice() -> None:
    instance = Instance(instance_id="o__p-1", repo="o/p", patch=RENAME_ADD_TEST)
    catm_01 = GoldRule(include_added=True, exclude_tests=False, renames="new")
    config = MiningConfig(gold_rule=catm_01)
    result = mine_labels([_reads_old_and_new()], {"o__p-1": instance}, NoJudge(), config=config)
    [label] = result.labels
    assert label.patch_files == ["pkg/new.py", "pkg/added.py", "tests/test_pkg.py"]
    assert result.stats.gold_rule == catm_01


def test_an_instance_without_patch_files_under_the_rule_gives_no_label() -> None:
    only_added = "diff --git a/pkg/added.py b/pkg/added.py\nnew file mode 100644\n"
    instance = Instance(instance_id="o__p-1", repo="o/p", patch=only_added)
    result = mine_labels([_reads_old_and_new()], {"o__p-1": instance}, NoJudge())
    assert result.labels == []
    assert result.stats.instances_without_patch == 1
    assert result.stats.skip_reasons == {"no patch files for instance": 1}
