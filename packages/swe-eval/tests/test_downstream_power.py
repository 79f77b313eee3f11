"""Power of the downstream comparison: the exact McNemar power, the MDE and the repeats a target
effect needs; the sign-flip test, and the run-label test that pools repeats; the `power`
command and a report over repeats on AutoCodeRover's three identical Lite runs (shared/data)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from swe_eval.cli import app
from swe_eval.downstream import mcnemar_exact
from swe_eval.downstream.power import (
    minimum_detectable_effect,
    power_at,
    repeats_needed,
    run_label_test,
    sign_flip_test,
)
from typer.testing import CliRunner

runner = CliRunner()


def test_exact_power_agrees_with_a_simulation_of_mcnemar() -> None:
    """The exact sum against 3,000 simulated pairs of runs tested with McNemar's exact test."""
    n, f, effect = 500, 19 / 300, 0.012
    rng = np.random.default_rng(7)
    draws = 3000
    discordant = rng.binomial(n, f, size=draws)
    b_only = rng.binomial(discordant, (f + effect) / (2 * f))
    rejected = sum(
        mcnemar_exact(int(d - c), int(c)) <= 0.05 for d, c in zip(discordant, b_only, strict=True)
    )
    simulated = rejected / draws
    exact = power_at(n, f, effect)
    assert abs(exact - simulated) < 0.02, (exact, simulated)
    assert 0.13 < exact < 0.145


def test_mde_is_where_the_power_reaches_the_target() -> None:
    f = 0.09
    mde = minimum_detectable_effect(500, f)
    assert mde is not None
    assert power_at(500, f, mde) >= 0.8
    assert power_at(500, f, mde - 0.002) < 0.8
    # K >= 2: the normal formula, (z_0.975 + z_0.8) * sqrt(f / (N K))
    assert minimum_detectable_effect(500, f, k_a=4, k_b=4) == pytest.approx(
        (1.959964 + 0.841621) * math.sqrt(f / (500 * 4)), rel=1e-5
    )
    # one run per arm cannot show an effect larger than the flip rate
    assert minimum_detectable_effect(20, 0.01) is None


def test_repeats_needed_is_the_fewest() -> None:
    k = repeats_needed(500, 0.063, 0.012)
    assert k is not None
    assert k > 1
    assert power_at(500, 0.063, 0.012, k_a=k, k_b=k) >= 0.8
    assert power_at(500, 0.063, 0.012, k_a=k - 1, k_b=k - 1) < 0.8


def test_sign_flip_with_one_run_per_arm_is_mcnemar() -> None:
    for a_only, b_only in ((3, 9), (8, 11), (0, 6), (2, 2)):
        d = [-1.0] * a_only + [1.0] * b_only + [0.0] * 40
        assert sign_flip_test(d) == pytest.approx(mcnemar_exact(a_only, b_only), abs=1e-12)
    # shares of 2 and 3 runs: exact with scale 6, against a Monte Carlo of the same test
    rng = np.random.default_rng(3)
    shares = rng.integers(-6, 7, size=60) / 6 + 0.1
    shares = np.round(shares * 6) / 6
    exact = sign_flip_test(shares, scale=6)
    assert sign_flip_test(shares * 1.0001, n_resamples=40_000) == pytest.approx(exact, abs=0.01)
    assert sign_flip_test([0.0, 0.0]) == 1.0


def _by_enumeration(a: list[list[bool]], b: list[list[bool]]) -> float:
    """The run-label permutation p by listing every relabeling of every instance."""
    import itertools

    runs = np.array(a + b, dtype=float)
    k, k_b = len(runs), len(b)
    observed = abs(float(runs[len(a) :].mean(0).sum() - runs[: len(a)].mean(0).sum()))
    per_instance = []
    for col in runs.T:
        values = []
        for chosen in itertools.combinations(range(k), k_b):
            mask = np.zeros(k, bool)
            mask[list(chosen)] = True
            values.append(col[mask].mean() - col[~mask].mean())
        per_instance.append(values)
    totals = [abs(sum(c)) for c in itertools.product(*per_instance)]
    return sum(t >= observed - 1e-9 for t in totals) / len(totals)


