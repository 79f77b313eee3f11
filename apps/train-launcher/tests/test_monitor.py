"""The run monitor on synthetic runs shaped like the CodeGrep paper's (healthy, v1's KL drift,
v2's length blow-up) and on a real ms-swift 4.6 log: alarms, bad lines, exit codes, --follow,
thresholds from a config, and the PNG (skipped without matplotlib)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import typer
from codegrep_records.io import parse_json
from train_launcher import monitor
from train_launcher.monitor import (
    MonitorInputError,
    MonitorThresholds,
    check,
    follow_run,
    read_run,
)
from train_launcher.monitor.cli import register
from typer.testing import CliRunner

FIXTURES = Path(__file__).parent / "fixtures" / "monitor"
HEALTHY = FIXTURES / "healthy"
V1 = FIXTURES / "v1_kl_drift"
V2 = FIXTURES / "v2_length"
SWIFT_CPU = FIXTURES / "swift_cpu_run"
KL_ALARMS = {"kl_drift", "kl_rising"}
LENGTH_ALARMS = {"length_growth", "length_near_limit", "clipped_ratio_high"}
CALLS_ALARMS = {"calls_per_turn_low", "calls_per_turn_falling"}
HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
needs_matplotlib = pytest.mark.skipif(
    not HAS_MATPLOTLIB, reason="matplotlib is not installed (the `plot` extra)"
)

runner = CliRunner()


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """The launcher's app, as far as the monitor needs it."""

    register(app)
    return app


def _names(run_dir: Path, thresholds: MonitorThresholds | None = None) -> set[str]:
    return {a.name for a in check(read_run(run_dir), thresholds).alarms}


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


# ---------------------------------------------------------------- the three synthetic runs


def test_the_fixtures_are_what_make_logs_writes(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_logs", FIXTURES / "make_logs.py")
    assert spec is not None
    assert spec.loader is not None
    make_logs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_logs)
    make_logs.main(tmp_path)
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert made, "make_logs wrote nothing"
    for rel in made:
        assert (tmp_path / rel).read_bytes() == (FIXTURES / rel).read_bytes(), rel


def test_the_healthy_run_raises_no_alarm() -> None:
    run = read_run(HEALTHY)
    report = check(run)
    assert report.alarms == [], report.verdict
    assert report.exit_code == 0
    assert report.verdict.startswith("OK: no alarm (step 900 of 900, finished)")
    assert run.bad_lines == ()
    # two launches: killed after step 400, resumed from checkpoint-350; the second one's steps win
    assert run.resumed_at == (360,)
    assert run.series("kl").steps == tuple(range(10, 901, 10))
    assert 0.05 < report.latest["kl"] < 0.09
    assert 3 < report.latest["calls_per_turn"] < 4
    assert report.latest["parse_failure_rate"] < 0.05
    assert run.series("calls_per_turn").source == "logging.jsonl codegrep/calls_per_turn"
    assert run.series("parse_failure_rate").source == "codegrep_rollouts.jsonl answers"


def test_the_v1_run_raises_the_kl_alarm_and_not_the_length_one() -> None:
    report = check(read_run(V1))
    names = {a.name for a in report.alarms}
    assert names >= KL_ALARMS, report.verdict
    assert not names & LENGTH_ALARMS
    assert not names & CALLS_ALARMS
    drift = next(a for a in report.alarms if a.name == "kl_drift")
    assert drift.threshold == 0.2
    assert drift.value > 0.2
    assert 550 <= drift.step <= 700  # the synthetic KL crosses 0.2 near step 600
    assert drift.last_step == 900
    assert drift.last_value == pytest.approx(0.31, abs=0.02)
    rising = next(a for a in report.alarms if a.name == "kl_rising")
    assert rising.step < drift.step  # the trend says it first
    assert report.exit_code == 1
    assert report.verdict.startswith("ALARM:")
    assert "step 900 of 2000, running or stopped" in report.verdict


def test_the_v2_run_raises_the_length_clip_and_calls_alarms() -> None:
    report = check(read_run(V2))
    names = {a.name for a in report.alarms}
    assert {"length_growth", "clipped_ratio_high"} <= names, report.verdict
    assert names >= CALLS_ALARMS
    assert not names & KL_ALARMS
    by_name = {a.name: a for a in report.alarms}
    growth = by_name["length_growth"]
    assert growth.values["baseline"] == pytest.approx(650, abs=30)
    assert growth.threshold == pytest.approx(2 * growth.values["baseline"])
    assert 250 <= growth.step <= 350
    assert report.latest["clipped_ratio"] == pytest.approx(0.2, abs=0.02)
    assert by_name["calls_per_turn_falling"].step < by_name["calls_per_turn_low"].step
    assert report.latest["calls_per_turn"] < 0.5
    # the limit comes from args.json (max_completion_length 2400, scope total)
    assert by_name["length_near_limit"].values["max_completion_length"] == 2400
    assert report.exit_code == 1


