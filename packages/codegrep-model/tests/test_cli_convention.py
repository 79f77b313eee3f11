"""`codegrep-model batch` and the toolkit's flag convention: --version, INSTANCES or -i, -o and
--rollouts checked before any work, --timeout (and its old spelling --timeout-s), a --repo filter
that must match, an endpoint checked before the work; exit 2 for bad input and 1 for failed
rollouts, each said in one `error:` line."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from codegrep_model import __version__
from codegrep_model.cli import app
from typer.testing import CliRunner

runner = CliRunner()


@pytest.fixture
def rows(tmp_path: Path, small_repo: Path) -> dict[str, Any]:
    sha = subprocess.run(
        ["git", "-C", str(small_repo), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    instances = tmp_path / "instances.jsonl"
    instances.write_text(
        json.dumps(
            {
                "instance_id": "shop-0",
                "repo": "acme/shop",
                "base_commit": sha,
                "problem_statement": "`Cart.total_price` ignores discounts",
            }
        )
        + "\n"
    )
    out = tmp_path / "out" / "pred.jsonl"
    opts = ["-o", str(out), "--cache", str(tmp_path / "cache")]
    opts += ["--source", str(small_repo.parent / "{name}")]
    return {"instances": instances, "out": out, "opts": opts, "tmp": tmp_path}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_version_flag_and_command() -> None:
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0
    assert res.stdout == f"codegrep-model {__version__}\n"
    assert runner.invoke(app, ["version"]).stdout == f"{__version__}\n"


def test_instances_positional_or_dash_i(rows: dict[str, Any]) -> None:
    inst, opts = str(rows["instances"]), rows["opts"]
    for argv in (["batch", inst], ["batch", "-i", inst], ["batch", inst, "--instances", inst]):
        res = runner.invoke(app, [*argv, *opts, "--dry-run"])
        assert res.exit_code == 0, res.output
        assert "1 instances, 0 already done, 1 to run" in res.output
    res = runner.invoke(app, ["batch", *opts])
    assert res.exit_code == 2
    assert res.stderr == "error: name the instances file: INSTANCES or -i/--instances FILE\n"
    other = rows["tmp"] / "other.jsonl"
    res = runner.invoke(app, ["batch", inst, "-i", str(other), *opts])
    assert res.exit_code == 2
    assert f"error: two instances files, INSTANCES {inst} and -i {other}; give one" in res.stderr


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-o", "{tmp}/a-file/pred.jsonl"], "error: cannot write -o {tmp}/a-file/pred.jsonl: "
         "{tmp}/a-file is not a directory"),
        (["--rollouts", "{tmp}"], "error: cannot write --rollouts {tmp}: it is a directory"),
        (["--rollouts", "{tmp}/out/pred.jsonl"], "error: -o and --rollouts are the same file"),
        (["--rollouts", "{tmp}/r.jsonl.gz"], "error: --rollouts {tmp}/r.jsonl.gz: batch appends"),
        (["--timeout", "0"], "error: --timeout must be a positive number of seconds, got 0"),
        (["--timeout", "5", "--timeout-s", "6"], "error: --timeout 5 and --timeout-s 6"),
        (["--repo", "acme/shoe"], "error: --repo acme/shoe: no instance of this repository in"),
        (["--base-url", "http://127.0.0.1:{port}/v1"], "error: --base-url "
         "http://127.0.0.1:{port}/v1 cannot be reached: ConnectError"),
    ],
)  # fmt: skip
def test_bad_input_exits_2_before_any_work(
    rows: dict[str, Any], extra: list[str], message: str
) -> None:
    tmp = rows["tmp"]
    (tmp / "a-file").write_text("")
    port = _closed_port()
    filled = [a.format(tmp=tmp, port=port) for a in extra]
    res = runner.invoke(app, ["batch", "-i", str(rows["instances"]), *rows["opts"], *filled])
    assert res.exit_code == 2
    (line,) = [x for x in res.stderr.splitlines() if x.startswith("error:")]
    assert line.startswith(message.format(tmp=tmp, port=port))
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert not (tmp / "cache").exists()  # nothing cloned
    assert not rows["out"].exists()  # nothing written, not even the folder
    assert not rows["out"].parent.exists()


def test_negative_limit_is_refused(rows: dict[str, Any]) -> None:
    res = runner.invoke(
        app, ["batch", "-i", str(rows["instances"]), *rows["opts"], "--limit", "-1"]
    )
    assert res.exit_code == 2
    assert "--limit" in res.output
    assert not rows["out"].exists()


@pytest.mark.parametrize("flag", ["--timeout", "--timeout-s"])
def test_timeout_is_seconds_per_request_and_failures_exit_1(
    rows: dict[str, Any], chat_server: Any, flag: str
) -> None:
    chat_server.script.append(chat_server.text_reply('{"files": []}', delay_s=1.5))
    res = runner.invoke(
        app,
        ["batch", "-i", str(rows["instances"]), *rows["opts"], "--base-url",
         chat_server.base_url, "--model", "m", flag, "0.3"],
    )  # fmt: skip
    assert res.exit_code == 1, res.output
    assert "shop-0: EndpointTimeoutError" in res.stderr
    assert "no reply within 0.3 s" in res.stderr
    assert res.stderr.splitlines()[-1] == (
        "error: 1 of 1 instance(s) failed; they have no prediction, and a rerun retries them"
    )
    assert rows["out"].read_text() == ""  # no prediction for the failed instance
