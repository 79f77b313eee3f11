"""The toolkit's one command-line convention in `catm`: `--version`; bad input is one line
`error: ...` and exit 2 before any work (an unwritable -o, a negative --limit, a file that is not
a labels file, a judge endpoint that does not answer); judge requests that failed in the run are
counted and exit 1 unless --keep-going; rich markup never eats square brackets."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from catm import __version__, read_labels
from catm.cli import app
from codegrep_records import LabelRecord, Verdict
from typer.testing import CliRunner

runner = CliRunner()


def _corpus(tmp_path: Path) -> tuple[Path, Path]:
    """One trajectory that reads p/a.py and reasons about it, and its instance row."""
    ws = "/workspace/o__p__1"
    call = {
        "id": "a",
        "type": "function",
        "function": {
            "name": "str_replace_editor",
            "arguments": json.dumps({"command": "view", "path": f"{ws}/p/a.py"}),
        },
    }
    record = {
        "instance_id": "o__p-1",
        "trajectory_id": "t1",
        "messages": [
            {"role": "user", "content": f"<uploaded_files>\n{ws}\n</uploaded_files>"},
            {"role": "assistant", "content": "look", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "a", "content": "1 x"},
            {"role": "assistant", "content": "a.py defines the parser that mis-handles tuples"},
        ],
    }
    trajectories = tmp_path / "t.jsonl"
    trajectories.write_text(json.dumps(record) + "\n")
    instances = tmp_path / "i.jsonl"
    row = {"instance_id": "o__p-1", "repo": "o/p", "patch": "diff --git a/p/fix.py b/p/fix.py\n"}
    instances.write_text(json.dumps(row) + "\n")
    return trajectories, instances


def _mine(tmp_path: Path, *extra: str, output: Path | None = None) -> list[str]:
    trajectories, instances = _corpus(tmp_path)
    out = output if output is not None else tmp_path / "labels.jsonl"
    return ["mine", str(trajectories), "-i", str(instances), "-o", str(out), *extra]


def _said(output: str) -> str:
    return " ".join(output.split())


def _error_line(output: str) -> str:
    [line] = [line for line in output.splitlines() if line.startswith("error: ")]
    return line


def _closed_port() -> int:
    """A local port nothing listens on (bound, then closed: connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Endpoint:
    """A tiny OpenAI-style server on 127.0.0.1: `GET /v1/models` and `/v1/chat/completions`,
    each answering as configured."""

    def __init__(self) -> None:
        self.models_status = 200
        self.models = ["judge-model"]
        self.chat_status = 200
        self.answer = "NOT RELEVANT"
        self.hits: Counter[str] = Counter()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, payload: object) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                endpoint.hits[f"GET {self.path}"] += 1
                if endpoint.models_status != 200:
                    return self._send(endpoint.models_status, {"error": "no"})
                self._send(200, {"object": "list", "data": [{"id": m} for m in endpoint.models]})

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                endpoint.hits[f"POST {self.path}"] += 1
                if endpoint.chat_status != 200:
                    return self._send(endpoint.chat_status, {"error": "model not found"})
                message = {"role": "assistant", "content": endpoint.answer}
                self._send(200, {"choices": [{"index": 0, "message": message}]})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    e = Endpoint()
    e.thread.start()
    yield e
    e.httpd.shutdown()
    e.httpd.server_close()


def _judged(tmp_path: Path, url: str, *extra: str) -> list[str]:
    return _mine(tmp_path, "--judge", "judge-model", "--endpoint", url, *extra)


# -- --version -------------------------------------------------------------------------------------


def test_version_prints_the_distribution_and_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"catm {__version__}"


# -- the judge endpoint is checked before any work ------------------------------------------------


