"""The text formats a rollout's completions come in, read one way for every package: Hermes
`<tool_call>` blocks and `<think>` reasoning. The episode (codegrep-model), the rewards, and
CodeScout's rows all read them here, so an unclosed block means the same to the engine that
acts on a reply and to the reward that scores it.

The rules:
- A `<tool_call>` block still open at the end of the text (a generation cut at its length
  limit) runs to the end, as vLLM's hermes tool parser reads it.
- A block is a call when its body is a JSON object with a string `name`; its arguments are
  `arguments`, else `parameters`, else `{}`, as written (a JSON string stays a string). Any
  other body is a call without a name, kept so the engine can answer it and the reward can
  count it.
- `<think>…</think>` blocks are reasoning, in any case; text before the last `</think>` is too
  (a chat template that opens the block in the prompt leaves only its close in the reply). A
  `<think>` left open means the answer never came.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "HermesCall",
    "hermes_calls",
    "split_reasoning",
    "tool_call_bodies",
    "without_tool_calls",
]

_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)


def tool_call_bodies(text: str) -> list[str]:
    """The bodies of the Hermes `<tool_call>` blocks of `text`, stripped, in order."""
    return [m.group(1).strip() for m in _TOOL_CALL.finditer(text)]


@dataclass(frozen=True)
class HermesCall:
    """One `<tool_call>` block of a text, read by the rule above."""

    #: The block's body, stripped.
    body: str
    #: The tool's name; None when the body is not a JSON object with a string `name`.
    name: str | None
    #: `arguments` (else `parameters`, else `{}`) as written; None when `name` is None.
    arguments: object = None


def hermes_calls(text: str, *, decode: Callable[[str], object] = json.loads) -> list[HermesCall]:
    """The `<tool_call>` blocks of `text` as calls, in order.

    `decode` reads a body's JSON; whatever it raises as `ValueError` or `RecursionError` (not
    JSON, a 5,000-digit number, deep nesting) makes a call without a name. A caller with a
    stricter reader passes it (the engine passes codegrep-records' `parse_json`).

    >>> [(c.name, c.arguments) for c in hermes_calls(
    ...     '<tool_call>{"name": "grep", "arguments": {"pattern": "x"}}</tool_call> '
    ...     '<tool_call>not json</tool_call>')]
    [('grep', {'pattern': 'x'}), (None, None)]
    """
    calls: list[HermesCall] = []
    for body in tool_call_bodies(text):
        try:
            data = decode(body)
        except (ValueError, RecursionError):
            data = None
        name = data.get("name") if isinstance(data, dict) else None
        if isinstance(data, dict) and isinstance(name, str):
            calls.append(HermesCall(body, name, data.get("arguments", data.get("parameters", {}))))
        else:
            calls.append(HermesCall(body, None))
    return calls


def without_tool_calls(text: str) -> str:
    """`text` with its `<tool_call>` blocks removed, stripped."""
    return _TOOL_CALL.sub("", text).strip()


def split_reasoning(text: str) -> tuple[str, bool]:
    """(what follows the reasoning, whether a `<think>` block was left open)."""
    body = _THINK.sub("", text)
    closes = list(_THINK_CLOSE.finditer(body))
    if closes:
        body = body[closes[-1].end() :]
    return body, _THINK_OPEN.search(body) is not None
