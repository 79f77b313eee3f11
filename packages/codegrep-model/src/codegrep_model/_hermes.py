"""Hermes-style `<tool_call>{...}</tool_call>` blocks in plain text.

Qwen models emit these; vLLM turns them into native tool calls only when started with
`--enable-auto-tool-choice --tool-call-parser hermes`. Without that flag (or behind a proxy that
drops `tools`) they arrive as text, and this module recovers them.
"""

from __future__ import annotations

import json

from codegrep_records import parse_json
from grpo_rewards import tool_call_bodies, without_tool_calls

from codegrep_model.records import ToolCall

__all__ = ["split_hermes"]


def split_hermes(text: str, *, id_prefix: str = "call") -> tuple[str | None, tuple[ToolCall, ...]]:
    """The text outside the blocks and the calls inside them.

    A block that is not a JSON object with a `name` still becomes a call (with no name, its raw
    text as arguments), so the engine answers it with corrective feedback instead of dropping it.
    The blocks are read by grpo-rewards' `tool_call_bodies` (one rule for the engine and the
    rewards: an unclosed block at the end runs to the end of the text).
    """
    calls: list[ToolCall] = []
    for i, raw in enumerate(tool_call_bodies(text)):
        try:
            data = parse_json(raw)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            args = data.get("arguments", data.get("parameters", {}))
            arguments = args if isinstance(args, str) else json.dumps(args)
            calls.append(ToolCall(id=f"{id_prefix}_{i}", name=data["name"], arguments=arguments))
        else:
            calls.append(ToolCall(id=f"{id_prefix}_{i}", name="", arguments=raw))
    if not calls:
        return text, ()
    rest = without_tool_calls(text)
    return rest or None, tuple(calls)
