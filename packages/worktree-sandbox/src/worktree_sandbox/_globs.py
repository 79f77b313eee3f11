"""Glob patterns over repository paths, one semantics for every backend.

Rules (gitignore-like, documented in the README): '*' matches within one path component, '**'
matches any number of components, '?' one character, '[...]' a set ('[!...]' negated). A pattern
without '/' matches the file name at any depth; a pattern with '/' is anchored at the search root.
Matching is case-sensitive, like git.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["GlobSyntaxError", "compile_glob"]


class GlobSyntaxError(ValueError):
    """A glob that cannot be compiled; the message is written for the model."""


def _translate_component_chars(pattern: str, i: int, out: list[str]) -> int:
    c = pattern[i]
    if c == "*":
        out.append("[^/]*")
    elif c == "?":
        out.append("[^/]")
    elif c == "[":
        j = i + 1
        if j < len(pattern) and pattern[j] in "!^":
            j += 1
        if j < len(pattern) and pattern[j] == "]":
            j += 1
        while j < len(pattern) and pattern[j] != "]":
            j += 1
        if j >= len(pattern):
            raise GlobSyntaxError(f"unclosed '[' in glob {pattern!r}")
        body = pattern[i + 1 : j]
        negate = body[:1] in ("!", "^")
        if negate:
            body = body[1:]
        body = body.replace("\\", "\\\\").replace("/", "")
        for special in "[&~|":  # literal in a glob set; set operators or nesting in `re`
            body = body.replace(special, "\\" + special)
        if not body:  # e.g. '[/]': a set of nothing a path component can hold
            out.append("[^/]" if negate else "(?!)")
        else:
            out.append(f"[{'^/' if negate else ''}{body}]")
        return j + 1
    else:
        out.append(re.escape(c))
    return i + 1


@lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """Compile a glob to a regex matched against a path relative to the search root."""
    pat = pattern.strip()
    if not pat:
        raise GlobSyntaxError("empty glob")
    anchored = "/" in pat.rstrip("/")
    pat = pat.lstrip("/") if anchored else pat
    if pat.startswith("./"):
        pat = pat[2:]
    out: list[str] = []
    i = 0
    while i < len(pat):
        if pat.startswith("**", i):
            before_ok = i == 0 or pat[i - 1] == "/"
            after = pat[i + 2 : i + 3]
            if before_ok and after == "/":
                out.append("(?:[^/]+/)*")
                i += 3
                continue
            if before_ok and after == "":
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*")
            i += 2
            continue
        i = _translate_component_chars(pat, i, out)
    body = "".join(out)
    regex = f"^{body}$" if anchored else f"^(?:.*/)?{body}$"
    try:
        return re.compile(regex)
    except re.error as exc:  # pragma: no cover - translation only emits valid syntax
        raise GlobSyntaxError(f"invalid glob {pattern!r}: {exc}") from exc