def test_an_endpoint_nobody_listens_on_is_exit_2_at_once(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    start = time.monotonic()
    result = runner.invoke(app, _judged(tmp_path, url))  # default --retries 4, --timeout 60
    assert time.monotonic() - start < 10
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # no traceback
    line = _error_line(result.output)
    assert f"judge endpoint {url} is not reachable" in line
    assert "Connection refused" in line
    assert "[Errno 111]" in line  # exception text is not read as rich markup
    assert "--keep-going skips this check" in line
    assert not (tmp_path / "labels.jsonl").exists()
    assert "stage 1" not in result.output  # mining never started


def test_keep_going_skips_the_check_and_keeps_every_file(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result = runner.invoke(app, _judged(tmp_path, url, "--keep-going", "--retries", "0"))
    assert result.exit_code == 0, result.output
    assert "1 of 1 judge requests failed" in _said(result.output)
    [label] = list(read_labels(tmp_path / "labels.jsonl"))
    assert isinstance(label, LabelRecord)
    assert [m.verdict for m in label.mined] == [Verdict.JUDGE_FAILED]


def test_an_endpoint_that_answers_passes_the_check(tmp_path: Path, endpoint: Endpoint) -> None:
    result = runner.invoke(app, _judged(tmp_path, endpoint.url))
    assert result.exit_code == 0, result.output
    assert endpoint.hits["GET /v1/models"] == 1
    assert endpoint.hits["POST /v1/chat/completions"] == 1  # the one file, nothing more
    [label] = list(read_labels(tmp_path / "labels.jsonl"))
    assert isinstance(label, LabelRecord)
    assert [m.verdict for m in label.mined] == [Verdict.NOT_RELEVANT]


def test_failed_judge_requests_are_counted_and_exit_1(tmp_path: Path, endpoint: Endpoint) -> None:
    endpoint.chat_status = 503  # the check passes (GET /models), every judge request fails
    result = runner.invoke(app, _judged(tmp_path, endpoint.url, "--retries", "0"))
    assert result.exit_code == 1, result.output
    line = _error_line(result.output)
    assert "1 of 1 judge requests failed" in line
    assert "--keep-going" in line
    assert (tmp_path / "labels.jsonl").exists()  # written, the failed files kept
    stats = json.loads((tmp_path / "labels.jsonl.stats.json").read_text())
    assert stats["judge_failed"] == 1
    result = runner.invoke(app, _judged(tmp_path, endpoint.url, "--retries", "0", "--keep-going"))
    assert result.exit_code == 0, result.output
    assert "warning: 1 of 1 judge requests failed" in _said(result.output)


def test_a_model_the_endpoint_does_not_serve_is_exit_2(tmp_path: Path, endpoint: Endpoint) -> None:
    endpoint.models = ["Qwen/Qwen3-32B"]
    result = runner.invoke(app, _judged(tmp_path, endpoint.url))
    assert result.exit_code == 2, result.output
    line = _error_line(result.output)
    assert "does not serve model 'judge-model'" in line
    assert "Qwen/Qwen3-32B" in line
    assert endpoint.hits["POST /v1/chat/completions"] == 0


def test_without_a_model_list_one_tiny_request_is_the_check(
    tmp_path: Path, endpoint: Endpoint
) -> None:
    endpoint.models_status = 404
    result = runner.invoke(app, _judged(tmp_path, endpoint.url))
    assert result.exit_code == 0, result.output
    assert endpoint.hits["POST /v1/chat/completions"] == 2  # the check, then the one file
    endpoint.chat_status = 404
    result = runner.invoke(app, _judged(tmp_path, endpoint.url))
    assert result.exit_code == 2, result.output
    assert "is --endpoint the API root" in _error_line(result.output)


def test_a_refused_key_is_exit_2(tmp_path: Path, endpoint: Endpoint) -> None:
    endpoint.models_status = 401
    result = runner.invoke(app, _judged(tmp_path, endpoint.url))
    assert result.exit_code == 2, result.output
    assert "check --api-key" in _error_line(result.output)


def test_dry_run_checks_and_runs_nothing(tmp_path: Path, endpoint: Endpoint) -> None:
    result = runner.invoke(app, _judged(tmp_path, endpoint.url, "--dry-run", "--limit", "3"))
    assert result.exit_code == 0, result.output
    said = _said(result.stdout)
    assert "dry run: nothing was mined" in said
    assert f"ask judge judge-model at {endpoint.url}" in said
    assert "stop after 3 trajectory record(s)" in said
    assert endpoint.hits["POST /v1/chat/completions"] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["i.jsonl", "t.jsonl"]
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result = runner.invoke(app, _judged(tmp_path, url, "--dry-run"))
    assert result.exit_code == 2, result.output  # a dry run says what the real run would hit


# -- --judge-cache, and --cache as its deprecated spelling ---------------------------------------


def test_judge_cache_and_its_deprecated_spelling(tmp_path: Path, endpoint: Endpoint) -> None:
    cache = tmp_path / "answers.sqlite"
    result = runner.invoke(app, _judged(tmp_path, endpoint.url, "--judge-cache", str(cache)))
    assert result.exit_code == 0, result.output
    assert cache.exists()
    assert "deprecated" not in result.output
    old = tmp_path / "old.sqlite"
    result = runner.invoke(app, _judged(tmp_path, endpoint.url, "--cache", str(old)))
    assert result.exit_code == 0, result.output
    assert old.exists()
    [note] = [line for line in result.output.splitlines() if "deprecated" in line]
    assert note.startswith("warning: --cache is deprecated")
    assert "--judge-cache" in note
    both = ["--cache", str(old), "--judge-cache", str(cache)]
    result = runner.invoke(app, _judged(tmp_path, endpoint.url, *both))
    assert result.exit_code == 2, result.output
    assert "differ" in _error_line(result.output)
    assert "--cache" not in runner.invoke(app, ["mine", "--help"]).output.replace(
        "--judge-cache", ""
    )


# -- outputs are checked before any work -----------------------------------------------------------


@pytest.mark.parametrize("where", ["under_a_file", "a_directory", "brackets"])
def test_an_unwritable_output_is_exit_2_before_mining(tmp_path: Path, where: str) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    output = {
        "under_a_file": blocker / "out" / "labels.jsonl",
        "a_directory": tmp_path,
        "brackets": tmp_path / "file" / "run[1]" / "labels.jsonl",
    }[where]
    url = f"http://127.0.0.1:{_closed_port()}/v1"  # would fail too, later: -o is said first
    result = runner.invoke(app, _mine(tmp_path, "--judge", "m", "--endpoint", url, output=output))
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    line = _error_line(result.output)
    assert line.startswith(f"error: -o {output}: cannot write a file there")  # brackets kept
    assert "stage 1" not in result.output


def test_output_folders_are_made_and_the_check_leaves_nothing(tmp_path: Path) -> None:
    output = tmp_path / "new" / "deeper" / "labels.jsonl"
    result = runner.invoke(app, _mine(tmp_path, "--dry-run", output=output))
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "new").exists()  # the dry run's probe removed what it made
    result = runner.invoke(app, _mine(tmp_path, output=output))
    assert result.exit_code == 0, result.output
    assert output.exists()


@pytest.mark.parametrize("flag", ["--plot", "--judge-cache"])
def test_other_outputs_are_checked_too(tmp_path: Path, flag: str) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    judge = ["--judge", "m"] if flag == "--judge-cache" else []
    result = runner.invoke(app, _mine(tmp_path, *judge, flag, str(blocker / "x")))
    assert result.exit_code == 2, result.output
    assert _error_line(result.output).startswith(f"error: {flag} {blocker / 'x'}: cannot write")
    assert not (tmp_path / "labels.jsonl").exists()


# -- numbers and missing inputs ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["--limit", "-1"], "--limit"),
        (["-j", "0"], "--jobs"),
        (["--retries", "-1"], "--retries"),
        (["--timeout", "0"], "--timeout"),
    ],
)
def test_out_of_range_numbers_are_exit_2(tmp_path: Path, argv: list[str], option: str) -> None:
    result = runner.invoke(app, _mine(tmp_path, *argv))
    assert result.exit_code == 2, result.output
    assert option in result.output
    assert not (tmp_path / "labels.jsonl").exists()


