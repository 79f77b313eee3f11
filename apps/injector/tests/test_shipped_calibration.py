"""The calibration shipped for the lexical policy (codegrep_gate/calibrations/lexical.json):
what it says it measured, that swe-eval measures the same precision on the committed
predictions, and that `codegrep calibrate` (apps/injector/calibration/make-lexical.sh's last
command) writes it again, number for number."""

from __future__ import annotations

import hashlib
import json
import os
from importlib import metadata
from pathlib import Path

import pytest
from codegrep.cli import app
from codegrep_gate import shipped_calibration, shipped_calibrations
from typer.testing import CliRunner

# apps/injector/tests -> the repository root is parents[3]; shared/ sits beside the checkout.
ROOT = Path(__file__).resolve().parents[3]
_DEFAULT_SHARED = ROOT / ".." / "shared" / "data"
DATA = Path(os.environ.get("CODEGREP_SHARED_DATA", _DEFAULT_SHARED))
HERE = Path("apps/injector/calibration")  # relative to ROOT, as make-lexical.sh runs
SHIPPED = ROOT / "packages/codegrep-gate/src/codegrep_gate/calibrations/lexical.json"
EXCLUDED = ("django/django", "matplotlib/matplotlib", "scikit-learn/scikit-learn")
LITE_NAME = "SWE-bench Lite, fetchable repositories (118 of 140 in the ranker's training data)"
DEV_NAME = (
    "SWE-bench Verified dev slice, fetchable repositories (25 of 52 held out: astropy, sphinx)"
)

needs_data = pytest.mark.skipif(
    not (DATA / "swebench" / "lite.jsonl").is_file()
    or not (DATA / "swebench" / "verified_dev.jsonl").is_file(),
    reason=f"shared data not found at {DATA.resolve()} (set CODEGREP_SHARED_DATA): "
    "swebench/lite.jsonl and swebench/verified_dev.jsonl",
)


def _major_minor(version: str) -> tuple[str, ...]:
    return tuple(version.split(".")[:2])


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_it_loads_and_says_what_it_measured() -> None:
    assert "lexical" in shipped_calibrations()
    cal = shipped_calibration("lexical")
    assert cal.retriever.name == "lexical"
    assert cal.retriever.package == "codegrep-model"
    assert cal.retriever.version is not None
    assert _major_minor(cal.retriever.version) == _major_minor(metadata.version("codegrep-model"))
    # the data: the Lite file, the committed predictions, the three repositories left out
    d = cal.data
    assert d.name == LITE_NAME
    assert d.instances_file.endswith("swebench/lite.jsonl")
    assert d.predictions_file == str(HERE / "lexical-lite.predictions.jsonl")
    assert d.predictions_sha256 == _sha256(ROOT / d.predictions_file)
    assert (d.instances, d.scored, d.missing, d.empty, d.no_gold, d.unknown) == (
        140,
        140,
        0,
        0,
        0,
        0,
    )
    assert d.selection == "without " + ", ".join(EXCLUDED)
    assert not set(EXCLUDED) & set(d.repos)
    assert sum(d.repos.values()) == 140
    # the figures the READMEs quote
    assert cal.precision.fmt(3) == "0.557 [0.479, 0.636]"
    assert cal.by_score is not None
    # the held-out check on the Verified dev slice
    assert len(cal.checks) == 1
    chk = cal.checks[0]
    assert chk.data.name == DEV_NAME
    assert chk.data.instances_file.endswith("swebench/verified_dev.jsonl")
    assert chk.data.predictions_sha256 == _sha256(ROOT / chk.data.predictions_file)
    assert (chk.data.instances, chk.data.scored, chk.data.unknown) == (52, 52, 0)
    assert chk.precision.fmt(3) == "0.635 [0.500, 0.750]"
    # inside the calibrated interval, near its top
    assert chk.consistent
    assert cal.precision.low <= chk.precision.point <= cal.precision.high
    assert chk.note.startswith("held-out precision 0.635 lies within")


@needs_data
def test_its_precision_is_what_swe_eval_measures() -> None:
    swe_eval = pytest.importorskip("swe_eval", reason="needs swe-eval (the workspace)")
    cal = shipped_calibration("lexical")
    for split, predictions, measured, n in (
        ("lite", "lexical-lite", cal, 140),
        ("verified_dev", "lexical-verified_dev", cal.checks[0], 52),
    ):
        instances_file = DATA / "swebench" / f"{split}.jsonl"
        assert measured.data.instances_sha256 == _sha256(instances_file), split
        instances = swe_eval.load_instances(instances_file).records
        chosen = [i for i in instances if i.repo not in EXCLUDED]
        gold = swe_eval.gold_from_instances(chosen)
        rows = swe_eval.load_predictions(ROOT / HERE / f"{predictions}.predictions.jsonl")
        summary = swe_eval.summarize(
            swe_eval.evaluate(gold, rows.records), n_resamples=0, by_repo=False
        )
        assert (summary.n, summary.missing, summary.empty, summary.unknown) == (n, 0, 0, 0)
        assert measured.precision.point == pytest.approx(
            summary.metrics["precision"].value, abs=1e-12
        ), split


@needs_data
def test_codegrep_calibrate_writes_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """make-lexical.sh's last command, with -o in tmp_path: the same file but `created_with`."""
    monkeypatch.chdir(ROOT)  # the file names it records are relative to the repository root
    data = Path(os.path.relpath(DATA.resolve(), ROOT))
    skip = [arg for repo in EXCLUDED for arg in ("--exclude-repo", repo)]
    check_skip = [arg for repo in EXCLUDED for arg in ("--check-exclude-repo", repo)]
    out = tmp_path / "lexical.json"
    res = CliRunner().invoke(
        app,
        [
            "calibrate",
            "-i", str(data / "swebench" / "lite.jsonl"),
            "-p", str(HERE / "lexical-lite.predictions.jsonl"),
            *skip,
            "--name", LITE_NAME,
            "--check-instances", str(data / "swebench" / "verified_dev.jsonl"),
            "--check-predictions", str(HERE / "lexical-verified_dev.predictions.jsonl"),
            *check_skip,
            "--score-bins", "5",
            "--check-name", DEV_NAME,
            "-o", str(out),
        ],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "precision 0.557 [0.479, 0.636]" in res.stdout
    assert "consistent: held-out precision 0.635" in res.stdout
    ours = json.loads(out.read_text())
    shipped = json.loads(SHIPPED.read_text())
    for cal in (ours, shipped):
        cal.pop("created_with")
        # a patch release of codegrep-model still fits (the gate compares major.minor)
        version = cal["retriever"].pop("version")
        assert _major_minor(version) == _major_minor(metadata.version("codegrep-model"))
        # The file names are recorded relative to the root: where the data is not the plain
        # ../shared/data (another folder, or a shared/ that is a link), compare by hash alone.
        if data != Path("..", "shared", "data"):
            for d in (cal["data"], *(c["data"] for c in cal["checks"])):
                d.pop("instances_file")
    assert ours == shipped
