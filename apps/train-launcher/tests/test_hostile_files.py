"""Hostile files read by `plan`, `launch` (dry run and resume) and `monitor`: each is a one-line
message (exit 2 where the command cannot go on), never a traceback.

The config's YAML goes through one bounded loader (`train_launcher._yaml`); the launcher's own
state and stamps, the stages' outputs and the monitor's logs and args through codegrep-records'
hardened JSON reader.
"""

from __future__ import annotations

import gzip
import json
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from train_launcher import NodeInfo, launch, load_config
from train_launcher._yaml import (
    MAX_YAML_ALIASES,
    MAX_YAML_DEPTH,
    YamlLimitError,
    load_yaml,
)
from train_launcher.cli import app
from train_launcher.monitor import read_run
from typer.testing import CliRunner

# Nine levels of nine aliases: 81 aliases, 9^9 (387 million) strings once expanded.
LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
)
DEEP_JSON = "[" * 100_000 + "]" * 100_000


def _one_line_error(result: Any) -> str:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = [x for x in result.stderr.splitlines() if not x.startswith("warning:")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    return lines[0]


# ---------------------------------------------------------------- the YAML loader


def test_billion_laughs_fails_fast_and_small() -> None:
    assert LAUGHS.count("*") == 72
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(YamlLimitError, match="once its aliases are expanded"):
        load_yaml(LAUGHS)
    took = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert took < 0.5
    assert peak < 20 * 1024 * 1024


def test_many_aliases_deep_nesting_and_size_are_refused() -> None:
    many = "a: &a 1\nb: [" + ", ".join(["*a"] * (MAX_YAML_ALIASES + 1)) + "]\n"
    with pytest.raises(YamlLimitError, match=f"more than {MAX_YAML_ALIASES} aliases"):
        load_yaml(many)
    deep = "a: " + "[" * 100_000 + "]" * 100_000
    with pytest.raises(YamlLimitError, match=f"nested more than {MAX_YAML_DEPTH} levels"):
        load_yaml(deep)
    with pytest.raises(YamlLimitError, match="larger than"):
        load_yaml("a: " + "x" * (2 << 20))


def test_ordinary_anchors_and_merge_keys_still_load() -> None:
    text = "base: &b {lr: 1.0e-5, beta: 0.04}\ntrain:\n  <<: *b\n  beta: 0.0\nother: *b\n"
    data, node = load_yaml(text)
    assert data == {
        "base": {"lr": 1e-5, "beta": 0.04},
        "train": {"lr": 1e-5, "beta": 0.0},
        "other": {"lr": 1e-5, "beta": 0.04},
    }
    assert isinstance(node, yaml.MappingNode)
    assert load_yaml("") == (None, None)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet="&*ab:[]{}-, \n\"'!<>|%@`#0123456789.eE\t", max_size=200))
def test_any_text_loads_or_raises_a_yaml_error(text: str) -> None:
    problem = ""
    try:
        load_yaml(text)
    except yaml.YAMLError as exc:
        problem = str(getattr(exc, "problem", "") or "")
    assert "\n" not in problem


# ---------------------------------------------------------------- plan / launch


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (LAUGHS.encode(), "once its aliases are expanded"),
        (b"a: " + b"[" * 100_000, "nested more than"),
        (b"name: \xff\n", "not UTF-8"),
    ],
)
def test_plan_with_a_hostile_config_exits_2_with_one_line(
    tmp_path: Path, text: bytes, reason: str
) -> None:
    config = tmp_path / "run.yaml"
    config.write_bytes(text)
    t0 = time.perf_counter()
    result = CliRunner().invoke(app, ["plan", "--config", str(config)])
    assert time.perf_counter() - t0 < 5
    line = _one_line_error(result)
    assert str(config) in line
    assert reason in line


def test_a_set_override_with_laughs_is_a_config_problem(cpu_config: Callable[..., Path]) -> None:
    path = cpu_config()
    value = LAUGHS.replace("\n", ", ").rstrip(", ")
    result = CliRunner().invoke(app, ["plan", "--config", str(path), "--set", f"x={{{value}}}"])
    assert result.exit_code == 2
    assert "once its aliases are expanded" in result.stderr
    assert "Traceback" not in result.output


@pytest.fixture
def finished(cpu_config: Callable[..., Path], make_runner: Any, no_gpu: NodeInfo) -> Path:
    path = cpu_config()
    launch(load_config(path), path, node=no_gpu, runner=make_runner(), sleep=lambda s: None)
    return path


