"""Put CodeGrep's files in front of an OpenHands agent, through a running `codegrep serve`.

Part 1 (runs anywhere httpx is installed, which `codegrep` brings): POST the issue to the
server's /localize, asking for the `agent_context` rendering, and print what would be injected.

Part 2 (`--run-agent`; NEEDS `pip install openhands-sdk` and an LLM key, and is not run by this
repository's tests): build an OpenHands-SDK `AgentContext(user_message_suffix=...)` from that
text and run an agent on the issue in the repository, the way the SDK's README shows.

    codegrep serve --allow-root ~/src &
    python apps/injector/examples/openhands_client.py --repo ~/src/app --issue issue.md
    python apps/injector/examples/openhands_client.py --repo ~/src/app --issue issue.md \\
        --run-agent --model anthropic/claude-sonnet-4-5   # needs openhands-sdk, LLM_API_KEY
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx


def localize(
    url: str, repo: str, issue: str, *, commit: str | None, gate: bool | None
) -> dict[str, Any]:
    """The server's answer, with the injected files rendered for `AgentContext`."""
    body: dict[str, Any] = {"repo": repo, "issue": issue, "inject": "agent_context"}
    if commit is not None:
        body["commit"] = commit
    if gate is not None:
        body["gate"] = gate
    r = httpx.post(f"{url.rstrip('/')}/localize", json=body, timeout=120)
    if r.status_code != 200:
        try:  # the server's errors are {"error": {"code": ..., "message": ...}}
            message = r.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = r.text
        raise SystemExit(f"error: HTTP {r.status_code}: {message}")
    answer: dict[str, Any] = r.json()
    return answer


def run_agent(repo: str, issue: str, suffix: str, model: str) -> None:
    """NEEDS openhands-sdk: one agent run on `issue` with `suffix` after the user's message."""
    try:  # imported here: part 1 of this example must run without it
        from openhands.sdk import LLM, Agent, AgentContext, Conversation, Tool
    except ImportError:
        raise SystemExit("--run-agent needs the OpenHands SDK: pip install openhands-sdk") from None
    from pydantic import SecretStr

    llm = LLM(model=model, api_key=SecretStr(os.environ["LLM_API_KEY"]))
    # The files go after the issue text, as the shipped OpenHands template puts them: a lead
    # the agent may follow, not an order. Empty text (nothing cleared the gate) adds nothing.
    context = AgentContext(user_message_suffix=suffix or None)
    agent = Agent(
        llm=llm,
        tools=[Tool(name="TerminalTool"), Tool(name="FileEditorTool")],
        agent_context=context,
    )
    conversation = Conversation(agent=agent, workspace=repo)
    conversation.send_message(issue)
    conversation.run()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8765", help="the codegrep server")
    parser.add_argument("--repo", required=True, help="absolute folder (or owner/name)")
    parser.add_argument("--issue", required=True, help="issue text file, or - for stdin")
    parser.add_argument("--commit")
    parser.add_argument("--gate", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--run-agent", action="store_true", help="needs openhands-sdk")
    parser.add_argument("--model", default="anthropic/claude-sonnet-4-5")
    args = parser.parse_args()
    issue = sys.stdin.read() if args.issue == "-" else Path(args.issue).read_text()
    # the server takes absolute folder paths (or owner/name with --commit)
    local = Path(args.repo).expanduser()
    repo = str(local.resolve()) if local.exists() else args.repo
    answer = localize(args.url, repo, issue, commit=args.commit, gate=args.gate)
    decision = answer.get("gate")
    print(
        json.dumps(
            {
                "files": answer["files"],
                "injected": answer["injected"],
                "gate": decision["summary"] if decision else "not gated",
            },
            indent=2,
        ),
        file=sys.stderr,
    )
    suffix = answer["injection"] or ""
    print(suffix or "(nothing to inject: the prompt stays as it was)")
    if args.run_agent:
        run_agent(repo, issue, suffix, args.model)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
