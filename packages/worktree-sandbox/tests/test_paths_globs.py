"""Path normalization and glob semantics, with properties over generated paths."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from worktree_sandbox._globs import GlobSyntaxError, compile_glob
from worktree_sandbox._paths import PathRefused, is_within, normalize_tool_path

segment = st.sampled_from(["a", "b", "src", ".", "..", "", ".git", "x.py", ".hidden", "a b"])
raw_path = st.lists(segment, min_size=0, max_size=8).map("/".join)


@given(raw_path, st.booleans())
def test_normalized_paths_never_escape(path: str, absolute: bool) -> None:
    candidate = ("/" + path) if absolute else path
    try:
        out = normalize_tool_path(candidate)
    except PathRefused:
        parts = candidate.split("/")
        assert candidate.startswith("/") or ".." in parts or ".git" in parts
        return
    assert not out.startswith("/")
    parts = out.split("/") if out else []
    assert ".." not in parts
    assert ".git" not in parts
    assert "" not in parts
    assert "." not in parts
    assert normalize_tool_path(out) == out  # idempotent


@given(raw_path)
def test_symlink_targets_resolve_inside_or_refuse(target: str) -> None:
    out = is_within("src/pkg", target)
    if out is not None:
        assert not out.startswith("/")
        assert not out.startswith("..")
        assert ".git" not in out.split("/")


@pytest.mark.parametrize(
    "bad",
    ["/etc/passwd", "../x", "a/../../b", "a/.git/config", ".git", "C:/x", "~/x", "a\\b", "a\x00b"],
)
def test_refused(bad: str) -> None:
    with pytest.raises(PathRefused):
        normalize_tool_path(bad)


@pytest.mark.parametrize(
    ("path", "expected"),
    [(None, ""), ("", ""), (".", ""), ("./src//app/", "src/app"), ("a/./b", "a/b")],
)
def test_normalized(path: str | None, expected: str) -> None:
    assert normalize_tool_path(path) == expected


def test_links() -> None:
    assert is_within("src/app", "../core.py") == "src/core.py"
    assert is_within("", "a/b") == "a/b"
    assert is_within("src", "../../x") is None
    assert is_within("src", "/etc/passwd") is None
    assert is_within("src", "../.git/config") is None


@pytest.mark.parametrize(
    ("glob", "matches", "misses"),
    [
        ("*.py", ["a.py", "src/a.py", "x/y/z.py"], ["a.pyc", "py", "a.py/x"]),
        ("src/*.py", ["src/a.py"], ["src/x/a.py", "a.py", "lib/src/a.py"]),
        ("src/**/*.py", ["src/a.py", "src/x/y/a.py"], ["a.py", "lib/src/a.py"]),
        ("**/test_*.py", ["test_a.py", "t/test_a.py"], ["t/a_test.py"]),
        ("test_?.py", ["test_a.py", "d/test_b.py"], ["test_ab.py"]),
        ("[ab]*.txt", ["a1.txt", "d/b.txt"], ["c.txt"]),
        ("[!ab]*.txt", ["c.txt"], ["a.txt"]),
        ("docs/**", ["docs/a", "docs/x/y.md"], ["doc/a"]),
        ("*", ["a", "x/y"], []),
    ],
)
def test_glob_semantics(glob: str, matches: list[str], misses: list[str]) -> None:
    rx = compile_glob(glob)
    for m in matches:
        assert rx.match(m), (glob, m)
    for m in misses:
        assert not rx.match(m), (glob, m)


def test_a_set_that_starts_with_a_bracket() -> None:
    # ']' first in a set is a literal, negated or not ('[!]?*]' once compiled to a regex
    # with a repeat of a repeat, and was refused as an invalid glob)
    assert compile_glob("[!]?*]").match("a")
    assert not compile_glob("[!]?*]").match("?")
    assert compile_glob("[]a]").match("]")
    assert not compile_glob("[]a]").match("b")


@given(st.text(alphabet="ab*?[]!/.", min_size=1, max_size=12))
def test_any_glob_compiles_or_says_why(glob: str) -> None:
    # The only syntax error a glob can have is a '[' that no ']' closes.
    try:
        rx = compile_glob(glob)
    except GlobSyntaxError as exc:
        assert "unclosed '['" in str(exc)  # noqa: PT017
        assert "[" in glob
    else:
        assert rx.match("a/b.c") is None or "*" in glob or "?" in glob or "[" in glob


# Patterns a model may send (the schema allows 500 characters) that a regex with a repetition
# per wildcard took exponential time on; each is matched against paths it almost fits.
_HOSTILE = [
    ("**/" * 40 + "x", "a/b/c/d/e/f/g/h/x", "a/b/c/d/e/f/g/h/y"),
    ("**/a/" * 40 + "x", "/".join(["a"] * 60 + ["x"]), "/".join(["a"] * 60 + ["y"])),
    ("*a" * 120 + "b", "a" * 200 + "b", "a" * 250),
    ("*a*/" * 60 + "x", "/".join(["bab"] * 60 + ["x"]), "/".join(["bab"] * 60 + ["y"])),
    ("src/**/" + "*_*" * 80 + ".py", "src/x/" + "a_" * 90 + ".py", "src/x/" + "a_" * 90 + ".pyc"),
]

_HOSTILE_SCRIPT = """
import json, sys, time
from worktree_sandbox._globs import compile_glob
out = []
for pattern, hit, miss in json.loads(sys.argv[1]):
    rx = compile_glob(pattern)
    start = time.perf_counter()
    out.append([rx.match(hit) is not None, rx.match(miss) is not None,
                time.perf_counter() - start])
