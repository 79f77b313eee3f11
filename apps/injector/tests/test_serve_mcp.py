"""`codegrep serve --mcp`: the real command as a subprocess, driven over stdio by the official
`mcp` client (`stdio_client` + `ClientSession`), on a real git repository made here."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="needs the 'serve' extra")

import httpx
from codegrep.serve_http import build_app, serve_in_thread
from codegrep.service import LocalizeService
from codegrep_gate import Retriever, calibrate, load_calibration, write_calibration
from codegrep_gate._records import DataRef
from codegrep_model import __version__ as model_version
from codegrep_records import Prediction
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

ISSUE = (
    "Refunds fail: `Invoice.add_line(-5)` raises\n\n"
    "    ValueError: negative amounts are not allowed on an invoice"
)
FILES = {
    "billing/__init__.py": "",
    "billing/invoice.py": (
        "class Invoice:\n"
        "    def add_line(self, amount):\n"
        "        if amount < 0:\n"
        "            raise ValueError('negative amounts are not allowed on an invoice')\n"
    ),
    "billing/tax.py": "def vat_rate(country):\n    return 0.19\n",
}


def _calibration_file(tmp_path: Path) -> Path:
    calibration = calibrate(
        [
            Prediction(instance_id=f"i{i}", files=("a.py", "b.py"), retriever="lexical")
            for i in range(40)
        ],
        {f"i{i}": frozenset({"a.py"}) for i in range(40)},
        retriever=Retriever(name="lexical", version=model_version),
        data=DataRef(name="in-memory test predictions"),
        resamples=200,
    )
    return write_calibration(tmp_path / "cal.json", calibration)


async def _check_tool(session: ClientSession, repo: Path, allowed: Path, outside: Path) -> None:
    """What a client sees of the tool on any transport (the server gates by default)."""
    init = await session.initialize()
    assert init.server_info.name == "codegrep"

    tools = (await session.list_tools()).tools
    assert [t.name for t in tools] == ["localize_files"]
    tool = tools[0]
    schema = tool.input_schema
    props = schema["properties"]
    assert set(props) == {"repo", "issue", "commit", "gate", "inject", "max_files", "top"}
    top_int = [b for b in props["top"]["anyOf"] if b.get("type") == "integer"]
    assert top_int == [{"type": "integer", "minimum": 1, "maximum": 100}]
    assert sorted(schema["required"]) == ["issue", "repo"]
    assert schema["additionalProperties"] is False  # closed, as the server enforces
    assert props["gate"].get("default") is None  # absent: the server's default
    assert "absolute" in props["repo"]["description"].lower()
    inject_enum = [b.get("enum") for b in props["inject"]["anyOf"] if b.get("enum")]
    assert inject_enum == [["openhands", "markdown", "agent_context", "json"]]
    number = [b for b in props["gate"]["anyOf"] if b.get("type") == "number"]
    assert number == [{"type": "number", "minimum": 0, "maximum": 1}]
    assert tool.output_schema is not None
    assert "injected" in tool.output_schema["properties"]
    assert "issue" in tool.description
    hints = tool.annotations
    assert hints is not None
    assert (hints.read_only_hint, hints.idempotent_hint, hints.open_world_hint) == (
        True, True, False
    )  # fmt: skip
    assert hints.destructive_hint is False

    result = await session.call_tool(
        "localize_files", {"repo": str(repo), "issue": ISSUE, "inject": "openhands"}
    )
    assert not result.is_error, result.content
    data = result.structured_content
    assert data is not None
    assert data["files"] == ["billing/invoice.py"]
    assert data["injected"] == ["billing/invoice.py"]
    assert data["gate"]["summary"].startswith("1 of 1 files injected")
    assert data["injection"].startswith("<candidate_files>")
    text = result.content[0]
    assert text.type == "text"
    assert json.loads(text.text)["files"] == data["files"]

    # at a commit, ungated; a numeric gate; max_files
    result = await session.call_tool(
        "localize_files", {"repo": str(repo), "issue": ISSUE, "commit": "HEAD", "gate": False}
    )
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert result.structured_content["gate"] is None
    result = await session.call_tool(
        "localize_files", {"repo": str(repo), "issue": ISSUE, "gate": 1, "max_files": 1}
    )
    assert not result.is_error, result.content
    assert result.structured_content is not None
    gate = result.structured_content["gate"]
    assert gate["config"] == {"threshold": 1, "bound": "lower", "basis": "auto", "max_files": 1}
    assert result.structured_content["top"] is None
    result = await session.call_tool(
        "localize_files", {"repo": str(repo), "issue": ISSUE, "top": 3}
    )
    assert not result.is_error, result.content
    assert result.structured_content is not None
    top = result.structured_content["top"]
    assert top
    assert top[0]["path"] == "billing/invoice.py"
    assert len(top) <= 3

    # the allow-lists hold here too: error results the model can read
    for repo_arg, said in (
        (str(outside), "outside the folders"),
        (str(allowed / "link"), "outside the folders"),
        (f"{allowed}/../outside", "outside the folders"),
        ("psf/requests", "allow-list"),
    ):
        result = await session.call_tool(
            "localize_files", {"repo": repo_arg, "issue": ISSUE, "commit": "HEAD"}
        )
        assert result.is_error, repo_arg
        message = result.content[0].text  # type: ignore[union-attr]
        assert said in message, message
        # the server's reason alone, as HTTP gives it (the SDK's prefix for a raised error
        # is not in front of it)
        assert not message.startswith("Error executing tool"), message

    # bad arguments: refused in one line naming the field, no pydantic link
    for arguments, field in (
        ({"inject": "html"}, "inject"),
        ({"max_files": "3"}, "max_files"),
        ({"max_files": 0}, "max_files"),
        ({"top": 0}, "top"),
        ({"gate": 1.5}, "gate"),
        ({"gate": "yes"}, "gate"),
        ({"unknown": 1}, "unknown"),
        ({"commit": 7}, "commit"),
    ):
        result = await session.call_tool(
            "localize_files", {"repo": str(repo), "issue": ISSUE, **arguments}
        )
        assert result.is_error, arguments
        message = result.content[0].text  # type: ignore[union-attr]
        assert message.startswith("invalid arguments: "), message
        assert field in message, (arguments, message)
        assert "\n" not in message, message
        assert "http" not in message, message


def _repos(tmp_path: Path, make_repo: Callable[[Path, dict[str, str]], Path]) -> tuple[Path, ...]:
    allowed = tmp_path / "allowed"
    repo = make_repo(allowed / "billing-repo", FILES)
    outside = make_repo(tmp_path / "outside", FILES)
    (allowed / "link").symlink_to(outside, target_is_directory=True)
    return allowed, repo, outside


async def test_mcp_server_over_stdio(
    tmp_path: Path, make_repo: Callable[[Path, dict[str, str]], Path]
) -> None:
    allowed, repo, outside = _repos(tmp_path, make_repo)
    cal = _calibration_file(tmp_path)
    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "codegrep"),
        args=["serve", "--mcp", "--allow-root", str(allowed), "--calibration", str(cal)],
        cwd=str(tmp_path),
    )
    with (tmp_path / "stderr.txt").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await _check_tool(session, repo, allowed, outside)
    stderr = (tmp_path / "stderr.txt").read_text()
    assert "Traceback" not in stderr


async def test_mcp_over_streamable_http_and_the_servers_gate_default(
    tmp_path: Path, make_repo: Callable[[Path, dict[str, str]], Path]
) -> None:
    """The HTTP server's /mcp, with the official client; `--no-gate` holds over MCP too."""
    allowed, repo, outside = _repos(tmp_path, make_repo)
    cal = load_calibration(_calibration_file(tmp_path))
    gated = LocalizeService(allow_roots=[allowed], calibration=cal)
    with _serving(gated) as url:
        async with (
            streamable_http_client(f"{url}/mcp") as (read, write),
            ClientSession(read, write) as session,
        ):
            await _check_tool(session, repo, allowed, outside)
    ungated = LocalizeService(allow_roots=[allowed], calibration=cal, gate_by_default=False)
    with _serving(ungated) as url:
        async with (
            streamable_http_client(f"{url}/mcp") as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("localize_files", {"repo": str(repo), "issue": ISSUE})
            assert not result.is_error, result.content
            assert result.structured_content is not None
            assert result.structured_content["gate"] is None  # the server's default held
            served = httpx.post(f"{url}/localize", json={"repo": str(repo), "issue": ISSUE})
            timing = ("latency_s", "queue_s")
            assert {k: v for k, v in served.json().items() if k not in timing} == {
                k: v for k, v in result.structured_content.items() if k not in timing
            }


@contextmanager
def _serving(service: LocalizeService) -> Iterator[str]:
    """`build_app` under a real uvicorn on a free port of 127.0.0.1, in a thread."""
    with serve_in_thread(build_app(service)) as url:
        yield url