def test_a_real_ms_swift_log_reads_without_a_bad_line() -> None:
    """logging.jsonl of a real ms-swift 4.6 GRPO run (tiny model on a CPU, codegrep plugin):
    two metric lines, the train_runtime line, the summary record."""
    run = read_run(SWIFT_CPU)
    assert run.bad_lines == ()
    assert run.series("reward").steps == (1, 2)
    assert run.max_steps == 2
    assert run.ended
    assert run.finished
    assert run.series("calls_per_turn").values == (0.5, 0.5)
    assert run.series("clipped_ratio").values == (0.5, 0.5)
    assert "CodeGrepV3ORM" in run.reward_funcs
    report = check(run)
    # the run ended after two steps: they are its window, and c̄ 0.5 with half the completions
    # cut at the limit is what a run that ends there looks like
    assert {a.name for a in report.alarms} == {"calls_per_turn_low", "clipped_ratio_high"}
    assert any("judged over all its steps" in n for n in report.notes)
    assert any("no KL logged (beta is 0" in n for n in report.notes)
    assert any("is per round" in n for n in report.notes)


# ---------------------------------------------------------------- reading


def test_bad_lines_are_counted_with_file_and_line(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    log = run_dir / "logging.jsonl"
    good = json.loads(
        (SWIFT_CPU / "v0-20261203-082136" / "logging.jsonl").read_text().split("\n")[0]
    )
    lines = [
        json.dumps(good),
        "{not json",
        "[1, 2]",
        json.dumps({"loss": 0.1, "kl": 0.05}),  # no step
        json.dumps({"kl": "high", "reward": 0.4, "global_step/max_steps": "2/9"}),
        json.dumps({"reward": 0.5, "global_step/max_steps": "three/9"}),
        "",  # blank lines are not data
        json.dumps({"reward": float("nan"), "global_step/max_steps": "3/9"}),  # a gap
    ]
    log.write_text("\n".join(lines) + '\n{"reward": 0.6, "global_st')  # cut off mid-line
    run = read_run(run_dir)
    bad = {(b.line, b.reason.split(" (")[0].split(":")[0]) for b in run.bad_lines}
    assert bad == {
        (2, "not JSON"),
        (3, "a JSON list, not an object"),
        (4, "no step"),
        (5, "not numbers"),
        (6, "global_step/max_steps is 'three/9', not 'step/max_steps'"),
        (9, "unfinished last line"),
    }
    assert all(b.file == str(log) for b in run.bad_lines)
    assert str(run.bad_lines[0]).startswith(f"{log}:2: not JSON")
    # what could be read was read: step 2's reward, not its bad KL
    assert run.series("reward").steps == (1, 2)
    assert run.series("kl").steps == ()
    report = check(run)
    assert "6 bad line(s) skipped (listed in bad_lines)" in report.notes
    assert len(report.bad_lines) == 6

    res = runner.invoke(_app(), ["monitor", str(run_dir), "--no-plot"])
    assert res.exit_code == 0, res.output
    assert "warning: 6 bad line(s) skipped:" in res.stderr
    assert f"{log}:4: no step" in res.stderr


def test_a_resumed_launch_appending_to_the_same_files_replaces_its_steps(tmp_path: Path) -> None:
    """--add_version false: the resumed launch appends to the first one's logging.jsonl and
    rollout log; its steps win, and the failed launch's summary does not end the run."""
    run_dir = tmp_path / "grpo"
    run_dir.mkdir()

    def metric(step: int, reward: float) -> str:
        return json.dumps({"reward": reward, "global_step/max_steps": f"{step}/100"})

    def rollout(step: int, error: str | None) -> str:
        return json.dumps(
            {"step": step, "index": 0, "num_turns": 2, "cbar": 1.5, "answer_error": error,
             "answer_files": None if error else ["a.py"]}
        )  # fmt: skip

    first = [metric(s, 0.1) for s in (1, 2, 3)] + [
        json.dumps({"global_step": 3, "log_history": []})
    ]
    (run_dir / "logging.jsonl").write_text(
        "\n".join([*first, metric(2, 0.7), metric(3, 0.8)]) + "\n"
    )
    rollouts = [rollout(1, None), rollout(2, "no JSON"), rollout(3, "no JSON"), rollout(2, None)]
    (run_dir / "codegrep_rollouts.jsonl").write_text("\n".join(rollouts) + "\n")
    run = read_run(run_dir)
    assert run.series("reward").values == (0.1, 0.7, 0.8)
    assert run.resumed_at == (2,)
    assert not run.ended
    assert not run.finished
    # step 2 failed in the first launch, answered in the second; step 3 was not redone yet
    assert run.series("parse_failure_rate").values == (0.0, 0.0, 1.0)


def test_completions_jsonl_gives_the_parse_failures_without_a_rollout_log(tmp_path: Path) -> None:
    """ms-swift's --log_completions table: one line per logging step, one column per field."""
    run_dir = _copy(SWIFT_CPU / "v0-20261203-082136", tmp_path / "run")
    table = {
        "step": ["1", "1", "1", "1"],
        "prompt": ["<|im_start|>user\nissue<|im_end|>\n"] * 4,
        "completion": [
            '{"files": ["a.py"]}',
            "I could not find it.",
            '```json\n{"files": ["b.py"]}\n```',
            "<think>still thinking",
        ],
        "CodeGrepV3ORM": [1.0, 0.0, 0.5, 0.0],
        "advantages": [1.0, -1.0, 0.3, -1.0],
        "num_turns": [2, 4, 3, 4],
    }
    # ms-swift 4.6 writes the last step's table again when training ends: read once
    (run_dir / "completions.jsonl").write_text((json.dumps(table) + "\n") * 2)
    run = read_run(run_dir)
    assert run.completion_rows == 4
    assert run.series("parse_failure_rate").values == (0.5,)
    assert run.series("parse_failure_rate").source == "completions.jsonl answers"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "missing", "does not exist"),
        (lambda p: p, "no logging.jsonl in"),
    ],
)
def test_bad_input_raises_monitor_input_error(tmp_path: Path, make: object, message: str) -> None:
    assert callable(make)
    with pytest.raises(MonitorInputError, match=message):
        read_run(make(tmp_path))