def test_the_run_label_test_is_exact_for_unequal_repeats() -> None:
    rng = np.random.default_rng(5)
    for k_a, k_b in ((1, 1), (2, 1), (1, 2), (2, 2), (3, 1)):
        for _ in range(4):
            n = int(rng.integers(1, 5))
            a = (rng.random((k_a, n)) < 0.5).tolist()
            b = (rng.random((k_b, n)) < 0.5).tolist()
            assert run_label_test(a, b) == pytest.approx(_by_enumeration(a, b), abs=1e-12)
    # one run per arm: McNemar's exact test on the discordant pairs
    a = [[True] * 3 + [False] * 9 + [True] * 10 + [False] * 30]
    b = [[False] * 3 + [True] * 9 + [True] * 10 + [False] * 30]
    assert run_label_test(a, b) == pytest.approx(mcnemar_exact(3, 9), abs=1e-12)
    # 2 runs against 1, where the sign flip of the shares is not exact
    a2 = [[True, True, False, True], [False, True, False, False]]
    b1 = [[True, False, True, True]]
    assert run_label_test(a2, b1) == pytest.approx(_by_enumeration(a2, b1), abs=1e-12)
    with pytest.raises(ValueError, match="same instances"):
        run_label_test([[True]], [[True, False]])


def _acr(shared_data: Path) -> tuple[Path, list[str]]:
    root = shared_data / "peers" / "autocoderover_lite"
    return shared_data / "swebench" / "lite.jsonl", [
        str(root / f"acr-run-{i}_report.json") for i in (1, 2, 3)
    ]


