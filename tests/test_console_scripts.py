"""Every console script of the workspace, run as installed: `--version` and a bad input.

The scripts are found from each member's `[project.scripts]`, so a new one fails here until it
has a bad-input case below. Both answers come from the command-line kit (`codegrep-cli`):
`--version` prints `<prog> <version>` and exits 0; bad input found before any work is one
`error:` line on stderr and exit 2.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import tomllib
import typing
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _scripts() -> dict[str, tuple[str, str]]:
    """Script name -> (its `module:function`, the member's import package)."""
    found: dict[str, tuple[str, str]] = {}
    for pyproject in sorted(
        [*ROOT.glob("packages/*/pyproject.toml"), *ROOT.glob("apps/*/pyproject.toml")]
    ):
        meta = tomllib.loads(pyproject.read_text())["project"]
        for name, target in meta.get("scripts", {}).items():
            found[name] = (target, target.split(".", 1)[0])
    return found


SCRIPTS = _scripts()

# What `--version` names (the distribution, as each CLI printed it before the kit) and a bad
# input that each CLI finds before any work.
VERSION_NAME = {
    "catm": "catm",
    "worktree-sandbox": "worktree-sandbox",
    "codegrep-model": "codegrep-model",
    "swe-eval": "swe-eval",
    "codegrep": "codegrep",
    "codegrep-train": "train-launcher",
}
BAD_INPUT = {
    "catm": (["mine", "{tmp}/none.jsonl", "-i", "{tmp}/none.jsonl", "-o", "{tmp}/o.jsonl"],
             "TRAJECTORIES"),
    "worktree-sandbox": (["prepare", "--cache", "{tmp}/c"], "no instances file"),
    "codegrep-model": (["batch", "-o", "{tmp}/o.jsonl", "--cache", "{tmp}/c"],
                       "name the instances file"),
    "swe-eval": (["retrieval", "-i", "{tmp}/none.jsonl", "-p", "{tmp}/none.jsonl"],
                 "none.jsonl"),
    "codegrep": (["localize", "--repo", "{tmp}", "--issue", "-", "--base-url", "ftp://x"],
                 "--base-url ftp://x"),
    "codegrep-train": (["monitor", "{tmp}/no-run"], "no-run"),
}  # fmt: skip


def _run(script: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / script
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120
    )


def test_every_script_has_its_cases() -> None:
    assert set(SCRIPTS) == set(VERSION_NAME) == set(BAD_INPUT)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_version(script: str) -> None:
    package = importlib.import_module(SCRIPTS[script][1])
    done = _run(script, ["--version"])
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{VERSION_NAME[script]} {package.__version__}\n"


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_bad_input_is_one_error_line_and_exit_2(script: str, tmp_path: Path) -> None:
    args, named = BAD_INPUT[script]
    done = _run(script, [a.replace("{tmp}", str(tmp_path)) for a in args])
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ")
    assert named in lines[0]


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_the_version_option_is_the_kits(script: str) -> None:
    module = importlib.import_module(SCRIPTS[script][0].split(":", 1)[0])
    root = module.app.registered_callback
    assert root is not None, f"{script}: no root callback"
    hints = typing.get_type_hints(root.callback, include_extras=True)
    [option] = hints["version"].__metadata__
    assert option.callback.__module__ == "codegrep_cli._kit"
