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
# the committed GRPO run of SmolLM2-135M (packages/codegrep-model/benchmarks/README.md): its
# plugin's rollout log and ms-swift's own completions table, as the trainer wrote them
REAL_RUN = ROOT / "packages" / "codegrep-model" / "benchmarks" / "results" / "learn_cpu" / "grpo-s0"
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


def _open(browser: Any, path: Path, fragment: str = "") -> Iterator[Opened]:
    """The report in a fresh page; `fragment` (`#...`) is a link to one rollout or case."""
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
    page.goto(opened.url + fragment)
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


def _monitor_html(
    run: Path, out: Path, html: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    """`codegrep-train monitor RUN --no-plot -o OUT --html HTML EXTRA...`, as a user runs it."""
    return _run("train_launcher.cli", "monitor", str(run), "--no-plot", "-o", str(out),
                "--html", str(html), *extra)  # fmt: skip


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
    done = _monitor_html(run, tmp_path / "m", html)
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
    done = _monitor_html(MONITOR_FIXTURES / "v1_kl_drift", tmp_path / "m", html)
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
        page.fill("#q", "django__django-11")
        ids = [rows.nth(i).get_attribute("data-id") for i in range(rows.count())]
        assert ids
        assert all(i.startswith("django__django-11") for i in ids)
        page.fill("#q", "astropy__astropy-12907")
        rows.first.click()
        detail = page.inner_text("#case")
        hit = page.locator("#case ol").first.locator("li.hit").inner_text()
        assert hit.split() == ["astropy/modeling/separable.py", "(0.875)", "✓", "gold"]
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


def _fragment(page: Any) -> str:
    return "#" + page.url.split("#", 1)[1] if "#" in page.url else ""


def test_training_curves_alarms_state_and_links(browser: Any, tmp_path: Path) -> None:
    """Curves carry axes with values and an honest range; an alarm's band takes a click; the
    step box and the panes agree with the list; a link opens one rollout."""
    run = _training_run(tmp_path)
    html = tmp_path / "run.html"
    done = _monitor_html(run, tmp_path / "m", html)
    assert done.returncode in (0, 1), done.stderr
    data = json.loads(html.read_text().split('id="report-data">', 1)[1].split("</script>", 1)[0])
    constant = [
        k for k, c in data["curves"].items() if len({y for y in c["y"] if y is not None}) == 1
    ]
    varying = [
        k for k, c in data["curves"].items() if len({y for y in c["y"] if y is not None}) > 2
    ]
    assert constant
    assert varying
    for opened in _open(browser, html):
        page = opened.page
        flat = page.locator(f"svg[data-curve='{constant[0]}']")
        assert flat.locator("text[data-tick='y']").count() == 1  # one value, not "0 … 1"
        assert "constant" in (flat.text_content() or "")
        curve = page.locator(f"svg[data-curve='{varying[0]}']")
        ticks = [float(t) for t in curve.locator("text[data-tick='y']").all_text_contents()]
        ys = [y for y in data["curves"][varying[0]]["y"] if y is not None]
        assert ticks[0] == pytest.approx(min(ys), abs=1e-3)
        assert ticks[-1] == pytest.approx(max(ys), abs=1e-3)
        xs = curve.locator("text[data-tick='x']").all_text_contents()
        assert xs == [
            str(data["curves"][varying[0]]["x"][0]),
            str(data["curves"][varying[0]]["x"][-1]),
        ]
        curve.hover()  # the value under the pointer
        assert "step " in (curve.locator("text[data-readout]").text_content() or "")
        # the step box is cleared when a filter shows every step again
        page.fill("#step", "10")
        page.dispatch_event("#step", "change")
        page.select_option("#filter", "zv")
        assert page.input_value("#step") == ""
        # a step without groups closes the group and rollout that were open
        page.select_option("#filter", "all")
        page.fill("#step", "10")
        page.dispatch_event("#step", "change")
        assert "step 10" in page.inner_text("#group")
        page.fill("#step", "9999")
        page.dispatch_event("#step", "change")
        assert "no group at step 9999" in page.inner_text("#group")
        assert page.inner_text("#rollout").strip() == ""
        # a rollout's link opens it again
        page.fill("#step", "10")
        page.dispatch_event("#step", "change")
        page.locator("#group tr[data-rollout='2']").click()
        link = _fragment(page)
        assert "step=10" in link
        assert "rollout=2" in link
        opened.check_clean()
    for opened in _open(browser, html, link):
        assert "rollout 2 of step 10" in opened.page.inner_text("#rollout")
        assert "step 10" in opened.page.inner_text("#group")
        opened.check_clean()


def test_an_alarm_band_on_a_curve_takes_the_click(browser: Any, tmp_path: Path) -> None:
    html = tmp_path / "kl.html"
    done = _monitor_html(MONITOR_FIXTURES / "v1_kl_drift", tmp_path / "m", html)
    assert done.returncode == 1, done.stderr
    for opened in _open(browser, html):
        page = opened.page
        band = page.locator("rect.alarm-mark").last
        box = band.bounding_box()
        assert box["width"] >= 10  # not a 1 px line
        step = band.get_attribute("data-alarm-step")
        band.click()
        assert page.locator("#groups tbody tr").first.get_attribute("data-step") == step
        assert page.input_value("#step") == step
        opened.check_clean()


def test_retrieval_summary_missing_apart_search_and_side_by_side(
    browser: Any, shared_data: Path, tmp_path: Path
) -> None:
    full = CALIBRATION / "lexical-lite.predictions.jsonl"
    part = tmp_path / "part.jsonl"
    lines = full.read_text().splitlines(keepends=True)
    part.write_text("".join(lines[: len(lines) // 2]))  # half the answers of the full file
    html = tmp_path / "retrieval.html"
    argv = [
        "swe_eval.cli",
        "retrieval",
        "-i",
        _rel(shared_data / "swebench" / "lite.jsonl"),
        "-p",
        _rel(full),
        "-p",
        str(part),
        "--name",
        "lexical",
        "--name",
        "partial",
        "--resamples",
        "200",
    ]
    done = _run(*argv, "--html", str(html))
    assert done.returncode == 0, done.stderr
    table = _run(*argv, "-f", "json")
    assert table.returncode == 0, table.stderr
    printed = {s["name"]: s for s in json.loads(table.stdout)["systems"]}
    for opened in _open(browser, html):
        page = opened.page
        rows = page.locator("#summary tr.sum")
        assert rows.count() == 2
        part_row = page.locator("#summary tr.sum[data-sys='partial']").inner_text()
        f = printed["partial"]["metrics"]["fbeta"]
        assert f"{f['value']:.3f} [{f['low']:.3f}, {f['high']:.3f}]" in part_row
        cells = page.locator("#summary tr.sum[data-sys='partial'] td").all_inner_texts()
        missing = printed["partial"]["missing"]
        assert missing > printed["lexical"]["missing"]
        assert cells[1] == "300"
        assert cells[5] == str(missing)
        # no prediction is its own view, never mixed into the wrong answers
        page.select_option("#show", "missing")
        both = missing + printed["lexical"]["missing"]
        assert f"({both} rows)" in page.inner_text("#cases")
        kinds = page.locator("#cases tbody tr").evaluate_all("rs => rs.map(r => r.dataset.kind)")
        assert set(kinds) == {"missing"}
        page.select_option("#show", "wrong")
        kinds = page.locator("#cases tbody tr").evaluate_all("rs => rs.map(r => r.dataset.kind)")
        assert kinds
        assert set(kinds) == {"answered"}
        page.select_option("#show", "")
        assert page.locator("#cases tbody tr").first.get_attribute("data-kind") == "answered"
        # the search ignores case
        page.fill("#q", "ASTROPY__ASTROPY-12907")
        assert page.locator("#cases tbody tr").count() == 2
        page.locator("#cases tbody tr[data-sys='lexical']").click()
        cols = page.locator("#compare .col")
        assert cols.count() == 2  # both systems' answers for the instance, side by side
        assert "separable.py" in cols.nth(0).inner_text() + cols.nth(1).inner_text()
        link = _fragment(page)
        assert "id=astropy__astropy-12907" in link
        _shoot(opened, "retrieval.png")
        opened.check_clean()
    for opened in _open(browser, html, link):
        assert "astropy__astropy-12907 · lexical" in opened.page.inner_text("#case")
        opened.check_clean()


def test_downstream_failure_search_discordant_and_side_by_side(
    browser: Any, shared_data: Path, tmp_path: Path
) -> None:
    acr = shared_data / "peers" / "autocoderover_lite"
    html = tmp_path / "downstream.html"
    runs = [f"--run=acr{i}=report={_rel(acr / f'acr-run-{i}_report.json')}" for i in (1, 2, 3)]
    argv = [
        "swe_eval.cli",
        "downstream",
        "report",
        *runs,
        "-i",
        _rel(shared_data / "swebench" / "lite.jsonl"),
        "--cases",
        "--resamples",
        "200",
    ]
    done = _run(*argv, "--html", str(html))
    assert done.returncode == 0, done.stderr
    data = json.loads(html.read_text().split('id="report-data">', 1)[1].split("</script>", 1)[0])
    cases = data["report"]["cases"]
    by_id: dict[str, set[bool]] = {}
    for c in cases:
        by_id.setdefault(c["instance_id"], set()).add(bool(c["resolved"]))
    discordant = {i for i, seen in by_id.items() if seen == {True, False}}
    assert discordant
    for opened in _open(browser, html):
        page = opened.page
        page.select_option("#outcome", "no")
        failures = page.locator("#cases tbody tr td:nth-child(4)").all_inner_texts()
        assert failures
        assert all(f not in ("", "–") for f in failures)
        page.select_option("#outcome", "discordant")
        n = sum(c["instance_id"] in discordant for c in cases)
        assert f"({n} rows)" in page.inner_text("#cases")
        first = sorted(discordant)[0]
        page.fill("#q", first.upper())
        rows = page.locator("#cases tbody tr")
        assert rows.count() == 3
        rows.first.click()
        compare = page.locator("#compare table")
        assert compare.locator("th").all_inner_texts()[1:] == ["acr1", "acr2", "acr3"]
        resolved = compare.locator("tr", has_text="resolved").first.inner_text()
        assert "yes" in resolved
        assert "no" in resolved
        link = _fragment(page)
        _shoot(opened, "downstream.png")
        opened.check_clean()
    for opened in _open(browser, html, link):
        assert first in opened.page.inner_text("#case")
        opened.check_clean()


def test_a_real_ms_swift_run_shows_each_rollouts_tool_calls_with_results(
    browser: Any, tmp_path: Path
) -> None:
    from codegrep_report import write_training_report

    files = [REAL_RUN / "codegrep_rollouts.jsonl", REAL_RUN / "completions.jsonl"]
    summary = write_training_report(
        tmp_path / "real.html", curves={}, alarms=[], record_files=files
    )
    assert summary.bad_rows == ()
    logged = [json.loads(x) for x in files[0].read_text().splitlines() if x.strip()]
    with_call = next(r for r in logged if r["num_tool_calls"] > 0 and r["instance_id"])
    step, index = with_call["step"], with_call["index"]
    for opened in _open(
        browser, summary.path, f"#step={step}&group={with_call['instance_id']}&rollout={index}"
    ):
        page = opened.page
        pane = page.inner_text("#rollout")
        assert f"rollout {index} of step {step}" in pane
        assert "no turns logged" not in pane
        calls = page.locator("#rollout .call")
        assert calls.count() == with_call["num_tool_calls"]
        assert calls.first.locator("pre.result").count() == 1  # the result beside its call
        assert page.locator("#rollout [data-field='st']").get_attribute("class") == "dim"
        assert f"stopped: {with_call['stop_cause']}" in pane
        assert f"rollout tokens {with_call['rollout_tokens']}" in pane
        table = json.loads(files[1].read_text().splitlines()[step - 1])
        prompt = table["prompt"][index]
        issue = prompt.split("<issue>\n", 1)[1].split("\n</issue>", 1)[0]
        assert issue.splitlines()[0] in pane  # the issue, read from the prompt
        steps = {r["step"] for r in logged if r["instance_id"] == with_call["instance_id"]}
        across = page.locator("#across tbody tr")
        assert across.count() == (len(steps) if len(steps) > 1 else 0)
        _shoot(opened, "training-real-run.png")
        opened.check_clean()


def test_two_training_runs_side_by_side(browser: Any, tmp_path: Path) -> None:
    run = _training_run(tmp_path)
    html = tmp_path / "both.html"
    other = str(MONITOR_FIXTURES / "v1_kl_drift")
    done = _monitor_html(run, tmp_path / "m", html, "--compare", other)
    assert done.returncode in (0, 1), done.stderr
    for opened in _open(browser, html):
        page = opened.page
        reward = page.locator("svg[data-curve='reward']")
        assert reward.locator("path[data-run='this']").count() == 1
        assert reward.locator("path[data-run='other']").count() == 1
        assert "dashed: GRPO run" in page.inner_text("#legend")
        rows = page.locator("#sidebyside tbody tr")
        assert rows.count() > 0
        both = [r for r in rows.all_inner_texts() if r.count("step ") >= 2]
        assert both  # a group with rewards from both runs
        opened.check_clean()
    alone = _run("train_launcher.cli", "monitor", str(run), "--no-plot", "-o", str(tmp_path / "n"),
                 "--compare", str(MONITOR_FIXTURES / "v1_kl_drift"))  # fmt: skip
    assert alone.returncode == 2
    assert "--compare draws a second run in the HTML report" in alone.stderr


def test_keys_from_the_data_never_meet_a_prototype(browser: Any, tmp_path: Path) -> None:
    """A system, instance or path named `constructor` or `__proto__` is data: no gold hit, no
    crash, counted like any other."""
    from codegrep_report import RetrievalCase, write_retrieval_report

    cases = [
        RetrievalCase(system=name, instance_id=name, repo="o/r", issue="i", files=(name, "a.py"),
                      scores=None, gold=("a.py",), fbeta=0.5, precision=0.5, recall=1.0)
        for name in ("constructor", "__proto__", "toString")
    ]  # fmt: skip
    html = write_retrieval_report(tmp_path / "proto.html", cases)
    for opened in _open(browser, html):
        page = opened.page
        assert page.locator("#summary tr.sum").count() == 3
        page.locator("#cases tbody tr[data-sys='constructor']").click()
        hits = page.locator("#case ol").first.locator("li.hit").all_inner_texts()
        assert [h.split() for h in hits] == [["a.py", "✓", "gold"]]  # `constructor` is not gold
        opened.check_clean()