def test_power_reproduces_the_issue_figure_from_the_acr_runs(shared_data: Path) -> None:
    """Three identical AutoCodeRover runs flip 6.3-11.7% of instances; at 500 instances one run
    per arm finds +1.2 pp with ~10-14% power."""
    lite, reports = _acr(shared_data)
    runs = [a for i, r in enumerate(reports, 1) for a in ("--run", f"r{i}=report={r}")]
    res = runner.invoke(
        app,
        ["downstream", "power", *runs, "-i", str(lite), "-n", "500", "--effect", "0.012",
         "-k", "1", "-k", "8", "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    body = json.loads(res.stdout)
    assert sorted((p["discordant"], p["n"]) for p in body["pairs"]) == [
        (19, 300),
        (28, 300),
        (35, 300),
    ]
    one = {r["source"]: r for r in body["rows"] if r["repeats"] == 1}
    low, high = one["measured, lowest pair"], one["measured, highest pair"]
    assert low["flip_rate"] == pytest.approx(19 / 300)
    assert high["flip_rate"] == pytest.approx(35 / 300)
    assert low["power_at_effect"] == pytest.approx(0.138, abs=0.002)
    assert high["power_at_effect"] == pytest.approx(0.099, abs=0.002)
    assert (low["repeats_needed"], high["repeats_needed"]) == (7, 13)
    eight = [r for r in body["rows"] if r["repeats"] == 8]
    assert all(r["mde"] < low["mde"] for r in eight)


def test_report_pools_repeats_of_the_acr_runs(shared_data: Path) -> None:
    lite, (r1, r2, r3) = _acr(shared_data)
    res = runner.invoke(
        app,
        ["downstream", "report", "--run", f"acr=report={r1}", "--run", f"acr=report={r2}",
         "--run", f"other=report={r3}", "-i", str(lite), "-f", "json", "--resamples", "500"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    body = json.loads(res.stdout)
    assert [c["name"] for c in body["configs"]] == ["acr#1", "acr#2", "other"]
    assert body["paired"] == []
    (pooled,) = body["pooled"]
    assert (pooled["a"], pooled["b"], pooled["repeats_a"], pooled["repeats_b"]) == (
        "acr",
        "other",
        2,
        1,
    )
    assert pooled["resolved_a"] == [54, 57]
    assert pooled["resolved_b"] == [57]
    assert pooled["rate_a"] == pytest.approx(111 / 600)
    assert pooled["delta"]["value"] == pytest.approx(57 / 300 - 111 / 600)
    assert pooled["flip_rate"] == pytest.approx(35 / 300)  # runs 1 and 2, within the arm
    assert pooled["mde"] == pytest.approx(
        (1.959964 + 0.841621) * math.sqrt(35 / 300 / 2 * (1 / 2 + 1) / 300), rel=1e-4
    )
    assert pooled["p_value"] > 0.5  # three identical runs: no difference
    # the rendered report states the MDE beside the difference
    md = runner.invoke(
        app,
        ["downstream", "report", "--run", f"acr=report={r1}", "--run", f"acr=report={r2}",
         "--run", f"other=report={r3}", "-i", str(lite), "-f", "markdown", "--resamples", "0"],
    )  # fmt: skip
    assert "| other vs acr | 300 | 2 · 1 | 54/57 · 57 |" in md.stdout
    assert "MDE (80%)" in md.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--flip-rate", "0.1"], "give -n N"),
        (["-n", "500"], "give --run"),
        (["--run", "a=report=x.json", "-n", "5"], "at least two runs"),
        (["--flip-rate", "0", "-n", "5"], "a flip rate of 0"),
        (["--run", "a=report=x.json", "--run", "a=report=y.json"], "given twice: a"),
    ],
)
def test_power_bad_input_exits_2(argv: list[str], message: str) -> None:
    res = runner.invoke(app, ["downstream", "power", *argv])
    assert res.exit_code == 2, res.output
    assert message in res.stderr


def test_every_difference_states_its_mde(shared_data: Path) -> None:
    """One run per arm: the MDE comes from the two runs' discordance (an upper bound on the
    flip rate), in the paired table and in the precision-benefit table."""
    lite, (r1, r2, _) = _acr(shared_data)
    argv = [
        "downstream", "report", "--run", f"acr1=report={r1}",
        "--run", f"acr2=report={r2},precision=0.5", "-i", str(lite), "--resamples", "0",
    ]  # fmt: skip
    body = json.loads(runner.invoke(app, [*argv, "-f", "json"]).stdout)
    expected = minimum_detectable_effect(300, 35 / 300)
    (paired,) = body["paired"]
    assert paired["mde"] == pytest.approx(expected)
    (benefit,) = body["precision_benefit"]
    assert benefit["mde"] == pytest.approx(expected)
    md = runner.invoke(app, [*argv, "-f", "markdown"]).stdout
    assert md.count(f"±{100 * expected:.1f} pp") == 2


def test_power_reads_a_run_list(shared_data: Path, tmp_path: Path) -> None:
    lite, reports = _acr(shared_data)
    runs = tmp_path / "runs.json"
    runs.write_text(json.dumps({
        "instances": str(lite),
        "runs": [{"name": f"r{i}", "report": r} for i, r in enumerate(reports, 1)],
    }))  # fmt: skip
    res = runner.invoke(app, ["downstream", "power", "--manifest", str(runs), "-n", "500",
                              "--effect", "0.012", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.stdout)["pairs"]) == 3


def test_power_escapes_run_names_above_its_table(tmp_path: Path) -> None:
    """Run names come from a manifest or the command line: one holding a line break and `|`s
    printed a line of its own, a forged row of the flip-rate table. Escaped as cells are, each
    pair stays on its one line."""
    ids = [f"o__r-{n}" for n in range(6)]
    inst = tmp_path / "inst.jsonl"
    inst.write_text("".join(json.dumps({"instance_id": i, "repo": "o/r"}) + "\n" for i in ids))
    reports = []
    for k, resolved in enumerate((ids[:3], ids[1:4])):
        report = tmp_path / f"r{k}.json"
        report.write_text(json.dumps({
            "resolved_ids": resolved, "unresolved_ids": [i for i in ids if i not in resolved],
            "completed_ids": ids, "error_ids": [], "empty_patch_ids": [], "schema_version": 2,
        }))  # fmt: skip
        reports.append(str(report))
    forged = "a\n| 99.0% (forged) | 500 | 1 | ±0.1 pp |\nx"
    manifest = tmp_path / "runs.json"
    manifest.write_text(json.dumps({
        "instances": str(inst),
        "runs": [{"name": forged, "report": reports[0]}, {"name": "b|c", "report": reports[1]}],
    }))  # fmt: skip
    res = runner.invoke(app, ["downstream", "power", "--manifest", str(manifest), "-n", "500"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert not any("forged" in line for line in lines if line.startswith("|"))
    pair = [line for line in lines if line.startswith("flip rate ")]
    assert pair == [
        "flip rate a\\n\\| 99.0% (forged) \\| 500 \\| 1 \\| ±0.1 pp \\|\\nx vs b\\|c: 2/6 = 33.3%"
    ]