HOSTILE_JSON = {
    "deep": DEEP_JSON.encode(),
    "1e999": b'{"fingerprint": 1e999, "stages": {}}',
    "bigint": b'{"stages": {}, "n": 1' + b"0" * 5000 + b"}",
    "list": b'[{"stages": {}}]',
    "utf8": b'{"stages": {}, "x": "\xff"}',
}


@pytest.mark.parametrize("kind", list(HOSTILE_JSON))
def test_a_resume_over_a_hostile_state_file_exits_2(finished: Path, kind: str) -> None:
    state = load_config(finished).output_dir / "launch-state.json"
    state.write_bytes(HOSTILE_JSON[kind])
    result = CliRunner().invoke(app, ["launch", "--config", str(finished)])
    line = _one_line_error(result)
    assert line.startswith(f"error: {state}: ")


def test_a_linked_state_file_is_refused(finished: Path, tmp_path: Path) -> None:
    state = load_config(finished).output_dir / "launch-state.json"
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('{"stages": {}}')
    state.unlink()
    state.symlink_to(elsewhere)
    line = _one_line_error(CliRunner().invoke(app, ["launch", "--config", str(finished)]))
    assert "is a symbolic link" in line


@pytest.mark.parametrize("kind", list(HOSTILE_JSON))
def test_a_dry_run_over_a_hostile_stamp_exits_2(finished: Path, kind: str) -> None:
    stamp = load_config(finished).output_dir / "stamps" / "labels.json"
    stamp.write_bytes(HOSTILE_JSON[kind])
    result = CliRunner().invoke(app, ["launch", "--config", str(finished), "--dry-run"])
    assert f"{stamp}: " in _one_line_error(result)


