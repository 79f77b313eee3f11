"""The command line around the stages: the monitor is registered only when it can be imported."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys
{setup}
from typer.main import get_command
from train_launcher.cli import app
print(sorted(get_command(app).commands))
"""


def _commands(setup: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(setup=setup)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return out.stdout.strip()


def test_the_monitor_is_registered_when_its_module_imports() -> None:
    pytest.importorskip("train_launcher.monitor.cli")
    assert _commands("") == "['launch', 'monitor', 'plan']"


def test_without_the_monitor_module_there_is_no_monitor_command() -> None:
    setup = "sys.modules['train_launcher.monitor.cli'] = None  # as if the file were not there"
    assert _commands(setup) == "['launch', 'plan']"


def test_a_monitor_that_fails_to_import_says_why() -> None:
    setup = (
        "import importlib.abc, importlib.machinery\n"
        "class Broken(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name == 'train_launcher.monitor.cli':\n"
        "            raise ImportError('no module named matplotlib')\n"
        "sys.meta_path.insert(0, Broken())\n"
    )
    assert _commands(setup) == "['launch', 'monitor', 'plan']"
    code = PROBE.format(setup=setup).replace(
        "print(sorted(get_command(app).commands))", "app(['monitor', 'run'], prog_name='x')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "error: the monitor cannot be imported: no module named matplotlib" in out.stderr
