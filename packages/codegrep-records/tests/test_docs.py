"""The README's examples and the modules' docstring examples run as doctests."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_examples() -> None:
    result = doctest.testfile(str(README), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted >= 10, "the README lost its examples"


@pytest.mark.parametrize("name", ["codegrep_records._paths"])
def test_module_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