def test_stats_examples_must_not_be_negative(tmp_path: Path) -> None:
    runner.invoke(app, _mine(tmp_path))
    result = runner.invoke(app, ["stats", str(tmp_path / "labels.jsonl"), "--examples", "-1"])
    assert result.exit_code == 2, result.output


def test_a_missing_trajectory_file_is_found_before_the_others_are_mined(tmp_path: Path) -> None:
    trajectories, instances = _corpus(tmp_path)
    missing = tmp_path / "later[2].jsonl"
    args = ["mine", str(trajectories), str(missing), "-i", str(instances)]
    result = runner.invoke(app, [*args, "-o", str(tmp_path / "l.jsonl")])
    assert result.exit_code == 2, result.output
    assert _error_line(result.output) == (
        f"error: TRAJECTORIES {missing}: cannot open (No such file or directory)"
    )
    assert "stage 1" not in result.output


# -- catm stats on what is not a labels file ---------------------------------------------------


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"x": 1}\n{"y": 2}\n', "line 1: invalid label"),
        ("", "no rows, and no stats file beside it"),
        ("not json at all\n", "line 1: invalid label"),
    ],
)
def test_stats_on_a_file_that_is_not_labels_is_exit_2(
    tmp_path: Path, content: str, problem: str
) -> None:
    path = tmp_path / "rows[1].jsonl"
    path.write_text(content)
    result = runner.invoke(app, ["stats", str(path)])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    line = _error_line(result.output)
    assert line.startswith(f"error: {path}: not a catm labels file")
    assert problem in line


