"""The records: what each accepts, what it refuses, and the coercions real files need."""

from __future__ import annotations

import copy
import datetime as dt
import gzip
import json
import sys
from pathlib import Path

import pytest
from codegrep_records import (
    CATM_WEIGHT_THRESHOLD,
    GoldLabel,
    GoldRule,
    Instance,
    LabelRecord,
    MinedFile,
    Prediction,
    Verdict,
)
from pydantic import ValidationError

PATCH = "diff --git a/p/m.py b/p/m.py\n--- a/p/m.py\n+++ b/p/m.py\n@@ -1 +1 @@\n-a\n+b\n"


def _instance(**fields: object) -> Instance:
    return Instance.model_validate({"instance_id": "o__r-1", "repo": "o/r", **fields})


# Instance ---------------------------------------------------------------------------------------


def test_swe_bench_json_in_a_string_test_lists() -> None:
    inst = _instance(FAIL_TO_PASS='["tests/a.py::t1", "tests/a.py::t2"]', PASS_TO_PASS="[]")
    assert inst.FAIL_TO_PASS == ("tests/a.py::t1", "tests/a.py::t2")
    assert inst.PASS_TO_PASS == ()
    assert _instance(FAIL_TO_PASS=["x"]).FAIL_TO_PASS == ("x",)
    assert _instance(FAIL_TO_PASS=None, PASS_TO_PASS="").FAIL_TO_PASS == ()


@pytest.mark.parametrize("bad", ["tests/a.py::t1", '{"a": 1}', "[1, 2]", "[" * 5000])
def test_a_test_list_string_that_is_not_a_json_list_of_names_is_refused(bad: str) -> None:
    with pytest.raises(ValidationError, match="FAIL_TO_PASS"):
        _instance(FAIL_TO_PASS=bad)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("2.0", "2.0"),
        ("0.10", "0.10"),
        (2.0, "2.0"),
        (0.1, "0.1"),
        (3, "3"),
        (None, None),
    ],
)
def test_version_coercion(given: object, expected: str | None) -> None:
    assert _instance(version=given).version == expected


@pytest.mark.parametrize("bad", [True, float("nan"), float("inf"), [1]])
def test_a_version_that_is_not_text_or_a_number_is_refused(bad: object) -> None:
    with pytest.raises(ValidationError, match="version"):
        _instance(version=bad)


def test_created_at_from_a_parquet_timestamp_is_iso_text() -> None:
    when = dt.datetime(2022, 3, 3, 15, 14, 54)
    assert _instance(created_at=when).created_at == "2022-03-03T15:14:54"
    assert _instance(created_at="2022-03-03T15:14:54Z").created_at == "2022-03-03T15:14:54Z"


@pytest.mark.parametrize("repo", ["x", "", "o/", "/r", "o/r/x", "o /r", "o/.."])
def test_repo_must_be_owner_slash_name(repo: str) -> None:
    with pytest.raises(ValidationError, match="repo"):
        _instance(repo=repo)


def test_empty_instance_id_is_refused() -> None:
    with pytest.raises(ValidationError, match="instance_id"):
        Instance.model_validate({"instance_id": "", "repo": "o/r"})


def test_null_text_fields_read_as_empty_and_extra_fields_are_ignored() -> None:
    inst = _instance(problem_statement=None, patch=None, test_patch=None, expected_spans={})
    assert (inst.problem_statement, inst.patch, inst.test_patch) == ("", "", "")
    assert not hasattr(inst, "expected_spans")


def test_all_swe_bench_fields() -> None:
    row = {
        "instance_id": "astropy__astropy-12907",
        "repo": "astropy/astropy",
        "base_commit": "d16bfe05",
        "problem_statement": "Modeling's separability_matrix ...",
        "hints_text": "",
        "created_at": "2022-03-03T15:14:54Z",
        "version": "4.3",
        "environment_setup_commit": "298ccb47",
        "patch": PATCH,
        "test_patch": "diff --git a/t.py b/t.py\n",
        "FAIL_TO_PASS": '["t.py::a"]',
        "PASS_TO_PASS": '["t.py::b"]',
    }
    inst = Instance.model_validate(row)
    assert inst.version == "4.3"
    assert inst.hints_text == ""
    assert inst.environment_setup_commit == "298ccb47"
    assert inst.gold_files_for() == ("p/m.py",)
    assert inst.schema_version == 1


