"""`codegrep-model batch` end to end: a local repository as the clone source, resumable."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from codegrep_model.cli import app
from typer.testing import CliRunner


def test_batch_cli_runs_resumes_and_dry_runs(tmp_path: Path, small_repo: Path) -> None:
    sha = subprocess.run(
        ["git", "-C", str(small_repo), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    rows = [
        {
            "instance_id": f"shop-{i}",
            "repo": "acme/shop",
            "base_commit": sha,
            "problem_statement": "`Cart.total_price` ignores discounts",
        }
        for i in range(3)
    ]
    instances = tmp_path / "instances.jsonl"
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{broken\n")
    out = tmp_path / "out" / "pred.jsonl"
    base = [
        "batch", str(instances), "-o", str(out), "--cache", str(tmp_path / "cache"),
        "--source", str(small_repo.parent / "{name}"), "-j", "2",
    ]  # fmt: skip
    runner = CliRunner()
    res = runner.invoke(app, [*base, "--limit", "2"])
    assert res.exit_code == 0, res.output
    assert "skipped bad row" in res.output  # the broken line is reported, not fatal
    preds = [json.loads(x) for x in out.read_text().splitlines()]
    assert [p["files"] for p in preds] == [["shop/cart.py"]] * 2
    # LexicalPolicy's per-file scores reach the predictions, aligned with the files
    assert all(len(p["scores"]) == 1 and 0 < p["scores"][0] < 1 for p in preds)
    rollouts = (tmp_path / "out" / "pred.rollouts.jsonl").read_text().splitlines()
    assert len(rollouts) == 2
    bad_source = [*base[:-4], "--source", "/no/template", "-j", "2"]
    res = runner.invoke(app, bad_source)
    assert res.exit_code == 2  # said in one line, not a traceback
    assert "names no repository" in res.output
    res = runner.invoke(app, [*base, "--limit", "-1", "--dry-run"])
    assert res.exit_code == 2  # rejected, not read as "all but the last"
    res = runner.invoke(app, [*base, "--dry-run"])
    assert "2 already done, 1 to run" in res.output
    assert len(out.read_text().splitlines()) == 2
    res = runner.invoke(app, base)
    assert res.exit_code == 0, res.output
    assert sorted(json.loads(x)["instance_id"] for x in out.read_text().splitlines()) == [
        "shop-0",
        "shop-1",
        "shop-2",
    ]


def test_batch_cli_says_what_is_wrong_with_its_files(tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["batch", "-o", str(tmp_path / "pred.jsonl"), "--cache", str(tmp_path / "c")]
    res = runner.invoke(app, [*base, str(tmp_path / "missing.jsonl"), "--dry-run"])
    assert res.exit_code == 2  # one line, not a traceback
    assert "missing.jsonl: no such file" in " ".join(res.output.split())
    res = runner.invoke(app, [*base, str(tmp_path), "--dry-run"])
    assert res.exit_code == 2
    assert "is a directory" in " ".join(res.output.split())
    rows = tmp_path / "i.jsonl"
    rows.write_text('{"instance_id": "a", "repo": "o/n", "base_commit": "c"}\n')
    gz = ["batch", str(rows), "-o", str(tmp_path / "pred.jsonl.gz"), "--cache", str(tmp_path)]
    res = runner.invoke(app, [*gz, "--dry-run"])
    assert res.exit_code == 2
    assert "batch appends to it; name a .jsonl file" in " ".join(res.output.split())


def test_train_ranker_cli_runs_rollouts_keeps_examples_and_fits(
    tmp_path: Path, small_repo: Path
) -> None:
    sha = subprocess.run(
        ["git", "-C", str(small_repo), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    patch = "diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-x\n+y\n"
    rows = [
        {
            "instance_id": f"shop-{i}",
            "repo": "acme/shop",
            "base_commit": sha,
            "problem_statement": "`Cart.total_price` ignores discounts",
            "patch": patch.format(f="shop/cart.py"),
        }
        for i in range(3)
    ]
    instances = tmp_path / "instances.jsonl"
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows))
    examples, out = tmp_path / "ex.jsonl", tmp_path / "ranker.json"
    base = [
        "train-ranker", "-i", str(instances), "--examples", str(examples), "-o", str(out),
        "--cache", str(tmp_path / "cache"), "--source", str(small_repo.parent / "{name}"),
    ]  # fmt: skip
    runner = CliRunner()
    res = runner.invoke(app, base)
    assert res.exit_code == 0, res.output
    assert "3 to run" in res.output
    assert "fitting on 3 instances" in res.output
    kept = [json.loads(x) for x in examples.read_text().splitlines()]
    assert [k["gold"] for k in kept] == [["shop/cart.py"]] * 3
    assert all(any(c["path"] == "shop/cart.py" for c in k["candidates"]) for k in kept)
    # the rollouts read the tree's history: the features the shipped ranker was trained with
    assert all("churn" in c["features"] for k in kept for c in k["candidates"])
    from codegrep_model.policies.lexical.ranker import Ranker

    ranker = Ranker.load(out)
    assert ranker.meta["trained_on"][0]["instances"] == 3
    # again: nothing to run, the same examples, the same fit
    res = runner.invoke(app, base)
    assert res.exit_code == 0, res.output
    assert "3 already in" in res.output
    assert "0 to run" in res.output
    assert Ranker.load(out).digest == ranker.digest
    # the expected-F0.5 selection from the same examples
    sel = tmp_path / "ranker-ef.json"
    res = runner.invoke(app, [*base[:-6], "-o", str(sel), "--selection", "expected_f"])
    assert res.exit_code == 0, res.output
    assert Ranker.load(sel).to_dict()["cut"]["kind"] == "expected_f"
    # collect only: the rollouts, no fit, no ranker file, no figures
    more = tmp_path / "more.jsonl"
    only = [*base[:3], "--examples", str(more), *base[7:], "--collect-only"]
    res = runner.invoke(app, only)
    assert res.exit_code == 0, res.output
    assert "nothing fitted" in res.output
    assert "out-of-fold" not in res.output
    assert len(more.read_text().splitlines()) == 3
    for flags, why in (
        ([*only, "-o", str(tmp_path / "x.json")], "--collect-only fits nothing"),
        (only[:-1], "-o: the ranker file to write"),
        ([*base, "--selection", "top1"], "--selection top1: one of threshold, expected_f"),
    ):
        res = runner.invoke(app, flags)
        assert res.exit_code == 2
        assert why in res.output
    # bad input is exit 2 with one line
    same = [*base[:-6], "-o", str(examples)]
    res = runner.invoke(app, [*same, "--cache", str(tmp_path / "cache")])
    assert res.exit_code == 2
    assert "same file" in res.output
    examples.write_text("{not json\n")
    res = runner.invoke(app, base)
    assert res.exit_code == 2
    assert "ex.jsonl:1: not an examples row" in res.output