def test_stats_on_an_empty_run_is_fine(tmp_path: Path) -> None:
    """A run that mined nothing writes an empty labels file and its stats: a report, not an
    error."""
    trajectories, instances = _corpus(tmp_path)
    instances.write_text(json.dumps({"instance_id": "other", "repo": "o/p", "patch": ""}) + "\n")
    trajectories.write_text("")
    labels = tmp_path / "labels.jsonl"
    args = ["mine", str(trajectories), "-i", str(instances), "-o", str(labels)]
    assert runner.invoke(app, args).exit_code == 0
    result = runner.invoke(app, ["stats", str(labels)])
    assert result.exit_code == 0, result.output


def test_stats_says_how_many_rows_were_not_labels(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    assert runner.invoke(app, _mine(tmp_path, output=labels)).exit_code == 0
    with labels.open("a") as f:
        f.write('{"x": 1}\n')
    result = runner.invoke(app, ["stats", str(labels)])
    assert result.exit_code == 0, result.output
    assert "warning: 1 row(s) of" in _said(result.output)


def test_stats_png_is_checked_before_the_report(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    assert runner.invoke(app, _mine(tmp_path, output=labels)).exit_code == 0
    result = runner.invoke(app, ["stats", str(labels), "--png", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert _error_line(result.output).startswith(f"error: --png {tmp_path}: cannot write")
    assert "labels in" not in result.output


def test_extras_hints_keep_their_brackets(
    tmp_path: Path, hide_modules: Callable[..., None]
) -> None:
    labels = tmp_path / "labels.jsonl"
    assert runner.invoke(app, _mine(tmp_path, output=labels)).exit_code == 0
    hide_modules("matplotlib")
    result = runner.invoke(app, ["stats", str(labels), "--png", str(tmp_path / "w.png")])
    assert result.exit_code == 2, result.output
    assert "pip install 'catm[plot]'" in _error_line(result.output)