MULTI = {
    "org": "BurntSushi",
    "repo": "ripgrep",
    "number": 1294,
    "title": "Add --glob-case-insensitive",
    "body": "The flag forces -g to be case insensitive.",
    "base": {"label": "BurntSushi:master", "ref": "master", "sha": "392682d3"},
    "fix_patch": PATCH,
    "test_patch": "",
}


def test_multi_swe_bench_rows_map_as_catm_maps_them() -> None:
    inst = Instance.model_validate(MULTI)
    assert inst.instance_id == "BurntSushi__ripgrep-1294"
    assert inst.repo == "BurntSushi/ripgrep"
    assert inst.patch == PATCH
    assert inst.problem_statement == MULTI["body"]
    assert inst.base_commit == "392682d3"
    assert inst.gold_files_for() == ("p/m.py",)


def test_a_multi_swe_bench_row_keeps_its_own_id_and_fields() -> None:
    row = {
        **MULTI,
        "instance_id": "given-id",
        "patch": "diff --git a/q.py b/q.py\n",
        "problem_statement": "the issue",
        "base_commit": "abc",
    }
    inst = Instance.model_validate(row)
    assert (inst.instance_id, inst.repo) == ("given-id", "BurntSushi/ripgrep")
    assert (inst.patch, inst.problem_statement, inst.base_commit) == (
        row["patch"],
        "the issue",
        "abc",
    )


def test_the_multi_swe_bench_sample_reads_whole(shared_data: Path) -> None:
    from codegrep_records import load_instances

    path = shared_data / "multi_swe_bench_partial" / "multi_swe_bench_partial.slim.jsonl.gz"
    if not path.is_file():
        pytest.skip("no Multi-SWE-bench sample in the shared data")
    loaded = load_instances(path)
    assert loaded.problems == ()
    assert len(loaded.records) > 400
    with gzip.open(path, "rt") as fh:
        first = json.loads(fh.readline())
    inst = loaded.records[0]
    assert inst.repo == f"{first['org']}/{first['repo']}"
    assert inst.base_commit == first["base"]["sha"]
    # The published gold_files are every file of the patch's `diff --git` headers, a rename
    # under its new path: the rule's three options reproduce that convention exactly.
    published = GoldRule(include_added=True, exclude_tests=False, renames="new")
    assert all(set(i.gold_files_for(published)) == set(i.gold_files) for i in loaded.records)


def test_gold_files_stand_in_for_a_missing_patch() -> None:
    inst = _instance(gold_files=["./a.py", "/testbed/a.py", "b\\c.py", ""])
    assert inst.gold_files_for() == ("a.py", "b/c.py")
    assert _instance(gold_files='["x.py"]').gold_files_for() == ("x.py",)
    # A patch, when there is one, decides, even if the rule leaves nothing of it.
    tests_only = "diff --git a/tests/t.py b/tests/t.py\n--- a/tests/t.py\n+++ b/tests/t.py\n"
    assert _instance(patch=tests_only, gold_files=["a.py"]).gold_files_for() == ()


def test_records_are_frozen() -> None:
    inst = _instance()
    with pytest.raises(ValidationError):
        inst.repo = "x/y"  # type: ignore[misc]


@pytest.mark.skipif(sys.version_info < (3, 13), reason="copy.replace is Python 3.13+")
def test_copy_replace_works_on_a_frozen_record() -> None:
    inst = _instance()
    assert copy.replace(inst, repo="x/y").repo == "x/y"  # type: ignore[attr-defined]


# schema_version ---------------------------------------------------------------------------------


_LABEL = {"patch_files": [], "mined": [], "gold": [], "trajectories": [], "judge": "none"}


