"""The README's examples and the modules' docstring examples run as doctests."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import grpo_rewards
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _modules_with_examples() -> list[str]:
    finder = doctest.DocTestFinder()
    names = []
    for info in pkgutil.walk_packages(grpo_rewards.__path__, prefix="grpo_rewards."):
        module = importlib.import_module(info.name)
        if any(t.examples for t in finder.find(module)):
            names.append(info.name)
    return sorted(names)


MODULES = _modules_with_examples()


def test_readme_examples() -> None:
    result = doctest.testfile(str(README), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted >= 20, "the README lost its examples"


@pytest.mark.parametrize("name", MODULES)
def test_module_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