print(json.dumps(out))
"""


def test_hostile_globs_match_in_linear_time() -> None:
    # In a child with a time limit: on a backtracking matcher this never ends.
    import json
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _HOSTILE_SCRIPT, json.dumps(_HOSTILE)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    for (pattern, _, _), (hit, miss, seconds) in zip(
        _HOSTILE, json.loads(proc.stdout), strict=True
    ):
        assert hit, pattern
        assert not miss, pattern
        assert seconds < 1.0, (pattern, seconds)


@pytest.mark.parametrize(
    ("glob", "matches", "misses"),
    [
        # the leftmost place of a group between two '**' must be a whole component
        ("**/a/**/y", ["x/ab/a/y", "a/y", "a/b/y"], ["ab/y", "x/ab/y", "a"]),
        ("a/**/b*c/**/d", ["a/bc/d", "a/x/bxc/y/d", "a/bxcc/bc/d"], ["a/bx/d", "a/bc"]),
        ("*a*b", ["ab", "xaxb", "d/aab"], ["ba", "a/b", "ab/c"]),
        ("a/**", ["a/b", "a/b/c"], ["a", "b/a"]),
        ("**", ["a", "a/b"], []),
        ("a/**/", [], ["a/b", "a"]),
        ("a**b", ["ab", "axxb"], ["a/b"]),
        ("/a/*", ["a/b"], ["x/a/b", "a/b/c"]),
        ("./x", ["x"], ["a/x"]),
        ("[/]x", [], ["x", "/x"]),
    ],
)
def test_glob_semantics_at_the_edges(glob: str, matches: list[str], misses: list[str]) -> None:
    rx = compile_glob(glob)
    for m in matches:
        assert rx.match(m), (glob, m)
        assert rx.match("root/" + m, len("root/")), (glob, m)  # a start index is honoured
    for m in misses:
        assert not rx.match(m), (glob, m)


def test_a_long_glob_filter_gives_the_loop_turns_and_keeps_its_deadline() -> None:
    import asyncio
    import time

    from worktree_sandbox.tree import _glob_filter

    rx = compile_glob("*a" * 100 + "b")
    paths = ["x/" + "a" * 200] * 20_000

    async def main() -> tuple[int, bool]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        start = ticks
        assert await _glob_filter(rx, paths, 2, time.perf_counter() + 600) == []
        during = ticks - start
        try:
            # a deadline already past: the verdict cannot depend on how fast this machine is
            await _glob_filter(rx, paths, 2, time.perf_counter() - 1)
        except TimeoutError:
            stopped = True
        else:
            stopped = False
        task.cancel()
        return during, stopped

    during, stopped = asyncio.run(main())
    assert during > 1  # other tasks ran while the list was matched
    assert stopped  # the deadline held
