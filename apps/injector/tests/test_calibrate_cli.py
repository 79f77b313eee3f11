"""`codegrep calibrate` on small instance and prediction files written here, checked by hand."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import pytest
from codegrep.cli import app
from codegrep_gate import load_calibration
from typer.testing import CliRunner

runner = CliRunner()

PATCH = "diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def _patch(*files: str) -> str:
    return "".join(PATCH.format(f=f) for f in files)


# Gold is each instance's patch (the records' gold rule).
INSTANCES = [
    {"instance_id": "o__r-1", "repo": "o/r", "patch": _patch("a.py")},
    {"instance_id": "o__r-2", "repo": "o/r", "patch": _patch("b.py")},
    {"instance_id": "o__r-3", "repo": "o/r", "patch": _patch("c.py")},
    {"instance_id": "o__r-4", "repo": "o/r", "patch": _patch("d.py", "e.py")},
    {"instance_id": "o__r-5", "repo": "o/r", "patch": _patch("f.py")},  # no prediction
    {"instance_id": "p__q-1", "repo": "p/q", "patch": _patch("g.py")},  # the repo left out
]
PREDICTIONS = [
    {"instance_id": "o__r-1", "files": ["a.py", "x.py"], "scores": [0.9, 0.3]},  # 1/2
    {"instance_id": "o__r-2", "files": ["b.py"], "scores": [0.8]},  # 1/1
    {"instance_id": "o__r-3", "files": ["z.py"], "scores": [0.4]},  # 0/1
    {"instance_id": "o__r-4", "files": ["d.py", "e.py", "y.py"], "scores": [0.7, 0.6, 0.2]},  # 2/3
    {"instance_id": "p__q-1", "files": ["h.py"], "scores": [0.5]},  # 0/1, left out with p/q
]
# Without p/q: five instances, o__r-5 missing (scores 0); four answered.
PRECISION = (1 / 2 + 1 + 0 + 2 / 3 + 0) / 5  # 13/30
PRECISION_ANSWERED = (1 / 2 + 1 + 0 + 2 / 3) / 4
RECALL = (1 + 1 + 0 + 1 + 0) / 5


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _files(
    tmp_path: Path, retriever: str | list[str | None] | None = "lexical", stem: str = "data"
) -> tuple[Path, Path]:
    names = retriever if isinstance(retriever, list) else [retriever] * len(PREDICTIONS)
    rows = [
        {**row, **({"retriever": name} if name else {})}
        for row, name in zip(PREDICTIONS, names, strict=True)
    ]
    return (
        _jsonl(tmp_path / f"{stem}.instances.jsonl", list(INSTANCES)),
        _jsonl(tmp_path / f"{stem}.predictions.jsonl", rows),
    )


def _calibrate(*args: str) -> tuple[int, str, str]:
    res = runner.invoke(app, ["calibrate", "--resamples", "200", *args])
    return res.exit_code, res.stdout, res.stderr


def test_precision_equals_a_hand_computation(tmp_path: Path) -> None:
    instances, predictions = _files(tmp_path)
    out = tmp_path / "cal.json"
    code, stdout, stderr = _calibrate(
        "-i", str(instances), "-p", str(predictions), "-o", str(out),
        "--exclude-repo", "p/q", "--max-rank", "2", "--name", "toy",
    )  # fmt: skip
    assert code == 0, stderr
    assert stderr == f"wrote {out}\n"
    data = json.loads(out.read_text())
    assert data["precision"]["point"] == pytest.approx(PRECISION, abs=1e-12)
    assert data["precision_answered"]["point"] == pytest.approx(PRECISION_ANSWERED, abs=1e-12)
    assert data["recall"]["point"] == pytest.approx(RECALL, abs=1e-12)
    assert data["files_per_answer"] == pytest.approx((2 + 1 + 1 + 3) / 4)
    low, high = data["precision"]["low"], data["precision"]["high"]
    assert low <= PRECISION <= high
    # the printed line says the same numbers
    assert f"precision {PRECISION:.3f} [{low:.3f}, {high:.3f}]" in stdout
    assert f"answered only {PRECISION_ANSWERED:.3f} [" in stdout
    assert "retriever lexical (codegrep-model " in stdout
    # by rank: rank 1 a, b, z, d -> 3 of 4 gold; rank 2+ x, e, y -> 1 of 3
    bins = [(b["lo"], b["hi"], b["hits"], b["files"]) for b in data["by_rank"]["bins"]]
    assert bins == [(1.0, 1.0, 3, 4), (2.0, None, 1, 3)]
    assert "rank 1                    3 of 4    files" in stdout
    # the predictions carry scores: a score curve too, over the 7 file scores
    assert data["by_score"] is not None
    assert sum(b["files"] for b in data["by_score"]["bins"]) == 7


def test_exclude_repo_leaves_instances_and_their_predictions_out(tmp_path: Path) -> None:
    instances, predictions = _files(tmp_path)
    out = tmp_path / "cal.json"
    code, _, stderr = _calibrate(
        "-i", str(instances), "-p", str(predictions), "-o", str(out), "--exclude-repo", "p/q"
    )
    assert code == 0, stderr
    d = json.loads(out.read_text())["data"]
    # p__q-1's prediction row is not "unknown", and p__q-1 is not "missing"
    assert (d["instances"], d["scored"], d["missing"], d["empty"], d["unknown"]) == (5, 5, 1, 0, 0)
    assert d["selection"] == "without p/q"
    assert d["repos"] == {"o/r": 5}
    assert d["name"] == instances.name  # the default name
    # without the filter: six instances, p__q-1 counts (as a wrong answer)
    code, _, stderr = _calibrate("-i", str(instances), "-p", str(predictions), "-o", str(out))
    assert code == 0, stderr
    cal = json.loads(out.read_text())
    assert (cal["data"]["instances"], cal["data"]["unknown"], cal["data"]["selection"]) == (
        6,
        0,
        "",
    )
    assert cal["precision"]["point"] == pytest.approx(PRECISION * 5 / 6, abs=1e-12)
    # --repo keeps only one repository; the same accounting
    code, _, stderr = _calibrate(
        "-i", str(instances), "-p", str(predictions), "-o", str(out), "--repo", "o/r"
    )
    assert code == 0, stderr
    d = json.loads(out.read_text())["data"]
    assert (d["instances"], d["unknown"], d["selection"]) == (5, 0, "only o/r")
    # a repository no instance has is named
    code, _, stderr = _calibrate(
        "-i", str(instances), "-p", str(predictions), "-o", str(out), "--exclude-repo", "n/o"
    )
    assert code == 2
    assert "no instance of n/o" in stderr
    assert len(stderr.splitlines()) == 1


def test_check_flags_add_a_check(tmp_path: Path) -> None:
    instances, predictions = _files(tmp_path)
    held_instances, held_predictions = _files(tmp_path, stem="held")
    out = tmp_path / "cal.json"
    code, stdout, stderr = _calibrate(
        "-i", str(instances), "-p", str(predictions), "-o", str(out), "--exclude-repo", "p/q",
        "--check-instances", str(held_instances), "--check-predictions", str(held_predictions),
        "--check-name", "held out", "--check-exclude-repo", "p/q",
    )  # fmt: skip
    assert code == 0, stderr
    cal = load_calibration(out)
    assert len(cal.checks) == 1
    chk = cal.checks[0]
    assert chk.data.name == "held out"
    assert chk.data.selection == "without p/q"
    assert (chk.data.instances, chk.data.unknown) == (5, 0)
    # the same data again: the same point, inside its own interval
    assert chk.precision.point == pytest.approx(PRECISION, abs=1e-12)
    assert chk.consistent
    assert "check on held out (5 instances, without p/q): precision 0.433" in stdout
    # one without the other is refused, before any work
    code, _, stderr = _calibrate(
        "-i", str(instances), "-p", str(predictions), "-o", str(tmp_path / "x.json"),
        "--check-instances", str(held_instances),
    )  # fmt: skip
    assert code == 2
    assert "--check-instances and --check-predictions go together" in stderr
    assert not (tmp_path / "x.json").exists()
    # held-out options alone would be dropped without a word: refused
    code, _, stderr = _calibrate(
        "-i", str(instances), "-p", str(predictions), "-o", str(tmp_path / "y.json"),
        "--check-exclude-repo", "p/q",
    )  # fmt: skip
    assert code == 2
    assert "need --check-instances" in stderr
    # label gold for the calibration but patch gold for its check: refused
    labels = tmp_path / "labels.jsonl"
    labels.write_text("")
    code, _, stderr = _calibrate(
        "-i", str(instances), "-p", str(predictions), "-o", str(tmp_path / "z.json"),
        "--labels", str(labels),
        "--check-instances", str(held_instances), "--check-predictions", str(held_predictions),
    )  # fmt: skip
    assert code == 2
    assert "--labels and --check-labels go together" in stderr


def test_mixed_retrievers_in_a_file_exit_2_naming_them(tmp_path: Path) -> None:
    instances, predictions = _files(tmp_path, ["lexical", "bm25", "lexical", None, "lexical"])
    out = tmp_path / "cal.json"
    code, stdout, stderr = _calibrate("-i", str(instances), "-p", str(predictions), "-o", str(out))
    assert code == 2
    assert stderr.startswith(
        f"error: {predictions}: rows name several retrievers (bm25, lexical); "
        "say which with --retriever"
    )
    assert len(stderr.splitlines()) == 1
    assert stdout == ""
    assert not out.exists()
    # naming one is not enough while rows name the other
    code, _, stderr = _calibrate(
        "-i", str(instances), "-p", str(predictions), "-o", str(out), "--retriever", "lexical"
    )
    assert code == 2
    assert "predictions name retriever(s) 'bm25', but the calibration is for 'lexical'" in stderr
    # no row names one: --retriever is needed
    instances, predictions = _files(tmp_path, None, stem="anonymous")
    code, _, stderr = _calibrate("-i", str(instances), "-p", str(predictions), "-o", str(out))
    assert code == 2
    assert "no row names its retriever; say which with --retriever" in stderr
    code, _, stderr = _calibrate(
        "-i", str(instances), "-p", str(predictions), "-o", str(out), "--retriever", "bm25"
    )
    assert code == 0, stderr
    retriever = load_calibration(out).retriever
    assert (retriever.name, retriever.package, retriever.version) == ("bm25", None, None)


def test_retriever_mismatch_exits_2(tmp_path: Path) -> None:
    instances, predictions = _files(tmp_path)  # every row says lexical
    out = tmp_path / "cal.json"
    code, stdout, stderr = _calibrate(
        "-i", str(instances), "-p", str(predictions), "-o", str(out), "--retriever", "bm25"
    )
    assert code == 2
    assert stderr.startswith(
        "error: predictions name retriever(s) 'lexical', but the calibration is for 'bm25'"
    )
    assert len(stderr.splitlines()) == 1
    assert stdout == ""
    assert not out.exists()


def test_an_unwritable_output_exits_2_before_any_work(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    missing = tmp_path / "missing.jsonl"  # never read: -o is checked first
    for target, why in ((tmp_path, "it is a directory"), (blocker / "cal.json", "not a directory")):
        code, stdout, stderr = _calibrate("-i", str(missing), "-p", str(missing), "-o", str(target))
        assert code == 2
        assert stderr.startswith(f"error: cannot write -o {target}: ")
        assert why in stderr
        assert len(stderr.splitlines()) == 1
        assert stdout == ""


def test_a_missing_file_exits_2_in_one_line(tmp_path: Path) -> None:
    instances, predictions = _files(tmp_path)
    out = tmp_path / "cal.json"
    for args in (
        ["-i", str(tmp_path / "nope.jsonl"), "-p", str(predictions)],
        ["-i", str(instances), "-p", str(tmp_path / "nope.jsonl")],
        ["-i", str(instances), "-p", str(predictions), "--labels", str(tmp_path / "nope.jsonl")],
    ):
        code, stdout, stderr = _calibrate(*args, "-o", str(out))
        assert code == 2, args
        assert stderr.startswith("error: ")
        assert "nope.jsonl" in stderr
        assert len(stderr.splitlines()) == 1, stderr
        assert "Traceback" not in stderr
        assert stdout == ""
        assert not out.exists()
    code, _, stderr = _calibrate(
        "-i", str(instances), "-p", str(predictions), "-o", str(out),
        "--check-instances", str(instances), "--check-predictions", str(tmp_path / "nope.jsonl"),
    )  # fmt: skip
    assert code == 2
    assert "nope.jsonl" in stderr
    assert len(stderr.splitlines()) == 1
    assert not out.exists()


def test_the_written_file_loads_and_names_codegrep_models_version(tmp_path: Path) -> None:
    instances, predictions = _files(tmp_path)
    meta = predictions.with_name(predictions.name + ".meta.json")  # the batch runner's
    meta.write_text(json.dumps({"policy": "lexical", "config": {"exploration_turns": 3}}))
    out = tmp_path / "new" / "cal.json"  # a folder that can be made is made
    code, _, stderr = _calibrate(
        "-i", str(instances), "-p", str(predictions), "-o", str(out), "--seed", "7"
    )
    assert code == 0, stderr
    cal = load_calibration(out)
    assert cal.retriever.name == "lexical"
    assert cal.retriever.package == "codegrep-model"
    assert cal.retriever.version == metadata.version("codegrep-model")
    assert cal.retriever.config == {"rollout": {"exploration_turns": 3}}
    assert cal.bootstrap["resamples"] == 200
    assert cal.bootstrap["seed"] == 7
    assert cal.data.instances_file == str(instances)
    assert len(cal.data.predictions_sha256) == 64
    # the same inputs and seed give the same file
    again = tmp_path / "again.json"
    code, _, stderr = _calibrate(
        "-i", str(instances), "-p", str(predictions), "-o", str(again), "--seed", "7"
    )
    assert code == 0, stderr
    assert again.read_text() == out.read_text()


_DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("meta", "reason"),
    [
        (_DEEP.encode(), "nested too deeply"),
        (b'{"config": {"temperature": 1e999}}', "number out of range"),
        (b'{"config": {"seed": 1' + b"0" * 5000 + b"}}", "number too long"),
        (b'[{"config": {}}]', "expected a JSON object, found a list"),
        (b'{"config": "\xff"}', "not UTF-8"),
    ],
)
def test_a_hostile_meta_file_exits_2_naming_it(tmp_path: Path, meta: bytes, reason: str) -> None:
    instances, predictions = _files(tmp_path)
    path = predictions.with_name(predictions.name + ".meta.json")
    path.write_bytes(meta)
    out = tmp_path / "cal.json"
    code, _, stderr = _calibrate("-i", str(instances), "-p", str(predictions), "-o", str(out))
    assert code == 2
    (line,) = stderr.splitlines()
    assert str(path) in line
    assert reason in line
    assert not out.exists()


def test_every_policy_kind_is_checked_on_codegrep_models_version() -> None:
    """The package behind a retriever comes from codegrep-model's policy registry: the
    heuristic lexical policy is codegrep-model's code as much as the ranked one."""
    from codegrep.gating import retriever_version

    for name in ("lexical", "lexical-heuristic", "openai:m", "agent"):
        assert retriever_version(name)[0] == "codegrep-model", name
    assert retriever_version("bm25") == (None, None)


