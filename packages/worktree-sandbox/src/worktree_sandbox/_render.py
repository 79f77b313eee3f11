"""Rendering tool output for a model: capped in lines and bytes, with a marker saying how to narrow.

The marker is part of the contract: a truncated result always ends with one line that starts with
'[truncated:' and says what was cut and which argument narrows the next call.
"""

from __future__ import annotations

__all__ = ["cap_line", "cap_lines"]


def cap_line(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}… [+{len(text) - max_chars} chars]"


def cap_lines(lines: list[str], *, max_lines: int, max_bytes: int) -> tuple[list[str], bool]:
    """Keep the leading lines that fit both caps; return them and whether anything was cut."""
    kept: list[str] = []
    used = 0
    for line in lines:
        size = len(line.encode("utf-8", errors="replace")) + 1
        if len(kept) >= max_lines or used + size > max_bytes:
            return kept, True
        kept.append(line)
        used += size
    return kept, False
