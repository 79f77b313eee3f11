"""Fixtures: a small real git repository made here (importlib mode: tests cannot import this
module, so the helpers come as fixtures)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

Git = Callable[..., str]
MakeRepo = Callable[[Path, dict[str, str]], Path]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def _make_repo(root: Path, files: dict[str, str]) -> Path:
    """A git repository at `root` (made if missing) with `files` committed on `main`."""
    root.mkdir(parents=True, exist_ok=True)
    _git(root, "init", "-q", "-b", "main")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@e.com", "commit", "-q", "-m", "init")
    return root


@pytest.fixture(scope="session")
def git() -> Git:
    """`git(repo, *args)`: runs git in `repo`, checked, and returns its stdout."""
    return _git


@pytest.fixture(scope="session")
def make_repo() -> MakeRepo:
    """`make_repo(root, files)`: commits `files` in a new repository at `root`; returns it."""
    return _make_repo
