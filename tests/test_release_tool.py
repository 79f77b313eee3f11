"""infra/release.py on a small fake workspace: what it must catch, and the order it uploads in.

No network and no build: the wheels are written by hand (a METADATA file in a zip), and the tool
runs with --no-build.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_release() -> ModuleType:
    spec = importlib.util.spec_from_file_location("release_tool", ROOT / "infra" / "release.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["release_tool"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


release = _load_release()

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@localhost",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@localhost",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    # the tool's own git calls (annotated tags) need an identity; the machine's config is not ours
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


# Two packages whose names sort against their dependency order: `zeta-base` must go first.
BASE = "zeta-base"
APP = "alpha-app"
README = "# {name}\n\nSee the [docs](https://example.org/docs) and `[not](a-link.md)`.\n"


def _pyproject(name: str, version: str, deps: list[str], extras: dict[str, list[str]]) -> str:
    lines = [
        "[project]",
        f'name = "{name}"',
        f'version = "{version}"',
        'readme = "README.md"',
        f"dependencies = {deps!r}".replace("'", '"'),
    ]
    if extras:
        lines.append("[project.optional-dependencies]")
        lines += [f"{k} = {v!r}".replace("'", '"') for k, v in extras.items()]
    return "\n".join(lines) + "\n"


def write_package(
    ws: Path,
    name: str,
    version: str,
    *,
    deps: list[str] | None = None,
    extras: dict[str, list[str]] | None = None,
    changelog: str | None = None,
) -> None:
    folder = ws / "packages" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text(_pyproject(name, version, deps or [], extras or {}))
    (folder / "README.md").write_text(README.format(name=name))
    if changelog is None:
        changelog = f"# Changelog\n\n## Unreleased\n\n## {version}\n\n- First release.\n"
    (folder / "CHANGELOG.md").write_text(changelog)


def write_wheel(
    dist: Path,
    name: str,
    version: str,
    requires: list[str],
    readme: str | None = None,
) -> Path:
    """A wheel holding just what the tool reads: METADATA."""
    stem = name.replace("-", "_")
    dist.mkdir(parents=True, exist_ok=True)
    metadata = "\n".join(
        [
            "Metadata-Version: 2.4",
            f"Name: {name}",
            f"Version: {version}",
            *[f"Requires-Dist: {r}" for r in requires],
            "Description-Content-Type: text/markdown",
            "",
            readme if readme is not None else README.format(name=name),
        ]
    )
    wheel = dist / f"{stem}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(f"{stem}/__init__.py", "")
        zf.writestr(f"{stem}-{version}.dist-info/METADATA", metadata)
    (dist / f"{stem}-{version}.tar.gz").write_bytes(b"sdist")
    return wheel


@pytest.fixture
def workspace(tmp_path: Path) -> tuple[Path, Path]:
    """A committed two-package workspace and a dist folder (outside it) with good wheels."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [project]
            name = "root"
            version = "0.0.0"
            [tool.uv.workspace]
            members = ["packages/*"]
            """
        )
    )
    write_package(ws, BASE, "0.3.1")
    write_package(
        ws,
        APP,
        "1.2.0",
        deps=[f"{BASE}>=0.3.0,<0.4", "requests>=2"],
        extras={"fast": [f"{BASE}[speed]>=0.3.0,<0.4"]},
    )
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "init")
    dist = tmp_path / "dist"
    write_wheel(dist, BASE, "0.3.1", [])
    write_wheel(
        dist,
        APP,
        "1.2.0",
        [
            f"{BASE}<0.4,>=0.3.0",  # the order a build backend writes; same range
            "requests>=2",
            f"{BASE}[speed]<0.4,>=0.3.0; extra == 'fast'",
        ],
    )
    return ws, dist


def run(ws: Path, dist: Path, *extra: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = release.main(["--root", str(ws), "--dist", str(dist), "--no-build", *extra])
    return code, capsys.readouterr().out


def test_a_good_workspace_passes_in_dependency_order(
    workspace: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    ws, dist = workspace
    code, out = run(ws, dist, "--dry-run", capsys=capsys)
    assert code == 0, out
    assert "error:" not in out
    # the upload order puts the dependency first, whatever the names' order
    publish = [ln for ln in out.splitlines() if ln.startswith("uv publish")]
    assert len(publish) == 2
    assert "zeta_base-0.3.1" in publish[0]
    assert "alpha_app-1.2.0" in publish[1]
    assert out.index("zeta-base-v0.3.1  (new)") < out.index("alpha-app-v1.2.0  (new)")
    notes = (dist / "RELEASE-NOTES.md").read_text()
    assert f"| {APP} | 1.2.0 | 0.3.1 (`>=0.3.0,<0.4`) |" in notes
    assert "- First release." in notes
    assert git(ws, "tag") == "", "a dry run creates no tag"


def test_a_real_run_creates_annotated_tags_and_a_second_is_refused(
    workspace: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    ws, dist = workspace
    code, out = run(ws, dist, capsys=capsys)
    assert code == 0, out
    assert git(ws, "cat-file", "-t", "alpha-app-v1.2.0") == "tag"
    assert git(ws, "cat-file", "-t", "zeta-base-v0.3.1") == "tag"
    # tags at HEAD are kept and not an error; once HEAD moves, the same version is refused
    code, out = run(ws, dist, "--dry-run", capsys=capsys)
    assert code == 0, out
    (ws / "packages" / APP / "NEW").write_text("x")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "more")
    code, out = run(ws, dist, "--dry-run", capsys=capsys)
    assert code == 1
    assert "the tag alpha-app-v1.2.0 already exists" in out
    assert "bump the version" in out


def test_an_existing_tag_elsewhere_is_caught(
    workspace: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    ws, dist = workspace
    git(ws, "tag", "-a", "zeta-base-v0.3.1", "-m", "old")
    (ws / "later").write_text("x")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "later")
    code, out = run(ws, dist, "--dry-run", capsys=capsys)
    assert code == 1
    assert "error: zeta-base 0.3.1: the tag zeta-base-v0.3.1 already exists" in out


def test_a_missing_changelog_entry_is_caught(
    workspace: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    ws, dist = workspace
    write_package(ws, BASE, "0.3.1", changelog="# Changelog\n\n## 0.3.0\n\n- Older.\n")
    code, out = run(ws, dist, "--dry-run", "--allow-unreleased", capsys=capsys)
    assert code == 1
    assert "error: zeta-base 0.3.1: CHANGELOG.md has no `## 0.3.1` entry" in out


def test_unreleased_changes_are_reported_and_admitted_only_for_a_dry_run(
    workspace: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    ws, dist = workspace
    log = (
        "# Changelog\n\n## Unreleased\n\n- A fix.\n- Another.\n\n## 0.3.1 (unreleased)\n\n- One.\n"
    )
    write_package(ws, BASE, "0.3.1", changelog=log)
    code, out = run(ws, dist, "--dry-run", capsys=capsys)
    assert code == 1
    assert "`## Unreleased` holds 2 entries" in out
    assert "`## 0.3.1 (unreleased)` is still marked unreleased" in out
    code, out = run(ws, dist, "--dry-run", "--allow-unreleased", capsys=capsys)
    assert code == 0, out
    assert "warning: zeta-base 0.3.1: CHANGELOG.md `## Unreleased` holds 2 entries" in out
    assert "- A fix." in (dist / "RELEASE-NOTES.md").read_text()
    # a real run never admits them
    assert release.main(["--root", str(ws), "--allow-unreleased", "--no-build"]) == 2


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        (BASE, "has no version range"),
        (f"{BASE}>=0.3.0", "not of the form >=LOW,<NEXT-BREAKING"),
        (f"{BASE}>=0.3.0,<1", "the upper bound should be <0.4"),
        (f"{BASE}>=0.4.0,<0.5", "rejects zeta-base 0.3.1"),
        (f"{BASE} @ file:///elsewhere", "not by URL"),
    ],
)
def test_a_sibling_without_the_range_rule_is_caught(
    workspace: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    requirement: str,
    message: str,
) -> None:
    ws, dist = workspace
    write_package(ws, APP, "1.2.0", deps=[requirement])
    code, out = run(ws, dist, "--dry-run", "--allow-unreleased", capsys=capsys)
    assert code == 1
    assert f"error: {APP}: {requirement!r}: " in out
    assert message in out


def test_a_sibling_in_an_extra_is_checked_too(
    workspace: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    ws, dist = workspace
    write_package(ws, APP, "1.2.0", deps=[f"{BASE}>=0.3.0,<0.4"], extras={"fast": [BASE]})
    code, out = run(ws, dist, "--dry-run", "--allow-unreleased", capsys=capsys)
    assert code == 1
    assert "(extra fast): the sibling zeta-base has no version range" in out


def test_the_wheel_metadata_must_carry_the_ranges(
    workspace: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    ws, dist = workspace
    write_wheel(dist, APP, "1.2.0", [BASE, "requests>=2"])  # a backend that dropped the ranges
    code, out = run(ws, dist, "--dry-run", "--allow-unreleased", capsys=capsys)
    assert code == 1
    assert "Requires-Dist zeta-base is ['']" in out
    assert "Requires-Dist 'zeta-base' has no version range" in out
    assert "Requires-Dist has no zeta-base (extra fast)" in out


def test_a_relative_link_in_the_packaged_readme_is_caught(
    workspace: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    ws, dist = workspace
    readme = textwrap.dedent(
        """\
        # zeta-base

        Fine: [web](https://example.org), [here](#usage), `[code](x.md)`, <!-- [c](c.md) -->

        ```python
        print("[fenced](not-a-link.md)")
        ```

        Broken: the [design](../../DESIGN.md) and a
        [multi-line
        link](docs/guide.md), ![a plot](docs/plot.png), and

        [ref]: benchmarks/README.md
        """
    )
    write_wheel(dist, BASE, "0.3.1", [], readme=readme)
    code, out = run(ws, dist, "--dry-run", "--allow-unreleased", capsys=capsys)
    assert code == 1
    found = [ln for ln in out.splitlines() if "a relative link" in ln]
    targets = sorted(ln.split("links to ")[1].split(",")[0] for ln in found)
    assert targets == [
        "'../../DESIGN.md'",
        "'benchmarks/README.md'",
        "'docs/guide.md'",
        "'docs/plot.png'",
    ]
    assert "README line 9 links to '../../DESIGN.md'" in out


def test_a_missing_wheel_is_caught(
    workspace: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    ws, dist = workspace
    (dist / "zeta_base-0.3.1-py3-none-any.whl").unlink()
    code, out = run(ws, dist, "--dry-run", "--allow-unreleased", capsys=capsys)
    assert code == 1
    assert f"error: zeta-base 0.3.1: no wheel in {dist}" in out


def test_range_rule_and_versions() -> None:
    v = release.Version.parse
    assert release.range_for(v("0.1.0")) == ">=0.1.0,<0.2"
    assert release.range_for(v("0.12")) == ">=0.12.0,<0.13"
    assert release.range_for(v("1.4.2")) == ">=1.4,<2"
    assert v("0.2") == v("0.2.0")
    assert v("1.0.dev1") < v("1.0a1") < v("1.0rc1") < v("1.0") < v("1.0.post1")
    clauses = release.parse_specifier(">=0.1.0,<0.2")
    assert release.specifier_contains(clauses, v("0.1.9"))
    assert not release.specifier_contains(clauses, v("0.2.0"))
    req = release.Requirement.parse("codegrep-records[parquet]<0.2,>=0.1.0; extra == 'parquet'")
    assert (req.name, req.extras, req.extra()) == ("codegrep-records", ("parquet",), "parquet")
    assert req.clauses() == release.Requirement.parse("Codegrep_Records>=0.1,<0.2.0").clauses()


def test_the_script_runs_standalone(workspace: tuple[Path, Path]) -> None:
    # stdlib only: it must run with a bare interpreter (-S: no site-packages at all)
    ws, dist = workspace
    out = subprocess.run(
        [
            sys.executable,
            "-S",
            str(ROOT / "infra" / "release.py"),
            "--root",
            str(ws),
            "--dist",
            str(dist),
            "--no-build",
            "--dry-run",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "dry run: 2 package(s) ready" in out.stdout
