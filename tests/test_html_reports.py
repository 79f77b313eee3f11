"""The three HTML reports, written by the commands that own the data and opened in a real
headless browser, checked as a person would use them.

Chromium comes from the system's packages (`chromium`; `.ci/run` installs it) and is driven by
playwright with `executable_path`: no browser is ever downloaded. Without either the browser
tests skip, saying which is missing. Every request the page makes is recorded: only the report
file itself may be asked for, and anything else is aborted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
MONITOR_FIXTURES = ROOT / "apps" / "train-launcher" / "tests" / "fixtures" / "monitor"
CALIBRATION = ROOT / "apps" / "injector" / "calibration"
SHARED = Path(os.environ.get("CODEGREP_SHARED_DATA", ROOT.parent / "shared" / "data")).resolve()


def _rel(path: Path) -> str:
    """`path` as the commands are given it, relative to the checkout (no machine path shows
    in a report or its screenshot)."""
    return os.path.relpath(path, ROOT)


HOSTILE = '</script><img src=x onerror="window.__pwned=1"><!--'
SCREENSHOTS = os.environ.get("CODEGREP_REPORT_SCREENSHOTS")  # a folder: README pictures


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else None


@dataclass
class Opened:
    page: Any
    url: str
    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)

    def check_clean(self) -> None:
        assert self.console_errors == [], self.console_errors
        assert self.requests == [self.url], f"requests beyond the file: {self.requests}"
        assert self.page.evaluate("window.__pwned") is None, "a data string ran as script"
        assert self.page.locator("img").count() == 0, "a data string became markup"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = _chromium()
    if executable is None:
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (the workspace dev group has it)")
    # as root, Chromium refuses to start with its sandbox
    args = ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=executable, args=args)
        yield b
        b.close()


def _open(browser: Any, path: Path) -> Iterator[Opened]:
    context = browser.new_context(viewport={"width": 1100, "height": 720})
    page = context.new_page()
    opened = Opened(page=page, url=path.resolve().as_uri())

    def route(r: Any) -> None:
        if r.request.url == opened.url:
            r.continue_()
        else:
            r.abort()

    context.route("**/*", route)
    page.on("request", lambda req: opened.requests.append(req.url))
    page.on(
        "console",
        lambda m: opened.console_errors.append(m.text) if m.type in ("error", "warning") else None,
    )
    page.on("pageerror", lambda exc: opened.console_errors.append(f"uncaught: {exc}"))
    page.goto(opened.url)
    page.wait_for_selector("body[data-ready='1']", timeout=30_000)
    try:
        yield opened
    finally:
        context.close()


def _shoot(opened: Opened, name: str, selector: str | None = None) -> None:
    if SCREENSHOTS:
        where = opened.page.locator(selector) if selector else opened.page
        where.screenshot(path=str(Path(SCREENSHOTS) / name))


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys; from {argv[0]} import main; sys.argv[0] = 'x'; main()",
            *argv[1:],
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


def _training_run(tmp: Path) -> Path:
    """The monitor's healthy fixture, with a completions table for step 10 (tool calls, a
    hostile tool result) and step 20's rewards all equal (a zero-variance group)."""
    run = tmp / "run"
    shutil.copytree(MONITOR_FIXTURES / "healthy", run)
    v0 = run / "v0-20261120-091500"
    log = v0 / "codegrep_rollouts.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    for row in rows:
        if row["step"] == 20:
            row["reward"] = 0.0
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def completion(i: int) -> list[dict[str, Any]]:
        grep = {"name": "grep", "arguments": json.dumps({"pattern": f"def handler_{i}"})}
        return [
            {"role": "assistant", "content": "", "tool_calls": [{"function": grep}]},
            {"role": "tool", "content": f"src/pkg/module.py:12: def handler_{i}(): {HOSTILE}"},
            {
                "role": "assistant",
                "content": '<tool_call>{"name": "read", "arguments": {"path": "src/pkg/module.py"}}'
                "</tool_call>",
            },
            {"role": "tool", "content": "1: import os"},
            {"role": "assistant", "content": '{"files": ["src/pkg/module.py"]}'},
        ]

    table = {
        "step": ["10"] * 4,
        "prompt": ["issue"] * 4,
        "completion": [completion(i) for i in range(4)],
        "CodeGrepV3ORM": [0.74, 0.36, 0.41, 0.16],
        "advantages": [0.2, 0.5, -0.7, 1.9],
        "num_turns": [2, 3, 3, 3],
        "gold_files": [["src/pkg/module.py", HOSTILE]] * 4,
    }
    (v0 / "completions.jsonl").write_text(json.dumps(table) + "\n")
    return run


