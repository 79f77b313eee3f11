"""One path rule in two places: codegrep-records' normalizer and grpo-rewards' copy agree.

grpo-rewards stays standard library only, so it cannot import codegrep-records; it keeps a copy
of the normalizer and its mount-prefix table. These properties hold the copy equal to the
original: the tables, and the result for any text, for paths under every mount point, with
`roots=`, backslashes, `./` and `..`.
"""

from __future__ import annotations

import re

import codegrep_records
import grpo_rewards
import pytest
from codegrep_records._paths import normalize_paths as record_paths
from grpo_rewards._paths import DEFAULT_MOUNT_PREFIXES
from grpo_rewards._paths import normalize_path as reward_path
from hypothesis import given
from hypothesis import strategies as st

TABLE = codegrep_records.MOUNT_PREFIXES

# Path segments that exercise the rule: ordinary names, dots, empties (`//`), names that look
# like mount points, spaces, non-ASCII, and characters with a meaning in regular expressions.
SEGMENT = st.one_of(
    st.sampled_from(
        ["a", "src", "pkg", "mod.py", ".", "..", "", "testbed", "workspace", "repo", "app", "tmp"]
    ),
    st.sampled_from(["django__django__3.0", "x y", "café.py", "a+b", "(x)", "*", "~"]),
    st.text(st.characters(blacklist_characters="/\\\x00"), max_size=8),
)
SEP = st.sampled_from(["/", "\\", "//"])


def _instance(pattern: str, segment: str) -> str:
    """A concrete mount point that `pattern` matches, with `segment` for its one variable part."""
    return re.sub(re.escape("[^/]+"), lambda _: segment, pattern).replace("(?=.)", "")


@st.composite
def relative_paths(draw: st.DrawFn) -> str:
    parts = draw(st.lists(SEGMENT, min_size=0, max_size=6))
    sep = draw(SEP)
    lead = draw(st.sampled_from(["", "./", ".\\", " ", "/"]))
    return lead + sep.join(parts)


@st.composite
def mounted_paths(draw: st.DrawFn) -> str:
    pattern = draw(st.sampled_from(TABLE))
    segment = draw(st.sampled_from(["4f1c2a", "django__django__3.0", "requests", "x"]))
    mount = _instance(pattern, segment)
    assert re.match(pattern, mount + "f.py"), (pattern, mount)
    return mount + draw(relative_paths()).lstrip("/")


ROOTS = st.lists(
    st.one_of(
        st.sampled_from(["/data/repos", "/data/repos/o__r-1", "/testbed", "C:\\work\\r", "/"]),
        st.builds(lambda p: "/" + p.lstrip("/\\"), relative_paths()),
    ),
    max_size=3,
)
PREFIXES = st.one_of(
    st.none(),
    st.just(()),
    st.just(TABLE),
    st.lists(st.sampled_from([r"/mnt/code/", r"/srv/[^/]+/", *TABLE]), max_size=3),
)


def _both(path: str, **kwargs: object) -> tuple[str, str]:
    return (
        codegrep_records.normalize_path(path, **kwargs),  # type: ignore[arg-type]
        reward_path(path, **kwargs),  # type: ignore[arg-type]
    )


def test_the_tables_are_equal() -> None:
    assert codegrep_records.MOUNT_PREFIXES == DEFAULT_MOUNT_PREFIXES
    assert {r"/repo/", r"/app/"} <= set(TABLE)


@given(st.text())
def test_any_text(path: str) -> None:
    ours, theirs = _both(path)
    assert ours == theirs


@given(mounted_paths())
def test_paths_under_every_mount_point(path: str) -> None:
    ours, theirs = _both(path)
    assert ours == theirs
    assert not ours.startswith("/")


@given(st.one_of(relative_paths(), mounted_paths()), ROOTS, PREFIXES)
def test_with_roots_and_mount_tables(
    path: str, roots: list[str], prefixes: tuple[str, ...] | list[str] | None
) -> None:
    ours, theirs = _both(path, roots=roots, mount_prefixes=prefixes)
    assert ours == theirs


@given(st.lists(st.one_of(relative_paths(), mounted_paths(), st.text()), max_size=6), ROOTS)
def test_path_sets(paths: list[str], roots: list[str]) -> None:
    ours = record_paths(paths, roots=roots)
    assert ours == grpo_rewards.normalize_paths(paths, roots=roots)
    assert "" not in ours


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/repo/src/x.py", "src/x.py"),
        ("/app/models.py", "models.py"),
        ("/workspace/r/a.py", "a.py"),
        ("/tmp/testbed/uuid/a\\b.py", "a/b.py"),
        ("./pkg/../a.py", "a.py"),
    ],
)
def test_known_answers(path: str, expected: str) -> None:
    assert _both(path) == (expected, expected)


def test_a_single_string_is_refused_by_both() -> None:
    for normalize_paths in (record_paths, grpo_rewards.normalize_paths):
        with pytest.raises(TypeError, match="single string"):
            normalize_paths("a.py")
