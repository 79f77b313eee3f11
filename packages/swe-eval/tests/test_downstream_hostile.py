"""Hostile harness reports, run lists and agent outputs for `swe-eval downstream report`: a
one-line exit 2 naming the file (or a counted bad row), never a traceback."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from catm._readers import json_arguments
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from swe_eval.cli import app
from swe_eval.downstream import read_agent_outputs, read_harness_report, read_manifest
from swe_eval.errors import DatasetError
from typer.testing import CliRunner

runner = CliRunner()
DEEP = "[" * 100_000 + "]" * 100_000

HOSTILE_REPORTS: dict[str, bytes] = {
    "deep.json": DEEP.encode(),
    "inf.json": b'{"resolved_ids": ["o__r-1"], "total_instances": 1e999}',
    "bigint.json": b'{"resolved_ids": ["o__r-1"], "total_instances": 1' + b"0" * 5000 + b"}",
    "badutf8.json": b'{"resolved_ids": ["o__r-\xff"]}',
    "corrupt.json.gz": gzip.compress(b'{"resolved_ids": []}')[:12] + b"\xff" * 40,
    "truncated.json.gz": gzip.compress(json.dumps({"resolved_ids": list(range(999))}).encode())[
        :60
    ],
    "badutf8.md": b"# Summary\n\xff\n## Resolved Instances\n",
}


def _error_line(res: object) -> str:
    assert getattr(res, "exit_code") == 2, getattr(res, "output")  # noqa: B009
    exc = getattr(res, "exception")  # noqa: B009
    assert exc is None or isinstance(exc, SystemExit), exc
    lines = getattr(res, "stderr").strip().splitlines()  # noqa: B009
    assert len(lines) == 1, lines
    return str(lines[0])


@pytest.mark.parametrize("name", list(HOSTILE_REPORTS))
def test_a_hostile_harness_report_exits_2_naming_it(tmp_path: Path, name: str) -> None:
    report = tmp_path / name
    report.write_bytes(HOSTILE_REPORTS[name])
    res = runner.invoke(app, ["downstream", "report", "--run", f"a=report={report}"])
    assert str(report) in _error_line(res)


@pytest.mark.parametrize("count", ["1" + "0" * 5000, "\u0663"])
def test_a_markdown_claim_not_in_ascii_digits_is_no_claim(tmp_path: Path, count: str) -> None:
    report = tmp_path / "output.swebench_eval.md"
    report.write_text(
        f"# Summary\n- resolved instances: {count}\n## Resolved Instances\n- o__r-1\n"
    )
    read = read_harness_report(report)
    assert read.claimed == {}
    assert read.verdicts["o__r-1"].resolved


def test_a_linked_per_instance_report_in_a_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "logs" / "o__r-1"
    folder.mkdir(parents=True)
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"o__r-1": {"resolved": True}}))
    (folder / "report.json").symlink_to(outside)
    with pytest.raises(DatasetError, match="symbolic link"):
        read_harness_report(tmp_path / "logs")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (DEEP, "nested too deeply"),
        ('{"runs": [], "title": 1e999}', "number out of range"),
        ("[]", "expected a `runs` list"),
    ],
)
def test_a_hostile_manifest_exits_2(tmp_path: Path, text: str, reason: str) -> None:
    manifest = tmp_path / "runs.json"
    manifest.write_text(text)
    with pytest.raises(DatasetError, match=reason):
        read_manifest(manifest)
    res = runner.invoke(app, ["downstream", "report", "--manifest", str(manifest)])
    assert reason in _error_line(res)


def test_a_deep_toml_manifest_is_one_line(tmp_path: Path) -> None:
    manifest = tmp_path / "runs.toml"
    manifest.write_text("runs = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(DatasetError, match="not TOML"):
        read_manifest(manifest)


def test_hostile_trajectory_rows_are_counted(tmp_path: Path) -> None:
    out = tmp_path / "output.jsonl"
    good = {
        "instance_id": "o__r-1",
        "history": [],
        "metrics": {"accumulated_token_usage": {"prompt_tokens": 3, "completion_tokens": 1e300}},
        "test_result": {"git_patch": "x"},
    }
    out.write_bytes(
        DEEP.encode()
        + b"\n"
        + b'{"instance_id": "o__r-2", "metrics": {"accumulated_cost": 1e999}}\n'
        + b'{"instance_id": "o__r-3", "attempt": 1'
        + b"0" * 5000
        + b"}\n"
        + b'{"instance_id": "o__r-\xff"}\n'
        + json.dumps(good).encode()
        + b"\n"
    )
    outputs = read_agent_outputs(out)
    assert sorted(outputs.runs) == ["o__r-1"]
    assert [p.line for p in outputs.problems] == [1, 2, 3, 4]


def test_tool_call_arguments_nested_too_deep_are_no_arguments() -> None:
    assert json_arguments(DEEP) == {}
    assert json_arguments('{"path": 1e999}') == {}
    assert json_arguments('{"path": "a.py"}') == {"path": "a.py"}


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.binary(max_size=200), suffix=st.sampled_from([".json", ".json.gz", ".md"]))
def test_any_bytes_as_a_report_read_or_give_a_dataset_error(
    tmp_path: Path, data: bytes, suffix: str
) -> None:
    p = tmp_path / f"report{suffix}"
    p.write_bytes(data)
    message = ""
    try:
        read_harness_report(p)
    except DatasetError as exc:
        message = str(exc)
    assert "\n" not in message
