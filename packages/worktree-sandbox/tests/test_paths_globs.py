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