def test_training_report_from_the_monitor(browser: Any, tmp_path: Path) -> None:
    run = _training_run(tmp_path)
    html = tmp_path / "out" / "run.html"
    done = _run(
        "train_launcher.cli",
        "monitor",
        str(run),
        "--no-plot",
        "-o",
        str(tmp_path / "m"),
        "--html",
        str(html),
    )
    assert done.returncode in (0, 1), done.stderr
    assert html.is_file(), done.stdout + done.stderr
    for opened in _open(browser, html):
        page = opened.page
        assert page.locator("svg[data-curve='reward']").count() == 1
        # a chosen step and group: step 10, its rollout 2, with the tool calls it made
        page.fill("#step", "10")
        page.dispatch_event("#step", "change")
        page.locator("#groups tr[data-step='10']").first.click()
        page.locator("#group tr[data-rollout='2']").click()
        pane = page.inner_text("#rollout")
        assert "rollout 2 of step 10" in pane
        assert 'grep({"pattern": "def handler_2"})' in pane
        assert "read(" in pane
        assert "1: import os" in pane
        assert HOSTILE in pane  # the tool result and the gold path, shown as text
        assert "turn 2" in pane
        _shoot(opened, "training.png", ".panes")
        # the filter narrows the list to the zero-variance group
        page.fill("#step", "")
        page.dispatch_event("#step", "change")
        all_rows = page.locator("#groups tbody tr").count()
        page.select_option("#filter", "zv")
        rows = page.locator("#groups tbody tr")
        assert 0 < rows.count() < all_rows
        assert {rows.nth(i).get_attribute("data-step") for i in range(rows.count())} == {"20"}
        # an alarm-free run says so; sorting by lowest reward puts the zero group first
        page.select_option("#filter", "all")
        page.select_option("#sort", "low")
        assert page.locator("#groups tbody tr").first.get_attribute("data-step") == "20"
        # longest first: the group holding the rollout of most turns, then most tool calls
        logged = [
            json.loads(line)
            for log in sorted(run.glob("*/codegrep_rollouts.jsonl"))
            for line in log.read_text().splitlines()
            if line.strip()
        ]
        longest = max((r["num_turns"], r["num_tool_calls"]) for r in logged)
        steps = {str(r["step"]) for r in logged if (r["num_turns"], r["num_tool_calls"]) == longest}
        page.select_option("#sort", "long")
        assert page.locator("#groups tbody tr").first.get_attribute("data-step") in steps
        opened.check_clean()


def test_training_report_points_at_the_alarm_steps(browser: Any, tmp_path: Path) -> None:
    html = tmp_path / "kl.html"
    done = _run(
        "train_launcher.cli",
        "monitor",
        str(MONITOR_FIXTURES / "v1_kl_drift"),
        "--no-plot",
        "-o",
        str(tmp_path / "m"),
        "--html",
        str(html),
    )
    assert done.returncode == 1, done.stderr  # the alarm fired
    for opened in _open(browser, html):
        page = opened.page
        alarms = page.locator("#alarms .alarm")
        assert alarms.count() == 2
        step = alarms.nth(1).get_attribute("data-step")
        alarms.nth(1).click()
        assert page.locator("#groups tbody tr").first.get_attribute("data-step") == step
        assert f"step {step}" in page.inner_text("#group")
        opened.check_clean()


@pytest.fixture(scope="module")
def shared_data() -> Path:
    if not (SHARED / "swebench" / "lite.jsonl").is_file():
        pytest.skip(f"shared data not found at {SHARED} (set CODEGREP_SHARED_DATA)")
    return SHARED