def test_several_instances_files_predicted_only_and_a_check_repo(tmp_path: Path) -> None:
    # the instances split over two files, o__r-1 repeated in the second with another patch
    first = _jsonl(tmp_path / "first.jsonl", INSTANCES[:3])
    second = _jsonl(
        tmp_path / "second.jsonl",
        [{"instance_id": "o__r-1", "repo": "o/r", "patch": _patch("zz.py")}, *INSTANCES[3:]],
    )
    _, predictions = _files(tmp_path)
    out = tmp_path / "cal.json"
    code, stdout, stderr = _calibrate(
        "-i", str(first), "-i", str(second), "-p", str(predictions), "-o", str(out),
        "--exclude-repo", "p/q", "--predicted-only",
        "--check-instances", str(second), "--check-predictions", str(predictions),
        "--check-repo", "p/q", "--check-name", "p/q alone",
    )  # fmt: skip
    assert code == 0, stderr
    cal = load_calibration(out)
    # o__r-5 has no prediction: not measured, so not missing; the others as by hand
    assert (cal.data.instances, cal.data.missing) == (4, 0)
    assert cal.precision.point == pytest.approx((1 / 2 + 1 + 0 + 2 / 3) / 4, abs=1e-12)
    assert cal.data.instances_file == str(first)
    assert [f.path for f in cal.data.more_instances_files] == [str(second)]
    assert cal.data.selection == (
        "without p/q; 1 repeated ids read from the first file holding them; "
        "only the 5 instances with a prediction (of 6)"
    )
    chk = cal.checks[0]
    assert chk.data.selection == "only p/q"
    assert (chk.data.instances, chk.precision.point) == (1, 0.0)
    assert "check on p/q alone (1 instances, only p/q): precision 0.000" in stdout
    # --check-repo without a check is refused like the other held-out options
    code, _, stderr = _calibrate(
        "-i", str(first), "-p", str(predictions), "-o", str(tmp_path / "x.json"),
        "--check-repo", "p/q",
    )  # fmt: skip
    assert code == 2
    assert "need --check-instances" in stderr