@pytest.mark.parametrize("kind", list(HOSTILE_JSON))
def test_hostile_stage_outputs_are_remade_with_the_reason(
    finished: Path, make_runner: Any, no_gpu: NodeInfo, kind: str
) -> None:
    out = load_config(finished).output_dir
    report = out / "data" / "grpo" / "report.json"
    report.write_bytes(HOSTILE_JSON[kind])
    (out / "eval" / "summary.md").write_bytes(b"\xff\xfe")
    result = CliRunner().invoke(app, ["launch", "--config", str(finished), "--dry-run"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert f"datasets: would run ({report}: " in " ".join(result.stdout.split())
    assert "eval-summary: would run" in result.stdout
    plan = CliRunner().invoke(app, ["plan", "--config", str(finished)])
    assert plan.exception is None or isinstance(plan.exception, SystemExit), plan.exception


def test_a_model_config_with_1e999_is_no_estimate_not_a_crash(
    cpu_config: Callable[..., Path],
) -> None:
    path = cpu_config()
    model = path.parent / "inputs" / "tiny-qwen3" / "config.json"
    model.write_text(json.dumps(json.loads(model.read_text())).replace("32", "1e999", 1))
    result = CliRunner().invoke(app, ["plan", "--config", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception


# ---------------------------------------------------------------- monitor


def _run_with(tmp_path: Path, log_lines: list[bytes], args: bytes | None = None) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    good = json.dumps({"loss": 0.5, "reward": 0.2, "global_step/max_steps": "1/4"}).encode()
    (run / "logging.jsonl").write_bytes(b"\n".join([good, *log_lines]) + b"\n")
    if args is not None:
        (run / "args.json").write_bytes(args)
    return run


def test_hostile_log_lines_are_counted_bad_lines(tmp_path: Path) -> None:
    hostile = [
        DEEP_JSON.encode(),
        b'{"reward": 1e999, "global_step/max_steps": "2/4"}',
        b'{"reward": 1' + b"0" * 5000 + b', "global_step/max_steps": "2/4"}',
        b"[1, 2]",
        b'{"reward": "\xff"}',
        '{"reward": 0.1, "global_step/max_steps": "\u00b2/4"}'.encode(),
        '{"reward": 0.1, "global_step/max_steps": "\u0663/4"}'.encode(),
        b'{"reward": 0.1, "global_step/max_steps": "1' + b"0" * 5000 + b'/4"}',
    ]
    run = read_run(_run_with(tmp_path, hostile, args=DEEP_JSON.encode()))
    assert sorted(b.line for b in run.bad_lines) == list(range(2, 10))
    assert all("\n" not in b.reason and len(b.reason) < 200 for b in run.bad_lines)
    res = CliRunner().invoke(app, ["monitor", str(tmp_path / "run"), "--no-plot"])
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception


def test_a_log_that_is_a_link_is_refused_not_followed(tmp_path: Path) -> None:
    # the monitor reads through codegrep-report's reader: no link, a regular file, bounded lines
    from train_launcher.errors import MonitorInputError

    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text(json.dumps({"loss": 0.5, "global_step/max_steps": "1/4"}) + "\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "logging.jsonl").symlink_to(elsewhere)
    with pytest.raises(MonitorInputError, match="symbolic link"):
        read_run(run)
    res = CliRunner().invoke(app, ["monitor", str(run), "--no-plot"])
    assert res.exit_code == 2, res.output
    assert "symbolic link" in res.output
    assert "Traceback" not in res.output


def test_a_nan_loss_is_a_value_and_a_huge_number_a_bad_line(tmp_path: Path) -> None:
    rows = [
        b'{"loss": NaN, "reward": 0.3, "global_step/max_steps": "2/4"}',
        b'{"loss": 0.2, "reward": 1e999, "global_step/max_steps": "3/4"}',
    ]
    run = read_run(_run_with(tmp_path, rows))
    assert run.series("reward").steps == (1, 2)  # step 2 read; step 3's line refused
    (bad,) = run.bad_lines
    assert bad.line == 3
    assert "out of range" in bad.reason


def test_a_step_field_isdigit_accepts_is_a_bad_line(tmp_path: Path) -> None:
    rows = [b'{"loss": 0.1, "global_step/max_steps": "\xc2\xb2/4"}']  # '²': isdigit, not int
    run = read_run(_run_with(tmp_path, rows))
    (bad,) = run.bad_lines
    assert "not 'step/max_steps'" in bad.reason


@pytest.mark.parametrize("args", [DEEP_JSON.encode(), b"[1]", b'{"max_steps": 1e999}', b"\xff"])
def test_hostile_args_json_is_ignored_not_a_crash(tmp_path: Path, args: bytes) -> None:
    run = read_run(_run_with(tmp_path, [], args=args))
    assert run.last_step == 1


def test_a_launch_folder_named_with_a_superscript_is_ordered_last(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for name in ("v0-20261203-1", "v\u00b2-20261203-2"):
        (run / name).mkdir(parents=True)
        (run / name / "logging.jsonl").write_text(
            json.dumps({"loss": 0.1, "global_step/max_steps": "1/4"}) + "\n"
        )
    assert read_run(run).last_step == 1


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (LAUGHS.encode(), "once its aliases are expanded"),
        (b"monitor: \xff\n", "not UTF-8"),
        (b"monitor: " + b"[" * 100_000, "nested more than"),
    ],
)
def test_monitor_with_a_hostile_config_exits_2_fast(
    tmp_path: Path, text: bytes, reason: str
) -> None:
    run = _run_with(tmp_path, [])
    config = tmp_path / "run.yaml"
    config.write_bytes(text)
    t0 = time.perf_counter()
    res = CliRunner().invoke(app, ["monitor", str(run), "--config", str(config), "--no-plot"])
    assert time.perf_counter() - t0 < 5
    line = _one_line_error(res)
    assert str(config) in line
    assert reason in line


def test_monitor_config_with_laughs_under_monitor_gives_a_short_message(tmp_path: Path) -> None:
    # Within the bounds (3^5 expanded): the validation error prints a bounded repr of it.
    levels = "a: &a [x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 3)}]\n" for i in range(4)
    )
    config = tmp_path / "run.yaml"
    config.write_text(levels + "monitor:\n  kl_max: *e\n")
    res = CliRunner().invoke(
        app, ["monitor", str(_run_with(tmp_path, [])), "--config", str(config), "--no-plot"]
    )
    line = _one_line_error(res)
    assert "monitor.kl_max" in line
    assert len(line) < 400


def test_a_truncated_gzip_stage_output_is_a_one_line_reason(tmp_path: Path) -> None:
    # A corrupt .json.gz stage output still reads as a one-line reason (the shared reader).
    from train_launcher.outputs import check_eval

    scores = tmp_path / "retrieval.json.gz"
    scores.write_bytes(gzip.compress(b'{"a": 1}')[:15])
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"instance_id": "a"}\n')
    validity = check_eval(preds, scores)
    assert not validity.ok
    assert validity.reason.startswith(f"{scores}: truncated gzip")


def test_a_node_rank_isdigit_accepts_but_int_refuses_is_ignored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from train_launcher.cli import _default_rank

    monkeypatch.setenv("NODE_RANK", "\u00b2")
    monkeypatch.setenv("SLURM_NODEID", "1")
    assert _default_rank() == 1