def test_retrieval_report_from_swe_eval(browser: Any, shared_data: Path, tmp_path: Path) -> None:
    html = tmp_path / "retrieval.html"
    done = _run(
        "swe_eval.cli",
        "retrieval",
        "-i",
        _rel(shared_data / "swebench" / "lite.jsonl"),
        "-p",
        _rel(CALIBRATION / "lexical-lite.predictions.jsonl"),
        "--resamples",
        "0",
        "--html",
        str(html),
    )
    assert done.returncode == 0, done.stderr
    for opened in _open(browser, html):
        page = opened.page
        rows = page.locator("#cases tbody tr")
        assert rows.count() == 50  # one page of 300
        first = page.locator("#cases tbody tr td:nth-child(3)").first.inner_text()
        assert float(first) == 0.0  # worst first
        rows.first.click()
        assert "✓ gold" not in page.inner_text("#case")  # a miss: no answer file is gold
        _shoot(opened, "retrieval.png")
        page.fill("#q", "django__django-11")
        ids = [rows.nth(i).get_attribute("data-id") for i in range(rows.count())]
        assert ids
        assert all(i.startswith("django__django-11") for i in ids)
        page.fill("#q", "astropy__astropy-12907")
        rows.first.click()
        detail = page.inner_text("#case")
        hit = page.locator("#case ol").first.locator("li.hit").inner_text()
        assert hit.split() == ["astropy/modeling/separable.py", "(0.827)", "✓", "gold"]
        assert "separability_matrix" in detail  # the issue text
        opened.check_clean()


def test_downstream_report_from_swe_eval(browser: Any, shared_data: Path, tmp_path: Path) -> None:
    acr = shared_data / "peers" / "autocoderover_lite"
    html = tmp_path / "downstream.html"
    runs = [f"--run=acr{i}=report={_rel(acr / f'acr-run-{i}_report.json')}" for i in (1, 2, 3)]
    done = _run(
        "swe_eval.cli",
        "downstream",
        "report",
        *runs,
        "-i",
        _rel(shared_data / "swebench" / "lite.jsonl"),
        "--cases",
        "--resamples",
        "200",
        "--html",
        str(html),
    )
    assert done.returncode == 0, done.stderr
    for opened in _open(browser, html):
        page = opened.page
        table3 = page.inner_text("table")
        assert "acr1" in table3
        assert "54 / 300" in table3
        assert "[" in table3
        rows = page.locator("#cases tbody tr")
        assert rows.count() == 50
        page.select_option("#config", "acr2")
        page.select_option("#outcome", "yes")
        assert "(57 rows)" in page.inner_text("#cases")
        rows.first.click()
        assert "acr2" in page.inner_text("#case")
        _shoot(opened, "downstream.png")
        opened.check_clean()


def test_downstream_shows_an_mde_column_when_the_report_has_one(
    browser: Any, tmp_path: Path
) -> None:
    from codegrep_report import write_downstream_report

    rate = {"value": 0.2, "low": 0.15, "high": 0.25, "n": 300}
    report = {
        "denominator": 300,
        "denominator_source": "lite",
        "baseline": "base",
        "configs": [
            {"name": "base", "n": 300, "resolved": 60, "resolve_rate": rate, "mde": 0.081},
        ],
        "paired": [],
        "cases": [],
        "notes": [],
    }
    html = write_downstream_report(tmp_path / "mde.html", report)
    for opened in _open(browser, html):
        table3 = opened.page.locator("table").first
        assert table3.locator("th").nth(3).inner_text() == "MDE"
        assert table3.locator("td").nth(3).inner_text() == "0.081"
        opened.check_clean()


def test_hostile_strings_stay_text_in_every_field(browser: Any, tmp_path: Path) -> None:
    from codegrep_report import RetrievalCase, write_retrieval_report

    case = RetrievalCase(
        system=HOSTILE,
        instance_id=HOSTILE,
        repo="r\u2028x",
        issue=f"{HOSTILE}\u2029<b>bold</b>&amp;",
        files=(HOSTILE,),
        scores=(float("nan"),),
        gold=(HOSTILE,),
        fbeta=0.0,
        precision=0.0,
        recall=0.0,
        rollout=[{"role": "assistant", "content": f"<tool_call>{HOSTILE}</tool_call>"}],
    )
    html = write_retrieval_report(tmp_path / "hostile.html", [case], title=HOSTILE)
    for opened in _open(browser, html):
        page = opened.page
        assert page.title() == HOSTILE
        page.locator("#cases tbody tr").first.click()
        detail = page.inner_text("#case")
        assert detail.count(HOSTILE) >= 3
        assert "<b>bold</b>&amp;" in detail
        opened.check_clean()
