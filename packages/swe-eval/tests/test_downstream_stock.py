"""The stock agent: the baseline's prompt is the runner's own template unchanged, the treatment's
is the same template with the injected section after the issue, and nothing else differs.

Rendered the way OpenHands/benchmarks renders `--prompt-path` (Jinja, the dataset row as
`instance`), from a derived skeleton of the runner's template that ships with the tests, and
from the runner's real template when `BENCHMARKS` names its checkout (else that test skips)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from codegrep_gate import render
from swe_eval.cli import app
from swe_eval.downstream.plan import STOCK_TEMPLATE, Plan
from swe_eval.downstream.stock import (
    StockTemplateError,
    stock_template,
    treatment_template,
)
from typer.testing import CliRunner

runner = CliRunner()
SKELETON = Path(__file__).parent / "data" / "runner_default_template.skeleton.j2"
FILES = ["django/db/models/fields/related.py", "django/db/backends/sqlite3/schema.py"]


def _render(template: str, row: dict[str, Any], *, trim_blocks: bool = False) -> str:
    jinja2 = pytest.importorskip("jinja2", reason="jinja2 (a workspace dev dependency) renders")
    env = jinja2.Environment(trim_blocks=trim_blocks)
    return env.from_string(template).render(instance=row)


def _row(files: list[str]) -> dict[str, Any]:
    return {
        "instance_id": "django__django-15278",
        "repo": "django/django",
        "repo_path": "/workspace/django/",
        "base_commit": "0ab58c1209",
        "problem_statement": "Adding nullable OneToOneField crashes on SQLite.",
        "candidate_files": files,
        "injection": render(files, "openhands"),
    }


def _only_difference(stock: str, trim_blocks: bool) -> None:
    baseline = _render(stock_template(stock), _row([]), trim_blocks=trim_blocks)
    assert baseline == _render(stock, _row([]), trim_blocks=trim_blocks)  # unchanged
    treated = _render(treatment_template(stock), _row(FILES), trim_blocks=trim_blocks)
    # a row with nothing injected renders as the stock template
    assert _render(treatment_template(stock), _row([]), trim_blocks=trim_blocks) == baseline
    section = render(FILES, "openhands") + "\n"  # the section, then one blank line
    assert treated.count(section) == 1
    at = treated.index(section)
    assert treated[:at] + treated[at + len(section) :] == baseline  # nothing else differs
    # and it sits right after the issue
    issue_end = treated.index("</issue_description>\n\n") + len("</issue_description>\n\n")
    assert at == issue_end


@pytest.mark.parametrize("trim_blocks", [False, True])
def test_the_only_difference_is_the_section_on_the_derived_template(trim_blocks: bool) -> None:
    _only_difference(SKELETON.read_text(encoding="utf-8"), trim_blocks)


def test_the_only_difference_is_the_section_on_the_runners_template() -> None:
    checkout = os.environ.get("BENCHMARKS")
    real = Path(checkout) / STOCK_TEMPLATE if checkout else None
    if real is None or not real.is_file():
        pytest.skip("set BENCHMARKS to an OpenHands/benchmarks checkout to diff its template")
    text = real.read_text(encoding="utf-8")
    for trim in (False, True):
        _only_difference(text, trim)
    # the derived skeleton keeps the real template's expressions, in order
    expressions = re.compile(r"{{.*?}}")
    assert expressions.findall(SKELETON.read_text()) == expressions.findall(text)


def test_a_template_without_one_issue_block_is_refused() -> None:
    with pytest.raises(StockTemplateError, match="0 `</issue_description>`"):
        treatment_template("no issue here {{ instance.problem_statement }}\n")
    twice = "</issue_description>\n\n</issue_description>\n"
    with pytest.raises(StockTemplateError, match="2 `</issue_description>`"):
        stock_template(twice)
    with pytest.raises(StockTemplateError, match="not the runner's stock template"):
        treatment_template("</issue_description>\n\n{{ instance.candidate_files }}\n")


def test_the_template_command(tmp_path: Path) -> None:
    base, treat = tmp_path / "base.j2", tmp_path / "treat.j2"
    ok = runner.invoke(app, ["downstream", "template", str(SKELETON), "-o", str(base)])
    assert ok.exit_code == 0, ok.output
    assert base.read_text() == SKELETON.read_text()
    ok = runner.invoke(app, ["downstream", "template", str(SKELETON), "--inject", "-o", str(treat)])
    assert ok.exit_code == 0, ok.output
    assert treat.read_text() == treatment_template(SKELETON.read_text())
    bad = tmp_path / "bad.j2"
    bad.write_text("no issue block\n")
    res = runner.invoke(app, ["downstream", "template", str(bad), "-o", str(tmp_path / "x")])
    assert res.exit_code == 2
    assert "no single place for the injected section" in res.stderr


def test_plan_uses_the_stock_template_by_default(tmp_path: Path) -> None:
    inst = tmp_path / "inst.jsonl"
    inst.write_text(
        "".join(
            json.dumps({"instance_id": f"o__r-{n}", "repo": "o/r", "base_commit": "abc",
                        "problem_statement": f"issue {n}"}) + "\n"
            for n in range(3)
        )
    )  # fmt: skip
    pred = tmp_path / "pred.jsonl"
    pred.write_text(
        "".join(json.dumps({"instance_id": f"o__r-{n}", "files": ["a.py"]}) + "\n"
                for n in range(3))
    )  # fmt: skip
    out = tmp_path / "out"
    res = runner.invoke(
        app,
        ["downstream", "plan", "-i", str(inst), "--model", "m", "-o", str(out),
         "--config", f"lex={pred}"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    plan = Plan.model_validate_json((out / "plan.json").read_text())
    steps = {c.name: {x.step: x for x in c.commands} for c in plan.configs}
    base, lex = steps["baseline"]["template"], steps["lex"]["template"]
    assert base.argv[3:5] == [f"$BENCHMARKS/{STOCK_TEMPLATE}", "--unchanged"]
    assert lex.argv[4] == "--inject"
    assert f'"$BENCHMARKS"/{STOCK_TEMPLATE}' in base.shell  # the shell expands the checkout
    assert not (out / "baseline" / "prompt.j2").exists()  # written when the run starts
    infer = steps["lex"]["infer"].argv
    assert infer[infer.index("--prompt-path") + 1] == str(out / "lex" / "prompt.j2")
    pins = {p.name: p.value for p in plan.pins}
    assert pins["prompt"].startswith(f"the runner's {STOCK_TEMPLATE}")
