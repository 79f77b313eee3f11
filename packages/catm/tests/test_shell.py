"""Which files a shell line reads and writes."""

from __future__ import annotations

import pytest
from catm import parse_shell

ROOT = "/workspace/repo"


@pytest.mark.parametrize(
    ("command", "reads"),
    [
        ("cat -n a/b.py", ["/workspace/repo/a/b.py"]),
        ("cat a.py b.py", ["/workspace/repo/a.py", "/workspace/repo/b.py"]),
        ("head -n 40 x.py && tail -20 y.py", ["/workspace/repo/x.py", "/workspace/repo/y.py"]),
        ("sed -n '10,80p' pkg/mod.py", ["/workspace/repo/pkg/mod.py"]),
        ("sed -n -e '1,5p' pkg/mod.py", ["/workspace/repo/pkg/mod.py"]),
        ("nl -ba pkg/mod.py | sed -n 1,5p", ["/workspace/repo/pkg/mod.py"]),
        ('grep -n "class X" pkg/mod.py | head -5', ["/workspace/repo/pkg/mod.py"]),
        ("grep -n -A 3 -e foo pkg/mod.py", ["/workspace/repo/pkg/mod.py"]),
        ("less /abs/elsewhere.py", ["/abs/elsewhere.py"]),
        ("awk 'NR>=3 && NR<=9' m.py", ["/workspace/repo/m.py"]),
        ("sed -n '1,5p' x.py 2>&1", ["/workspace/repo/x.py"]),
    ],
)
def test_reads(command: str, reads: list[str]) -> None:
    assert list(parse_shell(command, ROOT).reads) == reads


@pytest.mark.parametrize(
    "command",
    [
        'grep -rn "foo" . --include="*.py"x',  # a tree search, not a read... of one file "."
        "grep -n foo a.py b.py",  # many files: a search
        "grep -l foo a.py",  # lists names, prints no content
        "sed -i 's/a/b/' x.py",  # an edit
        "python -c 'print(open(\"x.py\").read())'",
        "ls -la pkg",
        "cat *.py",  # globs are not expanded
        "cat $FILE",
        "find . -name '*.py' | xargs grep -l foo",
    ],
)
def test_not_reads(command: str) -> None:
    reads = parse_shell(command, ROOT).reads
    # A recursive grep over "." names the directory; stage 1 drops it as the repository root.
    assert reads in ((), ("/workspace/repo/.",))


def test_cd_changes_the_base_of_relative_paths() -> None:
    effects = parse_shell("cd /workspace/repo/src && cat mod.py", "/workspace")
    assert effects.reads == ("/workspace/repo/src/mod.py",)
    assert effects.cwd == "/workspace/repo/src"
    assert parse_shell("cd sub; cat ../a.py", ROOT).reads == ("/workspace/repo/sub/../a.py",)


def test_writes_and_heredoc_bodies() -> None:
    command = "cat > /workspace/repo/t.py << 'EOF'\nprint(open('a.py').read())\nEOF\ncat b.py"
    effects = parse_shell(command, ROOT)
    assert effects.writes == ("/workspace/repo/t.py",)
    # The heredoc body is data, not commands; only the later `cat b.py` reads.
    assert effects.reads == ("/workspace/repo/b.py",)
    assert set(parse_shell("echo x | tee out.py >> log.py", ROOT).writes) == {
        "/workspace/repo/out.py",
        "/workspace/repo/log.py",
    }
    assert parse_shell("python x.py > /dev/null 2>&1", ROOT).writes == ()


def test_unbalanced_quote_is_ignored_not_fatal() -> None:
    # A truncated command: the stray quote is dropped and the rest parsed as words.
    effects = parse_shell("grep -n 'unterminated x.py", ROOT)
    assert effects.reads == ("/workspace/repo/x.py",)
