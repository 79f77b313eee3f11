"""The CI tiers install workspace members from their folders in pip venvs of their own; a sibling
that a member needs and the script does not install fails there with "No matching distribution"
(pip looks for it on the index, where nothing is released yet). Each tier script must name every
workspace folder that the folders it installs need, transitively."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(ROOT.glob("*/*/ci/*.sh"))
FOLDER = re.compile(r"\$root/((?:packages|apps)/[A-Za-z0-9_.-]+)")


def _members() -> dict[str, tuple[str, set[str]]]:
    """Normalised distribution name -> (folder, names of the distributions it requires)."""
    out = {}
    for pyproject in sorted(ROOT.glob("*/*/pyproject.toml")):
        if pyproject.parts[-3] not in ("packages", "apps"):
            continue
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        needs = {canonicalize_name(Requirement(r).name) for r in project.get("dependencies", [])}
        folder = pyproject.parent.relative_to(ROOT).as_posix()
        out[canonicalize_name(project["name"])] = (folder, needs)
    return out


def test_there_are_tier_scripts() -> None:
    assert len(SCRIPTS) >= 4, SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_tier_installs_every_sibling_its_members_need(script: Path) -> None:
    members = _members()
    by_folder = {folder: name for name, (folder, _) in members.items()}
    installed = {m for m in FOLDER.findall(script.read_text(encoding="utf-8")) if m in by_folder}
    missing = set()
    todo = [by_folder[f] for f in installed]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for need in members[name][1] & members.keys():
            if members[need][0] not in installed:
                missing.add(members[need][0])
            todo.append(need)
    assert not missing, (
        f"{script.relative_to(ROOT)} installs {sorted(installed)} but not {sorted(missing)}"
    )