# ---------------------------------------------------------------- thresholds from a config


def test_thresholds_come_from_the_config_monitor_section(tmp_path: Path) -> None:
    assert MonitorThresholds.from_config({}) == MonitorThresholds()
    assert MonitorThresholds.from_config({"train": {}, "monitor": None}) == MonitorThresholds()
    loose = MonitorThresholds.from_config({"monitor": {"kl_max": 0.35, "kl_rise_floor": 0.4}})
    assert loose.kl_max == 0.35
    assert not _names(V1, loose) & KL_ALARMS
    with pytest.raises(ValueError, match="kl_maxx"):
        MonitorThresholds.from_config({"monitor": {"kl_maxx": 0.3}})

    config = tmp_path / "run.yaml"
    config.write_text(
        "name: paper\ntrain:\n  beta: 0.04\nmonitor:\n  kl_max: 0.35\n  kl_rise_floor: 0.4\n"
    )
    res = runner.invoke(
        _app(),
        ["monitor", str(V1), "--config", str(config), "-o", str(tmp_path / "o"), "--no-plot"],
    )
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("OK: no alarm")
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["thresholds"]["kl_max"] == 0.35

    config.write_text("monitor:\n  kl_max: -1\n  windows: 3\n")
    res = runner.invoke(_app(), ["monitor", str(V1), "--config", str(config), "--no-plot"])
    assert res.exit_code == 2
    assert res.stderr.startswith(f"error: {config}: monitor.kl_max: Input should be greater than 0")
    assert "monitor.windows: Extra inputs are not permitted" in res.stderr
    assert len(res.stderr.splitlines()) == 1


# ---------------------------------------------------------------- the CLI


@pytest.mark.parametrize(("run_dir", "code"), [(HEALTHY, 0), (V1, 1), (V2, 1)])
def test_exit_codes_say_whether_an_alarm_fired(tmp_path: Path, run_dir: Path, code: int) -> None:
    out = tmp_path / "out"
    res = runner.invoke(_app(), ["monitor", str(run_dir), "-o", str(out), "--no-plot"])
    assert res.exit_code == code, res.output
    verdict = (out / "verdict.txt").read_text()
    assert res.stdout.startswith(verdict.splitlines()[0])
    report = json.loads((out / "report.json").read_text())
    assert bool(report["alarms"]) == bool(code)
    assert f"wrote {out / 'report.json'}" in res.stdout


