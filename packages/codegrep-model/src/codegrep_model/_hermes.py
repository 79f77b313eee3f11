"""Hermes-style `<tool_call>{...}</tool_call>` blocks in plain text.

Qwen models emit these; vLLM turns them into native tool calls only when started with
`--enable-auto-tool-choice --tool-call-parser hermes`. Without that flag (or behind a proxy that
drops `tools`) they arrive as text, and this module recovers them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from codegrep_records.io import parse_json
from grpo_rewards import hermes_calls, without_tool_calls

from codegrep_model.records import ToolCall

__all__ = ["hermes_system", "split_hermes"]


def split_hermes(text: str, *, id_prefix: str = "call") -> tuple[str | None, tuple[ToolCall, ...]]:
    """The text outside the blocks and the calls inside them.

    The blocks and their calls are read by grpo-rewards' `hermes_calls`, so the engine that acts
    on a reply and the reward that scores it read it by one rule (an unclosed block at the end
    runs to the end of the text; `arguments`, else `parameters`, else `{}`); the JSON goes
    through codegrep-records' `parse_json`. A block that is not a JSON object with a `name`
    still becomes a call (with no name, its raw text as arguments), so the engine answers it
    with corrective feedback instead of dropping it.
    """
    calls: list[ToolCall] = []
    for i, call in enumerate(hermes_calls(text, decode=parse_json)):
        if call.name is None:
            calls.append(ToolCall(id=f"{id_prefix}_{i}", name="", arguments=call.body))
            continue
        args = call.arguments
        arguments = args if isinstance(args, str) else json.dumps(args)
        calls.append(ToolCall(id=f"{id_prefix}_{i}", name=call.name, arguments=arguments))
    if not calls:
        return text, ()
    rest = without_tool_calls(text)
    return rest or None, tuple(calls)


def hermes_system(system: str, tools: Sequence[Mapping[str, Any]]) -> str:
    """The system message with the tools, as ms-swift 4.6's hermes agent template writes it."""
    lines = "\n".join(json.dumps(dict(t), ensure_ascii=False) for t in tools)
    return (
        f"{system}\n\n# Tools\n\nYou may call one or more functions to assist with the user "
        "query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n"
        f"<tools>\n{lines}\n</tools>\n\nFor each function call, return a json object with "
        "function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )
