"""The text formats a rollout's completions come in, read one way for every package: Hermes
`<tool_call>` blocks and `<think>` reasoning. The episode (codegrep-model), the rewards, and
CodeScout's rows all read them here, so an unclosed block means the same to the engine that
acts on a reply and to the reward that scores it.

The rules:
- A `<tool_call>` block still open at the end of the text (a generation cut at its length
  limit) runs to the end, as vLLM's hermes tool parser reads it.
- `<think>…</think>` blocks are reasoning, in any case; text before the last `</think>` is too
  (a chat template that opens the block in the prompt leaves only its close in the reply). A
  `<think>` left open means the answer never came.
"""

from __future__ import annotations

import re

__all__ = ["split_reasoning", "tool_call_bodies", "without_tool_calls"]

_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)


def tool_call_bodies(text: str) -> list[str]:
    """The bodies of the Hermes `<tool_call>` blocks of `text`, stripped, in order."""
    return [m.group(1).strip() for m in _TOOL_CALL.finditer(text)]


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