def test_bad_input_exits_2_in_one_error_line(tmp_path: Path) -> None:
    app = _app()
    nope = tmp_path / "nope"
    cases = [
        (["monitor", str(nope)], f"error: the run folder {nope} does not exist"),
        (["monitor", str(tmp_path)], f"error: no logging.jsonl in {tmp_path}"),
        (["monitor", str(HEALTHY), "--config", str(nope)], "error: cannot read --config"),
        (["monitor", str(HEALTHY), "--interval", "0"], "error: --interval must be a positive"),
    ]
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    cases.append(
        (
            ["monitor", str(HEALTHY), "-o", str(blocker)],
            f"error: cannot write -o {blocker}: it exists",
        )
    )
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("monitor: [unclosed\n")
    cases.append(
        (["monitor", str(HEALTHY), "--config", str(bad_yaml)], f"error: {bad_yaml}:2: not YAML")
    )
    for argv, message in cases:
        res = runner.invoke(app, [*argv, "--no-plot"])
        assert res.exit_code == 2, (argv, res.output)
        assert res.stderr.startswith(message), (argv, res.stderr)
        assert len(res.stderr.splitlines()) == 1
        assert res.stdout == ""
    assert not (tmp_path / "monitor").exists()  # nothing written


def test_paths_with_square_brackets_are_printed_as_they_are(tmp_path: Path) -> None:
    run_dir = _copy(SWIFT_CPU, tmp_path / "[run]")
    res = runner.invoke(_app(), ["monitor", str(run_dir), "--no-plot"])
    assert res.exit_code == 1, res.output  # the two-step CPU run's alarms (see above)
    assert f"wrote {run_dir / 'monitor' / 'report.json'}" in res.stdout


