"""The suite's verdicts cannot depend on the day: no remote host, a frozen index for CI's
installs, and a pinned build backend (infra/README.md, "The index, frozen for CI")."""

from __future__ import annotations

import importlib.util
import re
import socket
import sys
import tomllib
from datetime import datetime
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
CUTOFF = ROOT / ".ci" / "index-cutoff"


# --- the guard in the root conftest ---------------------------------------------------------


def test_a_remote_address_is_refused_before_any_packet() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        with pytest.raises(OSError, match="hermetic: connect to"):
            sock.connect(("192.0.2.1", 443))  # TEST-NET-1: never a real host


def test_a_remote_name_lookup_is_refused() -> None:
    with pytest.raises(OSError, match=re.escape("hermetic: name lookup of 'pypi.org'")):
        socket.getaddrinfo("pypi.org", 443)


def test_loopback_still_works() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        with socket.create_connection(("localhost", port), timeout=5) as client:
            peer, _ = server.accept()
            with peer:
                client.sendall(b"ping")
                assert peer.recv(4) == b"ping"


# --- the frozen index of CI's installs ------------------------------------------------------


def _cutoff() -> datetime:
    text = CUTOFF.read_text(encoding="utf-8").strip()
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    offset = moment.utcoffset()
    assert offset is not None, text
    assert offset.total_seconds() == 0, text
    return moment


def test_the_cutoff_is_one_utc_moment() -> None:
    assert _cutoff().year >= 2026


def test_every_pip_venv_of_ci_is_made_by_the_script_that_freezes_the_index() -> None:
    makers = []
    for script in sorted(ROOT.glob("**/ci/*.sh")) + sorted((ROOT / ".ci").glob("*")):
        if ".venv" in script.parts or not script.is_file():
            continue
        text = script.read_text(encoding="utf-8")
        if re.search(r"-m venv|virtualenv ", text):
            makers.append(script.relative_to(ROOT).as_posix())
    assert makers == [".ci/cpu-torch-venv.sh"], makers


def test_the_venv_maker_writes_the_cutoff_before_any_install(tmp_path: Path) -> None:
    # Run the script's own lines up to its first pip install, with `python3 -m venv` made cheap:
    # what it writes into the venv is what every later pip reads.
    text = (ROOT / ".ci" / "cpu-torch-venv.sh").read_text(encoding="utf-8")
    head = text.split('"$venv/bin/python" -m pip install', 1)[0]
    assert "pip install" not in head.split("python3 -m venv", 1)[1]
    import subprocess

    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "python3").write_text('#!/bin/sh\nmkdir -p "$3"\n', encoding="utf-8")
    (fake_bin / "python3").chmod(0o755)
    script = tmp_path / "head.sh"
    script.write_text(head.replace('"$(dirname "$0")"', f'"{ROOT / ".ci"}"'), encoding="utf-8")
    venv = tmp_path / "venv"
    env = {"PATH": f"{fake_bin}:/usr/bin:/bin"}
    subprocess.run(["bash", str(script), str(venv)], check=True, env=env)
    conf = (venv / "pip.conf").read_text(encoding="utf-8")
    assert f"uploaded-prior-to = {CUTOFF.read_text(encoding='utf-8').strip()}" in conf
    subprocess.run(
        ["bash", str(script), str(tmp_path / "today")],
        check=True,
        env={**env, "CODEGREP_INDEX_TODAY": "1"},
    )
    assert not (tmp_path / "today" / "pip.conf").exists()


def test_install_alone_resolves_at_the_cutoff_unless_today(monkeypatch: pytest.MonkeyPatch):
    spec = importlib.util.spec_from_file_location(
        "install_alone", ROOT / "infra" / "ci" / "install_alone.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclasses look it up
    spec.loader.exec_module(module)
    monkeypatch.setenv("UV_EXCLUDE_NEWER", "stale")
    assert module.index_env(today=False) == CUTOFF.read_text(encoding="utf-8").strip()
    assert module.index_env(today=True) is None


# --- the build backend ----------------------------------------------------------------------


def test_the_build_backend_is_pinned_and_fits_every_member() -> None:
    root = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pins = {}
    for text in root["tool"]["uv"]["build-constraint-dependencies"]:
        req = Requirement(text)
        (spec,) = req.specifier
        assert spec.operator == "==", text
        pins[canonicalize_name(req.name)] = spec.version
    members = sorted(ROOT.glob("packages/*/pyproject.toml")) + sorted(
        ROOT.glob("apps/*/pyproject.toml")
    )
    assert len(members) >= 9
    for pyproject in members:
        for text in tomllib.loads(pyproject.read_text(encoding="utf-8"))["build-system"][
            "requires"
        ]:
            req = Requirement(text)
            name = canonicalize_name(req.name)
            assert name in pins, f"{pyproject.parent.name}: build requirement {text} is not pinned"
            assert req.specifier.contains(pins[name]), (pyproject.parent.name, text, pins[name])
    # hatchling's own requirements (as of the pinned version) are pinned too
    assert {"packaging", "pathspec", "pluggy", "trove-classifiers"} <= pins.keys()


def test_the_lock_records_the_same_build_constraints() -> None:
    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    recorded = {
        (canonicalize_name(c["name"]), c["specifier"])
        for c in lock["manifest"]["build-constraints"]
    }
    root = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    declared = {
        (canonicalize_name(Requirement(t).name), str(Requirement(t).specifier))
        for t in root["tool"]["uv"]["build-constraint-dependencies"]
    }
    assert recorded == declared
