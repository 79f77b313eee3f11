"""One escaper for the text that goes into a Markdown table cell (or a line of Markdown).

A cell's text can come from a file a user was given (a predictions file's `retriever`, a run's
configuration name): a `|` would open another column, a line break another row (`"mine | 3 |
0.000\\n| FORGED-ROW | 3 | 1.000"` printed a forged row). So a backslash is doubled first (a
cell ending in `\\` would otherwise escape the `|` after it), then `|` becomes `\\|`, and a line
break or any other control character its visible escape (`\\n`, `\\r`, `\\x1b`): what GitHub,
CommonMark-with-tables and pandoc render as the text it was, on one row. `<`, `>` and `&` become
entities, so a cell is never HTML. Not for: the terminal tables (rich `Text` renders any text as
is) or CSV (the csv module quotes).
"""

from __future__ import annotations

import re

__all__ = ["md_cell"]

# C0 and C1 controls, DEL, and Unicode's line and paragraph separators.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _control(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or (
        f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"
    )


def md_cell(text: str) -> str:
    """`text` as one Markdown table cell: no `|`, line break or HTML tag can leave it."""
    text = text.replace("\\", "\\\\").replace("|", "\\|")
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _CONTROL.sub(_control, text)
