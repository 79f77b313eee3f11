"""Real git repositories built in temp folders: several commits, symlinks in and out, binary and
huge files. No mocks of git."""

from __future__ import annotations

import binascii
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def run_git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True, text=True
    ).stdout.strip()


@dataclass
class Repo:
    path: Path
    commits: list[str]  # oldest first

    def commit(self, files: dict[str, str | bytes | None], message: str = "change") -> str:
        for name, content in files.items():
            target = self.path / name
            if content is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)
        run_git(self.path, "add", "-A")
        run_git(self.path, "commit", "-q", "-m", message)
        sha = run_git(self.path, "rev-parse", "HEAD")
        self.commits.append(sha)
        return sha


def make_repo(root: Path, name: str = "proj") -> Repo:
    path = root / name
    path.mkdir(parents=True)
    run_git(path, "init", "-q", "-b", "main")
    repo = Repo(path, [])
    repo.commit(
        {
            "README.md": "# proj\nhello world\n",
            "src/app/__init__.py": "",
            "src/app/core.py": "import os\n\n\ndef parse_config(path):\n"
            "    return open(path).read()\n\n\nclass Session:\n    def get(self, url):\n"
            "        return url\n",
            "src/app/cli.py": "from app.core import parse_config\n\n\ndef main():\n"
            "    parse_config('x')\n",
            "tests/test_core.py": "from app.core import parse_config\n\n\ndef test_parse():\n"
            "    assert parse_config\n",
            "docs/notes.txt": "parse_config is documented here\n",
            ".github/workflow.yml": "name: ci # parse_config\n",
            "data/blob.bin": b"\x00\x01\x02binary parse_config\x00" * 10,
        },
        "first",
    )
    os.symlink("src/app/core.py", path / "core_link.py")
    os.symlink("../../../../etc/passwd", path / "src/escape.txt")
    os.symlink("/etc/hostname", path / "abs_link")
    os.symlink("src/app", path / "app_dir_link")
    repo.commit(
        {
            "src/app/core.py": "import os\n\n\ndef parse_config(path):\n"
            "    return open(path).read()\n\n\ndef parse_args(argv):\n    return argv\n\n\n"
            "class Session:\n    def get(self, url):\n        return url\n",
            "big/lines.txt": "".join(f"line {i} parse_config\n" for i in range(1, 3001)),
            "big/huge.txt": "x" * (3 * 1024 * 1024),
            ".gitattributes": "docs/notes.txt export-ignore\n*.txt text eol=crlf\n",
        },
        "second",
    )
    return repo


@pytest.fixture
def repo_factory(tmp_path: Path) -> type[Repo] | object:
    """`repo_factory(name)` builds another repository like `repo`."""
    return lambda name="proj": make_repo(tmp_path / "more-repos", name)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return make_repo(tmp_path / "src-repos")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path / "trees"


def blob(repo: Path, data: bytes) -> str:
    return subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=repo, env=ENV, input=data, capture_output=True, check=True,
    ).stdout.decode().strip()  # fmt: skip


def raw_tree(repo: Path, entries: list[tuple[str, bytes, str]]) -> str:
    """A tree object exactly as given: (mode, name, sha), in this order, duplicates kept."""
    data = b"".join(
        mode.encode() + b" " + name + b"\0" + binascii.unhexlify(sha) for mode, name, sha in entries
    )
    return subprocess.run(
        ["git", "hash-object", "-w", "--literally", "-t", "tree", "--stdin"],
        cwd=repo, env=ENV, input=data, capture_output=True, check=True,
    ).stdout.decode().strip()  # fmt: skip


def commit_tree(repo: Path, tree: str) -> str:
    return subprocess.run(
        ["git", "commit-tree", tree, "-m", "crafted"],
        cwd=repo, env=ENV, capture_output=True, check=True, text=True,
    ).stdout.strip()  # fmt: skip


@dataclass(frozen=True)
class GitKit:
    """What conftest builds repositories with, for tests that build their own (test modules
    cannot import conftest under --import-mode=importlib)."""

    env: dict[str, str]
    run_git: Any
    make_repo: Any
    blob: Any  # blob(repo, data) -> sha
    raw_tree: Any  # raw_tree(repo, [(mode, name, sha)]): a tree object exactly as given
    commit_tree: Any  # commit_tree(repo, tree) -> sha


@pytest.fixture
def git_kit() -> GitKit:
    return GitKit(ENV, run_git, make_repo, blob, raw_tree, commit_tree)
