"""Glob patterns over repository paths, one semantics for every backend.

Rules (gitignore-like, documented in the README): '*' matches within one path component, '**'
matches any number of components, '?' one character, '[...]' a set ('[!...]' negated). A pattern
without '/' matches the file name at any depth; a pattern with '/' is anchored at the search root.
Matching is case-sensitive, like git.

A glob is model input: it is compiled to a regex that runs in time linear in the path for each
piece of the pattern, never one that backtracks over the ways several wildcards could split a
path (`'**/' * 40 + 'x'` or `'*a' * 100 + 'b'` once took exponential time). Each run of '*'
between two fixed pieces, and each '**' between two groups of components, finds the leftmost
place where what follows it fits and keeps it (an atomic group, `(?>...)`): for wildcards that
is always a right choice, since the next wildcard can take up whatever the leftmost place left.
Not for: walking trees (see `Tree`).
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["GlobSyntaxError", "compile_glob"]


class GlobSyntaxError(ValueError):
    """A glob that cannot be compiled; the message is written for the model."""


# Tokens besides one-character regexes (a literal, '?' as '[^/]', a set).
_STAR = "*"  # any run of characters within a component
_GLOBSTAR = "**"  # a whole component '**': any number of components
_SEP = "/"


def _set_regex(pattern: str, i: int) -> tuple[str, int]:
    """The regex of the set starting at `pattern[i] == '['` and the index after it."""
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
    # literal in a glob set; set operators, nesting, or (']', legal first in a glob set) the
    # set's end in `re`, where the set no longer starts with it: '[!]a]' is '[^/\]a]'
    for special in "[]&~|":
        body = body.replace(special, "\\" + special)
    if not body:  # e.g. '[/]': a set of nothing a path component can hold
        return ("[^/]" if negate else "(?!)"), j + 1
    return f"[{'^/' if negate else ''}{body}]", j + 1


def _tokens(pat: str) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(pat):
        c = pat[i]
        if pat.startswith("**", i):
            whole = (i == 0 or pat[i - 1] == "/") and pat[i + 2 : i + 3] in ("/", "")
            out.append(_GLOBSTAR if whole else _STAR)
            i += 2
        elif c == "*":
            out.append(_STAR)
            i += 1
        elif c == "/":
            out.append(_SEP)
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            regex, i = _set_regex(pat, i)
            out.append(regex)
        else:
            out.append(re.escape(c))
            i += 1
    return out


def _component(tokens: list[str]) -> str:
    """One component's regex: fixed pieces joined by runs of '*'; every run but the last
    finds the leftmost place of the piece after it and keeps it."""
    pieces: list[str] = [""]
    for t in tokens:
        if t == _STAR:
            if pieces[-1] or len(pieces) == 1:
                pieces.append("")
            continue  # '**' inside a component, or '***': one run
        pieces[-1] += t
    if len(pieces) == 1:
        return pieces[0]
    first, *middle, last = pieces
    return first + "".join(f"(?>[^/]*?{p})" for p in middle if p) + "[^/]*" + last


def _translate(pat: str, anchored: bool) -> str:
    # The pattern as segments between '/': a globstar, or a component's tokens.
    segments: list[list[str] | None] = [[]]  # None: a globstar
    for t in _tokens(pat):
        if t == _SEP:
            segments.append([])
        elif t == _GLOBSTAR:
            segments[-1] = None
        else:
            current = segments[-1]
            assert current is not None  # a globstar is always a whole segment
            current.append(t)
    if not anchored:
        segments.insert(0, None)  # the file name at any depth: '**/' before it
    trailing = segments[-1] is None  # 'a/**': one or more components after 'a/'
    # Groups of components between globstars (consecutive globstars are one).
    groups: list[list[str]] = [[]]
    for seg in segments[:-1] if trailing else segments:
        if seg is None:
            if groups[-1] or len(groups) == 1:
                groups.append([])
        else:
            groups[-1].append(_component(seg))
    # A component regex never crosses '/', so '/' after each keeps every match to whole ones.
    head, *rest = groups
    out = ["/".join(head)]
    if not rest:
        if trailing:
            out.append("/.*" if head else ".*")
    else:
        *middle, last = rest
        if head:
            out.append("/")
        for group in middle:  # the leftmost place the group fits, kept
            out.append(f"(?>(?:[^/]+/)*?{'/'.join(group)}/)")
        if last and trailing:  # followed by '/.*': its leftmost place, as a middle group
            out.append(f"(?>(?:[^/]+/)*?{'/'.join(last)}/).*")
        elif last:
            # The last group's place is fixed: its last component ends the path. Found from
            # the right ('.*/' is C's fastest loop) by counting '/'s, kept, then matched once.
            out.append(f"(?>(?:.*/)?(?=(?:[^/]*/){{{len(last) - 1}}}[^/]*\\Z))")
            out.append("/".join(last))
        else:  # trailing: every group before ends with '/'
            out.append(".*")
    out.append(r"\Z")
    return "".join(out)


@lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """Compile a glob to a regex for `.match(path)` or `.match(path, start)`: `path` (from
    `start` on) relative to the search root. The regex has no '^', so a start index works."""
    pat = pattern.strip()
    if not pat:
        raise GlobSyntaxError("empty glob")
    anchored = "/" in pat.rstrip("/")
    pat = pat.lstrip("/") if anchored else pat
    if pat.startswith("./"):
        pat = pat[2:]
    regex = _translate(pat, anchored)
    try:
        return re.compile(regex)
    except re.error as exc:  # a set's range backwards ('[z-a]'), as before
        raise GlobSyntaxError(f"invalid glob {pattern!r}: {exc}") from exc
