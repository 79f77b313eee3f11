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
from typing import Any

import pytest
from codegrep.cli import app
from codegrep_gate import shipped_calibration
from codegrep_gate._files import shipped_calibrations
from codegrep_records import gold_from_instances, load_instances, load_predictions
from typer.testing import CliRunner

# apps/injector/tests -> the repository root is parents[3]; shared/ sits beside the checkout.
ROOT = Path(__file__).resolve().parents[3]
_DEFAULT_SHARED = ROOT / ".." / "shared" / "data"
DATA = Path(os.environ.get("CODEGREP_SHARED_DATA", _DEFAULT_SHARED))
HERE = Path("apps/injector/calibration")  # relative to ROOT, as make-lexical.sh runs
SHIPPED = ROOT / "packages/codegrep-gate/src/codegrep_gate/calibrations/lexical.json"
# the out-of-fold answers of the localizer's cross-validation, which the calibration measures
CV_PREDICTIONS = Path(
    "packages/codegrep-model/benchmarks/results/localizer_cv/cv.predictions.jsonl"
)
# the localizer pool's files, in the pool's order (the first holding an id gives it)
POOL = (
    "swebench/lite.jsonl",
    "swebench/verified_dev.jsonl",
    "codescout_train/swe_gym_validation.parquet",
    "codescout_train/SWE-Gym-code-search_validation.parquet",
    "locbench/locbench_gt.jsonl",
)
HELD_OUT = ("astropy/astropy", "sphinx-doc/sphinx")
OOF_NAME = (
    "out-of-fold answers of the localizer's cross-validation "
    "(331 instances, 16 Python repositories)"
)
DEV_NAME = "SWE-bench Verified dev slice, astropy and sphinx (never fitted on)"

needs_data = pytest.mark.skipif(
    not all((DATA / f).is_file() for f in POOL),
    reason=f"shared data not found at {DATA.resolve()} (set CODEGREP_SHARED_DATA): "
    + ", ".join(POOL),
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
    # the data: the pool's five files in its order, the committed out-of-fold answers
    d = cal.data
    assert d.name == OOF_NAME
    files = [d.instances_file, *(f.path for f in d.more_instances_files)]
    assert [f.split("data/", 1)[-1] for f in files] == list(POOL)
    assert d.predictions_file == str(CV_PREDICTIONS)
    assert d.predictions_sha256 == _sha256(ROOT / CV_PREDICTIONS)
    assert (d.instances, d.scored, d.missing, d.empty, d.no_gold, d.unknown) == (
        331,
        331,
        0,
        1,
        0,
        0,
    )
    assert d.selection == (
        "104 repeated ids read from the first file holding them; "
        "only the 331 instances with a prediction (of 1099)"
    )
    # 16 repositories, none of them a test repository of the localizer
    assert len(d.repos) == 16
    assert not set(HELD_OUT) & set(d.repos)
    assert sum(d.repos.values()) == 331
    # the figures the READMEs quote
    assert cal.precision.fmt(3) == "0.487 [0.432, 0.538]"
    assert cal.by_score is not None
    shown = [(b.describe("score"), b.hits, b.files) for b in cal.by_score.bins]
    assert shown[-2:] == [("score 0.59-0.87", 55, 91), ("score 0.87-1.00", 39, 46)]
    # the held-out check: the shipped ranker's own answers on repositories it never saw
    assert len(cal.checks) == 1
    chk = cal.checks[0]
    assert chk.data.name == DEV_NAME
    assert chk.data.instances_file.endswith("swebench/verified_dev.jsonl")
    assert chk.data.predictions_sha256 == _sha256(ROOT / chk.data.predictions_file)
    assert (chk.data.instances, chk.data.scored, chk.data.unknown) == (25, 25, 0)
    assert chk.data.repos == {"astropy/astropy": 22, "sphinx-doc/sphinx": 3}
    assert chk.precision.fmt(3) == "0.680 [0.480, 0.840]"
    # above the calibrated interval: on these two repositories it claims less than they get
    assert not chk.consistent
    assert chk.precision.point > cal.precision.high
    assert chk.note.startswith("held-out precision 0.680 lies above")


def _pool_instances() -> list[Any]:
    chosen: dict[str, Any] = {}
    for f in POOL:
        for inst in load_instances(DATA / f).records:
            chosen.setdefault(inst.instance_id, inst)
    return list(chosen.values())


@needs_data
def test_its_precision_is_what_swe_eval_measures() -> None:
    swe_eval = pytest.importorskip("swe_eval", reason="needs swe-eval (the workspace)")
    cal = shipped_calibration("lexical")
    rows = load_predictions(ROOT / CV_PREDICTIONS)
    asked = {r.instance_id for r in rows.records}
    chosen = [i for i in _pool_instances() if i.instance_id in asked]
    dev_rows = load_predictions(ROOT / HERE / "lexical-verified_dev.predictions.jsonl")
    dev = load_instances(DATA / "swebench" / "verified_dev.jsonl").records
    for what, instances, predictions, measured, n in (
        ("out of fold", chosen, rows, cal, 331),
        ("held out", [i for i in dev if i.repo in HELD_OUT], dev_rows, cal.checks[0], 25),
    ):
        gold = gold_from_instances(instances)
        ids = set(gold)
        summary = swe_eval.summarize(
            swe_eval.evaluate(gold, [r for r in predictions.records if r.instance_id in ids]),
            n_resamples=0,
            by_repo=False,
        )
        assert (summary.n, summary.missing, summary.unknown) == (n, 0, 0), what
        assert measured.precision.point == pytest.approx(
            summary.metrics["precision"].value, abs=1e-12
        ), what


@needs_data
def test_codegrep_calibrate_writes_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """make-lexical.sh's last command, with -o in tmp_path: the same file but `created_with`."""
    monkeypatch.chdir(ROOT)  # the file names it records are relative to the repository root
    data = Path(os.path.relpath(DATA.resolve(), ROOT))
    out = tmp_path / "lexical.json"
    res = CliRunner().invoke(
        app,
        [
            "calibrate",
            *(arg for f in POOL for arg in ("-i", str(data / f))),
            "-p", str(CV_PREDICTIONS), "--predicted-only", "--context",
            "--name", OOF_NAME,
            "--check-instances", str(data / "swebench" / "verified_dev.jsonl"),
            "--check-predictions", str(HERE / "lexical-verified_dev.predictions.jsonl"),
            *(arg for repo in HELD_OUT for arg in ("--check-repo", repo)),
            "--check-name", DEV_NAME,
            "-o", str(out),
        ],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "precision 0.487 [0.432, 0.538]" in res.stdout
    assert "NOT consistent: held-out precision 0.680 lies above" in res.stdout
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
                for f in d["more_instances_files"]:
                    f.pop("path")
    assert ours == shipped
