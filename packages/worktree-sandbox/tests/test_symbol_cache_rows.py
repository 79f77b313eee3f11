"""The definition cache's rows are read as hostile: the SQLite file is shared with every process
that can write its folder. A row `_encode` would not write is a miss (the file is parsed again),
never an exception out of `SymbolIndex`."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from worktree_sandbox import DirectoryTree, SymbolIndex
from worktree_sandbox._definition import Definition
from worktree_sandbox._symbol_cache import _decode, _encode


@pytest.fixture
def symbols_extra() -> None:
    pytest.importorskip("tree_sitter", reason="needs the symbols extra")
    pytest.importorskip("tree_sitter_language_pack", reason="needs the symbols extra")


DEEP = "[" * 100_000 + "]" * 100_000
ROW = ["a", "a", "function", 1, 2, 1]

HOSTILE = {
    "deep": DEEP,
    "deep-in-a-row": json.dumps([[*ROW[:3], 1, 2, [[[[1]]]]]]),
    "bigint": '[["a", "a", "function", 1' + "0" * 5000 + ", 2, 1]]",
    "1e999": '[["a", "a", "function", 1e999, 2, 1]]',
    "bool": json.dumps([[*ROW[:3], True, 2, 1]]),
    "object": json.dumps({"rows": [ROW]}),
    "not-json": "[[",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_row_is_a_miss(name: str) -> None:
    t0 = time.perf_counter()
    assert _decode(HOSTILE[name]) is None
    assert time.perf_counter() - t0 < 0.5


def test_brackets_inside_names_are_not_nesting() -> None:
    defs = (Definition("[[[x", "impl [[T]]", "impl", 1, 3, 1),)
    assert _decode(_encode(defs)) == defs


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet='[]{}",:0123456789.eE-truefalsn \\x', max_size=200))
def test_any_text_decodes_or_is_a_miss(text: str) -> None:
    result = _decode(text)
    assert result is None or all(isinstance(d, Definition) for d in result)


@pytest.mark.usefixtures("symbols_extra")
@pytest.mark.parametrize("name", list(HOSTILE))
async def test_the_index_parses_again_over_a_hostile_row(tmp_path: Path, name: str) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("def a():\n    pass\n")
    tree = DirectoryTree(tmp_path / "src")
    cache = tmp_path / "cache"
    with SymbolIndex(cache) as index:
        assert await index.definitions(tree, "a.py")
        db = index.cache_file
    assert db is not None
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE definitions SET data = ?", (HOSTILE[name],))
    with SymbolIndex(cache) as index:
        assert [d.name for d in await index.definitions(tree, "a.py")] == ["a"]
        stats = index.stats
    assert (stats.disk_hits, stats.parsed) == (0, 1)


@pytest.mark.usefixtures("symbols_extra")
async def test_bytes_that_are_not_utf8_in_a_row_are_a_counted_error(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("def a():\n    pass\n")
    tree = DirectoryTree(tmp_path / "src")
    cache = tmp_path / "cache"
    with SymbolIndex(cache) as index:
        assert await index.definitions(tree, "a.py")
        db = index.cache_file
    assert db is not None
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE definitions SET data = CAST(x'5b5bff5d5d' AS TEXT)")
    with SymbolIndex(cache) as index:
        assert [d.name for d in await index.definitions(tree, "a.py")] == ["a"]
        assert index.stats.disk_hits == 0