def test_without_matplotlib_an_explicit_output_is_bad_input(
    tmp_path: Path, hide_modules: Callable[..., None]
) -> None:
    hide_modules("matplotlib")
    res = runner.invoke(_app(), ["monitor", str(HEALTHY), "-o", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert "the PNG plots need matplotlib: install the `plot` extra" in res.stderr
    assert len(res.stderr.splitlines()) == 1
    # without -o the verdict still comes, with a warning instead of the PNG
    run_dir = _copy(HEALTHY, tmp_path / "run")
    res = runner.invoke(_app(), ["monitor", str(run_dir)])
    assert res.exit_code == 0, res.output
    assert res.stderr.startswith("warning: no plots: the PNG plots need matplotlib")
    assert (run_dir / "monitor" / "verdict.txt").is_file()
    assert not (run_dir / "monitor" / "monitor.png").exists()
    with pytest.raises(monitor.MissingPlotExtraError, match="plot"):
        monitor.require_plot_extra()


# ---------------------------------------------------------------- --follow


def _split(run_dir: Path, tmp: Path, keep_steps: int) -> tuple[Path, list[str], Path]:
    """A copy of a one-launch run whose logging.jsonl holds only the steps up to `keep_steps`;
    returns it, the lines left out and the log to append them to."""
    copy = _copy(run_dir, tmp)
    log = next(copy.glob("v*/logging.jsonl"))
    lines = log.read_text().splitlines(keepends=True)
    cut = next(
        i
        for i, ln in enumerate(lines)
        if json.loads(ln).get("global_step/max_steps", "0/0").split("/")[0] == str(keep_steps + 10)
    )
    log.write_text("".join(lines[:cut]))
    return copy, lines[cut:], log


def test_follow_picks_up_a_new_alarm_as_the_log_grows(tmp_path: Path) -> None:
    run_dir, rest, log = _split(V1, tmp_path / "v1", 300)
    updates = follow_run(run_dir, interval_s=0.0, max_polls=3, sleep=lambda s: None)
    first = next(updates)
    assert first.new_alarms == ()
    assert first.run.last_step == 300
    assert not first.done
    with log.open("a") as fh:  # the run goes on; the last line is still being written
        fh.writelines(rest[:-1])
        fh.write(rest[-1][:40])
    second = next(updates)
    assert {a.name for a in second.new_alarms} == KL_ALARMS
    assert second.new_bad_lines == ()  # an unfinished line is not bad while the run is read
    with log.open("a") as fh:
        fh.write(rest[-1][40:])
    third = next(updates)
    assert third.new_alarms == ()  # each alarm said once
    assert third.done
    assert third.polls == 3
    assert third.run.last_step == 900
    with pytest.raises(StopIteration):
        next(updates)


def test_follow_stops_by_itself_when_training_ends(tmp_path: Path) -> None:
    sleeps: list[float] = []
    updates = list(follow_run(HEALTHY, interval_s=2.5, max_polls=50, sleep=sleeps.append))
    assert len(updates) == 1
    assert updates[0].done
    assert updates[0].run.finished
    assert sleeps == []
    # a run folder without logging.jsonl yet is waited for
    empty = tmp_path / "empty"
    empty.mkdir()
    waited = list(follow_run(empty, interval_s=1.0, max_polls=2, sleep=sleeps.append))
    assert [u.run.metric_files for u in waited] == [(), ()]
    assert sleeps == [1.0]
    with pytest.raises(MonitorInputError, match="does not exist"):
        next(follow_run(tmp_path / "missing", sleep=sleeps.append))


def test_the_follow_option_prints_a_new_alarm_and_stops_at_the_end(tmp_path: Path) -> None:
    run_dir, rest, log = _split(V1, tmp_path / "v1", 300)
    end = json.dumps({"train_runtime": 10.0, "global_step/max_steps": "900/2000"}) + "\n"

    def grow() -> None:
        time.sleep(0.3)
        with log.open("a") as fh:
            fh.writelines([*rest, end])

    writer = threading.Thread(target=grow)
    writer.start()
    try:
        res = runner.invoke(
            _app(),
            ["monitor", str(run_dir), "--follow", "--interval", "0.05", "--max-polls", "200",
             "--no-plot"],
        )  # fmt: skip
    finally:
        writer.join()
    assert res.exit_code == 1, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == f"following {run_dir} every 0.05 s (Ctrl-C to stop)"
    alarm_lines = [ln for ln in lines if ln.startswith("ALARM step")]
    assert [ln.split(":")[0] for ln in alarm_lines] == ["ALARM step 390", "ALARM step 610"]
    assert any(
        ln.startswith("ALARM: 2 alarm(s): kl_rising, kl_drift (step 900 of 2000, finished)")
        for ln in lines
    )


# ---------------------------------------------------------------- the PNG


OVERFLOW_PANEL = "Rollouts ended by a context overflow"


@pytest.mark.slow
@needs_matplotlib
@pytest.mark.parametrize("run_dir", [HEALTHY, V1, V2], ids=["healthy", "v1", "v2"])
def test_the_png_has_every_panel(tmp_path: Path, run_dir: Path) -> None:
    import matplotlib.image

    run = read_run(run_dir)
    report = check(run)
    path = monitor.plot(run, report, tmp_path)
    assert path == tmp_path / "monitor.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert matplotlib.image.imread(path).shape[:2] == (1600, 1400)

    fig = monitor._figure(run, report)
    axes = fig.get_axes()
    assert [ax.get_title() for ax in axes] == [title for title, _ in monitor.PANELS]
    for ax in axes:  # every panel drew its series and its threshold
        if ax.get_title() == OVERFLOW_PANEL and not run.series("overflow_rate"):
            # these logs predate stop_cause: the panel says what is missing
            notes = [t.get_text() for t in ax.texts if " @ " not in t.get_text()]
            assert notes == ["no stop_cause in codegrep_rollouts.jsonl"]
            continue
        assert len(ax.get_lines()) >= 2, ax.get_title()
        assert any(ln.get_linestyle() == "--" for ln in ax.get_lines()), ax.get_title()
    marked = {
        text.get_text().split(" @ ")[0]
        for ax in axes
        for text in ax.texts
        if " @ " in text.get_text()
    }
    assert marked - {"resumed"} == {a.name for a in report.alarms}


@pytest.mark.slow
@needs_matplotlib
def test_the_cli_writes_the_png(tmp_path: Path) -> None:
    res = runner.invoke(_app(), ["monitor", str(V2), "-o", str(tmp_path)])
    assert res.exit_code == 1, res.output
    assert (tmp_path / "monitor.png").stat().st_size > 10_000
    assert f"wrote {tmp_path / 'monitor.png'}" in res.stdout


# ---------------------------------------------------------------- links planted in the run folder


def _outside(tmp_path: Path) -> dict[str, Path]:
    folder = tmp_path / "outside"
    folder.mkdir()
    files = {name: folder / f"precious-{name}" for name in ("report.json", "verdict.txt")}
    for path in files.values():
        path.write_text("keep me\n")
    return files


def test_a_link_planted_at_the_report_is_replaced_and_its_target_untouched(
    tmp_path: Path,
) -> None:
    """The run folder is written by the trainer and what it runs: a link there at
    monitor/report.json used to make the monitor overwrite the file it points to."""
    run_dir = _copy(SWIFT_CPU, tmp_path / "run")
    outside = _outside(tmp_path)
    (run_dir / "monitor").mkdir()
    for name, target in outside.items():
        (run_dir / "monitor" / name).symlink_to(target)
    res = runner.invoke(_app(), ["monitor", str(run_dir), "--no-plot"])
    assert res.exit_code == 1, res.output  # the two-step CPU run's alarms; the files are written
    for name, target in outside.items():
        assert target.read_text() == "keep me\n"
        written = run_dir / "monitor" / name
        assert not written.is_symlink()
        assert written.read_text() != "keep me\n"
    assert json.loads((run_dir / "monitor" / "report.json").read_text())["run_dir"] == str(run_dir)


def test_a_link_planted_in_place_of_the_output_folder_is_refused(tmp_path: Path) -> None:
    run_dir = _copy(SWIFT_CPU, tmp_path / "run")
    outside = _outside(tmp_path)
    folder = next(iter(outside.values())).parent
    (run_dir / "monitor").symlink_to(folder, target_is_directory=True)
    res = runner.invoke(_app(), ["monitor", str(run_dir), "--no-plot"])
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith(f"error: cannot write to {run_dir / 'monitor'}: ")
    assert "outside" in res.stderr
    assert sorted(p.name for p in folder.iterdir()) == sorted(t.name for t in outside.values())
    assert all(t.read_text() == "keep me\n" for t in outside.values())


@needs_matplotlib
def test_a_link_planted_at_the_png_is_replaced_and_its_target_untouched(tmp_path: Path) -> None:
    outside = tmp_path / "precious.png"
    outside.write_bytes(b"keep me")
    out = tmp_path / "run" / "monitor"
    out.mkdir(parents=True)
    (out / "monitor.png").symlink_to(outside)
    run = read_run(HEALTHY)
    path = monitor.plot(run, check(run), out, within=tmp_path / "run")
    assert outside.read_bytes() == b"keep me"
    assert not path.is_symlink()
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --- what kills a run, on doctored copies of the real ms-swift 4.6 log ------------------------


def _real_lines() -> tuple[Path, list[dict[str, object]]]:
    (version,) = (SWIFT_CPU).iterdir()
    lines = (version / "logging.jsonl").read_text().splitlines()
    return version, [json.loads(x) for x in lines if "global_step/max_steps" in x and "loss" in x]


def _doctored(
    tmp_path: Path, steps: int, edit: dict[int, dict[str, object]], everywhere: dict[str, object]
) -> Path:
    """The real log's step lines repeated to `steps` steps, with `everywhere` set on each and
    `edit[step]` on one; args.json kept. Written with json.dumps, as ms-swift writes it (a NaN
    is the bare token NaN)."""
    version, lines = _real_lines()
    run = tmp_path / "run"
    folder = run / version.name
    folder.mkdir(parents=True)
    shutil.copy(version / "args.json", folder / "args.json")
    out = []
    for step in range(1, steps + 1):
        row = {**lines[(step - 1) % len(lines)], **everywhere, **edit.get(step, {})}
        row["global_step/max_steps"] = f"{step}/{steps}"
        out.append(json.dumps(row))
    (folder / "logging.jsonl").write_text("\n".join(out) + "\n")
    return run


def test_the_real_log_raises_none_of_the_new_alarms() -> None:
    report = check(read_run(SWIFT_CPU))
    new = {"nonfinite_loss", "nonfinite_grad_norm", "zero_std_all", "kl_hard"}
    assert not {a.name for a in report.alarms} & new


@pytest.mark.parametrize(("key", "value"), [("loss", float("nan")), ("grad_norm", float("inf"))])
def test_a_nan_or_infinite_loss_or_grad_norm_fires_at_its_step(
    tmp_path: Path, key: str, value: float
) -> None:
    run = _doctored(tmp_path, 4, {3: {key: value}}, {})
    text = (next(run.iterdir()) / "logging.jsonl").read_text()
    assert ("NaN" if key == "loss" else "Infinity") in text
    report = check(read_run(run))
    (alarm,) = [a for a in report.alarms if a.name == f"nonfinite_{key}"]
    assert alarm.step == 3
    assert report.exit_code == 1
    assert report.verdict.startswith("ALARM")


def test_every_group_at_zero_std_fires_though_the_reward_looks_good(tmp_path: Path) -> None:
    flat = {"reward": 0.6, "reward_std": 0.0, "frac_reward_zero_std": 1.0}
    run = _doctored(tmp_path, 6, {}, flat)
    report = check(read_run(run))
    (alarm,) = [a for a in report.alarms if a.name == "zero_std_all"]
    assert alarm.step == MonitorThresholds().zero_std_hard_steps
    # and the sustained share, once a window is full
    run = _doctored(tmp_path / "long", 30, {}, {**flat, "frac_reward_zero_std": 0.75})
    assert "zero_std_groups" in _names(run)
    assert "zero_std_all" not in _names(run)


def test_hard_limits_fire_in_the_first_steps(tmp_path: Path) -> None:
    # the tester's 6-step log: KL 5.0 and every completion clipped printed "OK"
    run = _doctored(tmp_path, 6, {}, {"kl": 5.0, "completions/clipped_ratio": 1.0})
    report = check(read_run(run))
    steps = {a.name: a.step for a in report.alarms}
    assert steps["kl_hard"] == 1
    assert steps["clipped_ratio_hard"] == 1
    assert "OK" not in report.verdict


def test_the_overflow_share_is_read_from_the_rollout_logs_stop_cause(tmp_path: Path) -> None:
    from codegrep_model.train import RolloutLogEntry

    run = _doctored(tmp_path, 4, {}, {})
    folder = next(run.iterdir())

    def entry(step: int, index: int, status: str) -> str:
        return RolloutLogEntry(
            step=step, index=index, reward=0.5, num_turns=2, tool_calls_per_turn=(2, 0),
            num_tool_calls=2, cbar=1.0, efficiency=0.5, factor=0.5, advantage_group=0.1,
            advantage=0.05, episode_status=status,
        ).to_json_line()  # fmt: skip

    lines = [entry(s, i, "answered") for s in (1, 2) for i in range(8)]
    lines += [entry(3, i, "overflow" if i < 4 else "answered") for i in range(8)]
    (folder / "codegrep_rollouts.jsonl").write_text("".join(lines))
    report = check(read_run(run))
    (alarm,) = [a for a in report.alarms if a.name == "overflow_high"]
    assert (alarm.step, alarm.value) == (3, 0.5)
    # as RolloutLogEntry.of writes them: the episode's own status, stop_cause 'overflow'
    written = [
        RolloutLogEntry(
            step=3, index=i, reward=0.0, num_turns=2, tool_calls_per_turn=(2, 0),
            num_tool_calls=2, cbar=1.0, efficiency=0.5, factor=0.5, advantage_group=0.0,
            advantage=0.0, episode_status="unanswered", stop_cause="overflow",
            overflow="max_length",
        ).to_json_line() if i < 4 else entry(3, i, "answered")
        for i in range(8)
    ]  # fmt: skip
    (folder / "codegrep_rollouts.jsonl").write_text("".join(lines[:16] + written))
    (alarm,) = [a for a in check(read_run(run)).alarms if a.name == "overflow_high"]
    assert (alarm.step, alarm.value) == (3, 0.5)
    # the same rollouts without an overflow: no alarm
    (folder / "codegrep_rollouts.jsonl").write_text(
        "".join(x.replace("overflow", "answered") for x in lines)
    )
    assert "overflow_high" not in _names(run)


@needs_matplotlib
def test_the_zero_std_and_overflow_panels_draw_their_series_and_alarms(tmp_path: Path) -> None:
    from codegrep_model.train import RolloutLogEntry

    run = _doctored(tmp_path, 6, {}, {"reward_std": 0.0, "frac_reward_zero_std": 1.0})
    folder = next(run.iterdir())
    lines = [
        RolloutLogEntry(
            step=s, index=i, reward=0.0, num_turns=2, tool_calls_per_turn=(2, 0),
            num_tool_calls=2, cbar=1.0, efficiency=0.5, factor=0.5, advantage_group=0.0,
            advantage=0.0, episode_status="unanswered",
            stop_cause="overflow" if s == 3 and i < 4 else "answered",
        ).to_json_line()
        for s in range(1, 7) for i in range(8)
    ]  # fmt: skip
    (folder / "codegrep_rollouts.jsonl").write_text("".join(lines))
    data = read_run(run)
    report = check(data)
    fig = monitor._figure(data, report)
    by_title = {ax.get_title(): ax for ax in fig.get_axes()}
    for title, alarm in (
        ("Groups whose rewards are all equal (advantage 0)", "zero_std_all"),
        (OVERFLOW_PANEL, "overflow_high"),
    ):
        ax = by_title[title]
        assert len(ax.get_lines()) >= 2, title  # the series, its rolling mean, the threshold
        assert any(ln.get_linestyle() == "--" for ln in ax.get_lines()), title
        marks = [t.get_text() for t in ax.texts if " @ " in t.get_text()]
        assert any(m.startswith(f"{alarm} @ ") for m in marks), (title, marks)
    overflow = by_title[OVERFLOW_PANEL].get_lines()[0]
    assert list(overflow.get_ydata()) == [0.0, 0.0, 50.0, 0.0, 0.0, 0.0]


def test_the_monitor_errors_are_the_launchers_own() -> None:
    from train_launcher.errors import MonitorError, TrainLauncherError

    assert issubclass(monitor.MonitorInputError, MonitorError)
    assert issubclass(monitor.MissingPlotExtraError, MonitorError)
    assert issubclass(MonitorError, TrainLauncherError)
    assert monitor.MonitorError is MonitorError


def test_the_monitor_reads_the_rollout_log_through_rollout_log_entry(tmp_path: Path) -> None:
    """Lines written by `RolloutLogEntry.of` from the episode's `RolloutInfo`, beside a line from
    before `stop_cause`, the token counts and `schema_version` existed: all are read."""
    from codegrep_model.train import ROLLOUT_LOG_FILE, RolloutLogEntry, advantage_scale
    from grpo_rewards import RolloutInfo, parse_answer

    run = _doctored(tmp_path, 2, {}, {})
    folder = next(run.iterdir())

    def written(step: int, index: int, answer: str, overflow: str | None) -> str:
        info = RolloutInfo(
            num_turns=2, num_tool_calls=3, tool_calls_per_turn=(3, 0),
            answer=parse_answer(answer), episode_status="answered", overflow=overflow,
            rollout_tokens=100, completion_tokens=20, tool_results_cut=0, token_counter="x",
        )  # fmt: skip
        entry = RolloutLogEntry.of(
            step=step, index=index, info=info, scale=advantage_scale(info), reward=0.5,
            rewards={"codegrep_v3": 0.5}, advantage_group=0.1,
        )  # fmt: skip
        return entry.to_json_line()

    old = json.loads(written(2, 1, "no JSON here", None))
    for key in ("schema_version", "stop_cause", "overflow", "rollout_tokens",
                "completion_tokens", "tool_results_cut", "test_policy"):  # fmt: skip
        del old[key]
    old["episode_status"] = "overflow"  # how logs before stop_cause said it
    lines = [
        written(1, 0, '{"files": ["a.py"]}', None),
        written(1, 1, '{"files": ["a.py"]}', "max_length"),
        written(2, 0, '{"files": ["a.py"]}', None),
        json.dumps(old) + "\n",
    ]
    assert json.loads(lines[0])["schema_version"] == 1
    (folder / ROLLOUT_LOG_FILE).write_text("".join(lines))
    data = read_run(run)
    assert data.bad_lines == ()
    assert data.series("overflow_rate").values == (0.5, 0.5)
    assert data.series("overflow_rate").source == f"{ROLLOUT_LOG_FILE} stop_cause"
    assert data.series("parse_failure_rate").values == (0.0, 0.5)


def test_a_finished_run_shorter_than_the_window_is_judged_over_all_its_steps(
    tmp_path: Path,
) -> None:
    # 12 steps making no tool call: a run that ended there never fills a 20-step window, and
    # used to read "OK: no alarm"; one still running waits for its window as before.
    idle = {"codegrep/calls_per_turn": 0.0}
    finished = check(read_run(_doctored(tmp_path / "done", 12, {}, idle)))
    (alarm,) = [a for a in finished.alarms if a.name == "calls_per_turn_low"]
    assert alarm.value == 0.0
    assert "OK" not in finished.verdict
    run = _doctored(tmp_path / "running", 12, {}, idle)
    log = next(run.iterdir()) / "logging.jsonl"
    steps_only = [
        line.replace("/12", "/2000")
        for line in log.read_text().splitlines()
        if "train_runtime" not in line and "log_history" not in line
    ]
    log.write_text("\n".join(steps_only) + "\n")
    running = check(read_run(run))
    assert not read_run(run).finished
    assert "calls_per_turn_low" not in {a.name for a in running.alarms}
    assert any("no sustained check could fire yet" in n for n in running.notes)


def test_a_kl_that_overflows_its_sums_still_writes_strict_json(tmp_path: Path) -> None:
    # 1.7e308 is a finite float; the monitor's sums and means of it overflow to infinity, and
    # json.dumps would write `Infinity`, which no JSON reader takes back
    run = _doctored(tmp_path / "run", 6, {}, {"kl": 1.7e308})
    out = tmp_path / "o"
    res = runner.invoke(_app(), ["monitor", str(run), "-o", str(out), "--no-plot"])
    assert res.exit_code == 1, res.output  # kl_hard fires
    text = (out / "report.json").read_text()
    assert "Infinity" not in text
    assert "NaN" not in text
    report = parse_json(text)  # strict: refuses NaN and Infinity
    assert "kl_hard" in {a["name"] for a in report["alarms"]}