@pytest.mark.parametrize(
    ("model", "row"),
    [
        (Instance, {"instance_id": "a", "repo": "o/r"}),
        (Prediction, {"instance_id": "a", "files": []}),
        (GoldLabel, {"instance_id": "a", "files": [], "source": "patch"}),
        (LabelRecord, {"instance_id": "a", **_LABEL}),
    ],
    ids=["Instance", "Prediction", "GoldLabel", "LabelRecord"],
)
def test_a_newer_schema_version_is_refused_with_a_clear_message(
    model: type[Instance | Prediction | GoldLabel | LabelRecord], row: dict[str, object]
) -> None:
    assert model.model_validate({**row, "schema_version": 1}).schema_version == 1
    with pytest.raises(ValidationError) as info:
        model.model_validate({**row, "schema_version": 2})
    assert "schema_version 2 is newer than this reader knows (1)" in str(info.value)
    with pytest.raises(ValidationError, match="schema_version"):
        model.model_validate({**row, "schema_version": 0})


def test_every_record_knows_version_one() -> None:
    for model in (Instance, Prediction, GoldLabel, LabelRecord):
        assert model.SCHEMA_VERSION == 1


# Prediction -------------------------------------------------------------------------------------


def test_scores_must_align_with_files() -> None:
    Prediction(instance_id="a", files=("x.py", "y.py"), scores=(2.0, 1.0))
    Prediction(instance_id="a", files=("x.py",))
    with pytest.raises(ValidationError, match=r"scores has 1 value\(s\) for 2 file\(s\)"):
        Prediction(instance_id="a", files=("x.py", "y.py"), scores=(1.0,))


@pytest.mark.parametrize(
    "fields",
    [
        {"scores": [float("nan")]},
        {"turns": -1},
        {"turns": float("inf")},
        {"tool_calls": -1},
        {"tokens": -1},
        {"latency_s": -0.5},
        {"files": "x.py"},
    ],
)
def test_prediction_refuses_impossible_values(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Prediction.model_validate({"instance_id": "a", "files": ["x.py"], **fields})


def test_prediction_carries_the_union_of_both_old_shapes() -> None:
    # swe-eval's optional costs and codegrep-model's rollout fields, fallback included.
    pred = Prediction.model_validate(
        {
            "instance_id": "a",
            "files": ["x.py"],
            "line_ranges": {"x.py": [[3, 9]]},
            "turns": 4,
            "tool_calls": 11,
            "tokens": 5120,
            "latency_s": 2.5,
            "retriever": "codegrep-lexical",
            "fallback": True,
            "answer_text": "ignored",
        }
    )
    assert pred.line_ranges == {"x.py": ((3, 9),)}
    assert (pred.turns, pred.tool_calls, pred.tokens) == (4, 11, 5120)
    assert pred.fallback is True
    assert Prediction(instance_id="a").fallback is False


# Labels -----------------------------------------------------------------------------------------


def test_gold_label_writes_its_files_sorted() -> None:
    label = GoldLabel(instance_id="a", files=frozenset({"b.py", "a.py", "c.py"}), source="patch")
    assert json.loads(label.model_dump_json())["files"] == ["a.py", "b.py", "c.py"]


def test_catm_label_record_round_trips() -> None:
    mined = MinedFile(
        path="pkg/util.py",
        reasoning_tokens=831,
        n_reads=16,
        verdict=Verdict.UNJUDGED,
        weight_raw=1.0,
        weight=1.878,
        in_patch=False,
        in_gold=True,
        trajectories=["s1"],
    )
    record = LabelRecord(
        instance_id="o__r-1",
        repo="o/r",
        patch_files=["pkg/core.py"],
        mined=[mined],
        gold=["pkg/core.py", "pkg/util.py"],
        trajectories=["s1"],
        judge="none",
    )
    back = LabelRecord.model_validate_json(record.model_dump_json())
    assert back == record
    assert back.mined[0].verdict is Verdict.UNJUDGED
    assert CATM_WEIGHT_THRESHOLD == 0.15


def test_a_mined_weight_must_be_finite() -> None:
    with pytest.raises(ValidationError):
        MinedFile(
            path="x.py",
            reasoning_tokens=1,
            n_reads=1,
            verdict=Verdict.RELEVANT,
            weight=float("nan"),
            in_patch=False,
            in_gold=False,
            trajectories=[],
        )
