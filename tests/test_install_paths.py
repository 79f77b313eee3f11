"""The install paths the README documents are the ones infra/ci/install-alone.sh checks (which
needs the network and runs in CI): the light path to the main job and pip from a checkout."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _install_alone() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "install_alone", ROOT / "infra/ci/install_alone.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("install_alone", module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_readme_documents_what_install_alone_checks() -> None:
    ia = _install_alone()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"uv tool install ./{ia.LIGHT_APP}\n" in readme
    members = {m.key: m for m in ia.release.discover(ROOT)}
    for name in ia.PIP_FROM_SOURCE:
        order = ia.sibling_closure(members[name], members)
        paths = " ".join(f"./{members[k].path.relative_to(ROOT)}" for k in order)
        assert f"pip install {paths}" in readme


def test_pip_from_source_names_every_sibling_dependencies_first() -> None:
    ia = _install_alone()
    members = {m.key: m for m in ia.release.discover(ROOT)}
    order = ia.sibling_closure(members["worktree-sandbox"], members)
    # pip finds a sibling only when it is given: every run-time sibling, transitively
    assert order == ["codegrep-records", "codegrep-cli", "worktree-sandbox"]
    app = ia.sibling_closure(members["codegrep"], members)
    assert app[-1] == "codegrep"
    for key in app:
        needs = [
            r.name for x, r in ia.release.sibling_requirements(members[key], members) if x is None
        ]
        assert all(app.index(n) < app.index(key) for n in needs), key
