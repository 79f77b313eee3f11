"""`codegrep serve --mcp`: the real command as a subprocess, driven over stdio by the official
`mcp` client (`stdio_client` + `ClientSession`), on a real git repository made here."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="needs the 'serve' extra")

from codegrep_gate import DataRef, Retriever, calibrate, write_calibration
from codegrep_model import __version__ as model_version
from codegrep_records import Prediction
from mcp import ClientSession, StdioServerParameters, stdio_client

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


async def test_mcp_server_over_stdio(
    tmp_path: Path, make_repo: Callable[[Path, dict[str, str]], Path]
) -> None:
    allowed = tmp_path / "allowed"
    repo = make_repo(allowed / "billing-repo", FILES)
    outside = make_repo(tmp_path / "outside", FILES)
    (allowed / "link").symlink_to(outside, target_is_directory=True)
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
    cal = write_calibration(tmp_path / "cal.json", calibration)
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
            init = await session.initialize()
            assert init.server_info.name == "codegrep"

            tools = (await session.list_tools()).tools
            assert [t.name for t in tools] == ["localize_files"]
            tool = tools[0]
            schema = tool.input_schema
            assert set(schema["properties"]) == {"repo", "issue", "commit", "gate", "inject"}
            assert sorted(schema["required"]) == ["issue", "repo"]
            assert schema["properties"]["gate"]["default"] is True
            assert "absolute" in schema["properties"]["repo"]["description"].lower()
            assert tool.output_schema is not None
            assert "injected" in tool.output_schema["properties"]
            assert tool.description
            assert "issue" in tool.description

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

            # at a commit, and ungated
            result = await session.call_tool(
                "localize_files",
                {"repo": str(repo), "issue": ISSUE, "commit": "HEAD", "gate": False},
            )
            assert not result.is_error, result.content
            assert result.structured_content is not None
            assert result.structured_content["gate"] is None

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
            result = await session.call_tool(
                "localize_files", {"repo": str(repo), "issue": ISSUE, "inject": "html"}
            )
            assert result.is_error
            assert "inject" in result.content[0].text  # type: ignore[union-attr]
    stderr = (tmp_path / "stderr.txt").read_text()
    assert "Traceback" not in stderr
