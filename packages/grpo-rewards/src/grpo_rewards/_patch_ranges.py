"""Gold line ranges from a unified diff: each hunk's old-file coordinates.

The line-range term of CodeGrep v1/v2 needs gold ranges; a SWE-bench instance has a patch, not
ranges, so they are read from its hunk headers `@@ -start,length +start,length @@`, in the
coordinates of the file before the patch (the checkout the agent searches):

- a hunk with old length n > 0 is the range [start, start + n − 1], context lines included, as
  the header states them;
- a pure insertion (old length 0) touches no old line; it is the one line the insertion follows,
  [start, start] (git writes `-start,0` with start = that line), and [1, 1] at the top of a file
  (`-0,0`), so an answer that points at the insertion point is credited;
- a new file (`--- /dev/null`) has no old coordinates and contributes nothing; a deleted or
  renamed file is keyed by its old path.

Only the header is read, and each hunk's body is skipped by its stated line counts, so a removed
line that reads `--- a/x` is never taken for a file header. Which files count as gold is not
decided here: the caller keeps the ranges of its gold files. Not a patch applier or validator.
"""

from __future__ import annotations

import re

from grpo_rewards._answer import LineRange
from grpo_rewards._paths import normalize_path

__all__ = ["gold_line_ranges_from_patch"]

_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
# Larger than any real file; a header past it is hostile or broken input, not a line number.
_MAX_LINE = 10_000_000


def _old_path(header: str) -> str | None:
    """The path of a `--- ` line, None for `/dev/null`; a tab ends the name (git's timestamps)."""
    name = header[4:].split("\t", 1)[0].strip()
    if name.startswith('"') and name.endswith('"') and len(name) >= 2:
        name = name[1:-1]
    if name == "/dev/null":
        return None
    if name.startswith("a/"):
        name = name[2:]
    return normalize_path(name) or None


def gold_line_ranges_from_patch(patch: str) -> dict[str, tuple[LineRange, ...]]:
    """Old-file line ranges touched by `patch`, by repository-relative path, sorted.

    >>> patch = '''diff --git a/pkg/mod.py b/pkg/mod.py
    ... --- a/pkg/mod.py
    ... +++ b/pkg/mod.py
    ... @@ -10,3 +10,4 @@ def f():
    ...      a = 1
    ... -    b = 2
    ... +    b = 3
    ... +    c = 4
    ...      return a
    ... @@ -40,0 +42,1 @@
    ... +x = 1
    ... '''
    >>> gold_line_ranges_from_patch(patch)
    {'pkg/mod.py': (LineRange(start=10, end=12), LineRange(start=40, end=40))}
    """
    out: dict[str, list[LineRange]] = {}
    path: str | None = None
    lines = patch.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith("diff --git "):
            path = None
        elif line.startswith("--- ") and i < len(lines) and lines[i].startswith("+++ "):
            path = _old_path(line)
            i += 1
        elif line.startswith("@@ "):
            match = _HUNK_RE.match(line)
            if match is None:
                continue
            old_start = int(match.group(1))
            old_len = int(match.group(2)) if match.group(2) is not None else 1
            new_len = int(match.group(4)) if match.group(4) is not None else 1
            if max(old_start, old_len, new_len) > _MAX_LINE:
                continue
            # skip the body by its counts: ' ' and '-' lines are old lines, ' ' and '+' new ones
            old_left, new_left = old_len, new_len
            while i < len(lines) and (old_left > 0 or new_left > 0):
                body = lines[i]
                tag = body[:1]
                if tag == " " or body == "":
                    old_left -= 1
                    new_left -= 1
                elif tag == "-":
                    old_left -= 1
                elif tag == "+":
                    new_left -= 1
                elif tag != "\\":  # "\ No newline at end of file" counts for neither side
                    break
                i += 1
            if path is None:
                continue
            if old_len == 0:
                anchor = max(old_start, 1)
                rng = LineRange(anchor, anchor)
            else:
                rng = LineRange(max(old_start, 1), max(old_start, 1) + old_len - 1)
            out.setdefault(path, []).append(rng)
    return {p: tuple(sorted(set(rs), key=lambda r: (r.start, r.end))) for p, rs in out.items()}
