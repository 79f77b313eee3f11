"""Install each package alone, as a user would, and use it: the check behind install-alone.sh.

    python infra/ci/install_alone.py [--mode latest|lowest|both] [--only NAME ...] [-j N]

Every wheel of the workspace is built once into WORK/dist. Then, for each package and each mode,
a fresh venv gets that one package from those wheels (`--find-links`: its siblings exist only
there; everything else comes from the package index):

- latest: what `pip install NAME` gives (newest dependencies) as of the index cutoff in
  .ci/index-cutoff, so the verdict is the same on any day; `--today` drops the cutoff (the
  drift check of a release);
- lowest: the package's own requirements at their floors (`--resolution lowest-direct`, with
  the wheel's Requires-Dist given as direct requirements, or uv would keep them transitive and
  take the newest), so a floor that does not work fails here.

In each venv it imports the package and checks `__version__`, runs `<script> --help` for every
console script, runs the README's ```python blocks (readme_examples.py; blocks marked
`<!-- no-run: reason -->` are skipped), and, where the package has a cheap extra, a command that
uses it. One uv cache is shared, bytecode is not compiled, torch is never installed.

Then the two installs a user types in a checkout (`--no-user-paths` skips them): the README's
light path to the main job, `uv tool install ./apps/injector` (its size on disk is printed, and
`codegrep localize` must read definitions with tree-sitter), and `pip install` of
worktree-sandbox from source with its workspace siblings named as paths beside it.

Prints a PASS/FAIL table with timings; exit status 1 on any failure, 2 on bad usage.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
INDEX_CUTOFF = ROOT / ".ci" / "index-cutoff"
sys.path.insert(0, str(HERE.parent))
import release  # noqa: E402  (infra/release.py: workspace discovery and requirement parsing)

# Extras worth their install time here (never `dense`: it brings torch).
EXTRAS: dict[str, tuple[str, ...]] = {
    "codegrep-records": ("parquet",),
    "grpo-rewards": ("numpy",),
    "catm": ("plot",),
    "swe-eval": ("plot",),
    "codegrep": ("serve",),
    "worktree-sandbox": ("symbols",),
}

PATCH = "diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
FIXTURES: dict[str, list[dict[str, object]]] = {
    "instances.jsonl": [
        {
            "instance_id": f"o__r-{i}",
            "repo": "o/r",
            "base_commit": "0" * 40,
            "problem_statement": "x is wrong",
            "patch": PATCH.format(f=f),
        }
        for i, f in ((1, "a.py"), (2, "b.py"))
    ],
    "pred.jsonl": [
        {"instance_id": "o__r-1", "files": ["a.py", "c.py"]},
        {"instance_id": "o__r-2", "files": ["b.py"]},
    ],
    "labels.jsonl": [
        {
            "schema_version": 1,
            "instance_id": "o__r-1",
            "repo": "o/r",
            "patch_files": ["a.py"],
            "mined": [
                {
                    "path": "c.py",
                    "reasoning_tokens": 831,
                    "n_reads": 2,
                    "verdict": "UNJUDGED",
                    "judge_answer": "",
                    "weight_raw": 1.0,
                    "weight": 1.2,
                    "in_patch": False,
                    "in_gold": True,
                    "trajectories": ["t1"],
                    "reasoning": "",
                }
            ],
            "gold": ["a.py", "c.py"],
            "trajectories": ["t1"],
            "judge": "none",
        }
    ],
}
TO_PARQUET = (
    "import json, pyarrow as pa, pyarrow.parquet as pq; "
    "rows = [json.loads(line) for line in open('instances.jsonl')]; "
    "pq.write_table(pa.Table.from_pylist(rows), 'instances.parquet')"
)
READ_PARQUET = (
    TO_PARQUET + "; from codegrep_records import load_instances; "
    "loaded = load_instances('instances.parquet'); "
    "assert len(loaded.records) == 2 and not loaded.problems, loaded; print('read 2 rows')"
)
NUMPY_BACKEND = (
    "from grpo_rewards import group_advantages; "
    "out = group_advantages([1.0, 0.0, 0.5, 0.5], group_size=2, backend='numpy'); "
    "assert [round(a, 3) for a in out] == [0.707, -0.707, 0.0, 0.0], out; print(out)"
)
PARSE_JAVA = (
    "from worktree_sandbox import parse_definitions; "
    "defs = parse_definitions(b'public final class A { int f(int x) { return x; } }', 'java'); "
    "names = [(d.qualname, d.kind) for d in defs]; "
    "assert names == [('A', 'class'), ('A.f', 'method')], names; print(names)"
)
# (what, argv): "{py}" is the venv's python; a script name runs the venv's script.
USES: dict[str, list[tuple[str, list[str]]]] = {
    "codegrep-records": [("parquet", ["{py}", "-c", READ_PARQUET])],
    "grpo-rewards": [("numpy", ["{py}", "-c", NUMPY_BACKEND])],
    "worktree-sandbox": [("symbols", ["{py}", "-c", PARSE_JAVA])],
    "catm": [("plot", ["catm", "stats", "labels.jsonl", "--png", "weights.png"])],
    "swe-eval": [
        ("parquet", ["{py}", "-c", TO_PARQUET]),
        (
            "parquet",
            [
                "swe-eval",
                "retrieval",
                "-i",
                "instances.parquet",
                "-p",
                "pred.jsonl",
                "--resamples",
                "200",
            ],
        ),
        ("plot", ["swe-eval", "plot", "-i", "instances.jsonl", "-p", "pred.jsonl", "-o", "p.png"]),
    ],
}


SIBLINGS: set[str] = set()  # the workspace's distributions (canonical names)

# The README's light path to the main job, as a user types it in a checkout (the app alone, in
# its own venv: `uv tool install`), and the documented way to pip-install a package from a
# checkout (its workspace siblings named as paths beside it: pip knows no workspace, and the
# siblings are on no index until released). Both are checked as typed, not from the wheels.
LIGHT_APP = "apps/injector"
PIP_FROM_SOURCE = ("worktree-sandbox",)
ISSUE = "Refunds fail: `Invoice.add_line(-5)` raises ValueError: negative amounts not allowed\n"
APP_FILES = {
    "billing/invoice.py": "class Invoice:\n    def add_line(self, amount):\n"
    "        if amount < 0:\n            raise ValueError('negative amounts not allowed')\n",
    "billing/tax.py": "def vat_rate(country):\n    return 0.19\n",
}


@dataclass
class Result:
    package: str
    mode: str
    install_s: float = 0.0
    smoke_s: float = 0.0
    steps: list[tuple[str, bool]] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)  # the direct requirements installed
    size_mb: float | None = None  # the install's size on disk (the light path)
    log: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(ok for _, ok in self.steps)


def sh(argv: list[str], result: Result, *, cwd: Path | None = None, timeout: float = 600) -> bool:
    started = time.perf_counter()
    try:
        out = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
        code, text = out.returncode, out.stdout + out.stderr
    except subprocess.TimeoutExpired as exc:
        said = [
            s.decode(errors="replace") if isinstance(s, bytes) else s or ""
            for s in (exc.stdout, exc.stderr)
        ]
        code, text = -1, f"timed out after {timeout:g} s\n" + "".join(said)
    took = time.perf_counter() - started
    result.log.append(f"$ {' '.join(argv)}  # exit {code}, {took:.1f} s")
    if text.strip():
        result.log.append(text.rstrip())
    return code == 0


def wheel_requirements(wheel: Path, extras: tuple[str, ...]) -> list[str]:
    """The wheel's Requires-Dist for the base package and `extras`, markers stripped."""
    headers, _ = release.read_wheel_metadata(wheel)
    reqs = []
    for text in headers.get("requires-dist", []):
        req = release.Requirement.parse(text)
        extra = req.extra()
        if extra is not None and extra not in {release.canonical(x) for x in extras}:
            continue
        reqs.append(text.split(";", 1)[0].strip() if extra is not None else text)
    return reqs


def check(
    member: release.Member, mode: str, dist: Path, work: Path, constraints: Path, python: str
) -> Result:
    result = Result(member.name, mode)
    venv = work / "venvs" / f"{member.key}-{mode}"
    shutil.rmtree(venv, ignore_errors=True)
    py = str(venv / "bin" / "python")
    extras = EXTRAS.get(member.key, ())
    wheel, _ = release.find_artifacts(member, dist)
    if wheel is None:
        result.steps.append(("wheel", False))
        result.log.append(f"no wheel of {member.name} {member.version} in {dist}")
        return result
    target = f"{member.name}[{','.join(extras)}]" if extras else member.name
    argv = ["uv", "pip", "install", "--python", py, "--find-links", str(dist)]
    argv += ["--constraints", str(constraints), f"{target}=={member.version}"]
    if mode == "lowest":
        argv += ["--resolution", "lowest-direct", *wheel_requirements(wheel, extras)]
    started = time.perf_counter()
    ok = sh(["uv", "venv", "--quiet", "--python", python, str(venv)], result) and sh(argv, result)
    result.install_s = time.perf_counter() - started
    result.steps.append(("install", ok))
    if not ok:
        return result
    listing = subprocess.run(
        ["uv", "pip", "list", "--python", py, "--format", "json"], capture_output=True, text=True
    )
    if listing.returncode == 0:
        installed = {release.canonical(p["name"]): p["version"] for p in json.loads(listing.stdout)}
        for text in wheel_requirements(wheel, extras):
            name = release.Requirement.parse(text).name
            if name in installed and name not in SIBLINGS:
                result.versions[name] = installed[name]

    started = time.perf_counter()
    module = member.name.replace("-", "_")
    probe = (
        f"import {module}; v = {module}.__version__; "
        f"assert v == {member.version!r}, v; print({module}.__file__, v)"
    )
    # A warning on import is what a user sees too (pydantic 2.7-2.9 warned on codegrep-model's
    # `model_s`); deprecations are hidden from users by default and are left alone.
    quiet = [
        "-W",
        "error",
        "-W",
        "ignore::DeprecationWarning",
        "-W",
        "ignore::PendingDeprecationWarning",
    ]
    result.steps.append(("import", sh([py, *quiet, "-c", probe], result)))
    bin_dir = venv / "bin"
    helps = [sh([str(bin_dir / s), "--help"], result, timeout=120) for s in member.scripts]
    if helps:
        result.steps.append(("--help", all(helps)))
    readme = member.path / "README.md"
    copies = [a for p in (member.path / "src",) if p.is_dir() for a in ("--copy", str(p))]
    runner = [py, str(HERE / "readme_examples.py"), str(readme), *copies, "--timeout", "120"]
    result.steps.append(("readme", sh(runner, result, timeout=900)))
    uses = USES.get(member.key, [])
    if uses:
        scratch = Path(tempfile.mkdtemp(prefix=f"uses-{member.key}-", dir=work))
        for name, rows in FIXTURES.items():
            (scratch / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
        for what, use in uses:
            cmd = [py if a == "{py}" else a for a in use]
            if (bin_dir / cmd[0]).exists():
                cmd[0] = str(bin_dir / cmd[0])
            result.steps.append((what, sh(cmd, result, cwd=scratch, timeout=300)))
    result.smoke_s = time.perf_counter() - started
    return result


def sibling_closure(member: release.Member, by_key: dict[str, release.Member]) -> list[str]:
    """`member` and the workspace siblings it needs (run-time dependencies, recursively),
    dependencies first: the paths `pip install` must be given from a checkout."""
    order: list[str] = []

    def visit(m: release.Member) -> None:
        for extra, req in release.sibling_requirements(m, by_key):
            if extra is None and req.name not in order:
                visit(by_key[req.name])
        if m.key not in order:
            order.append(m.key)

    visit(member)
    return order


def tree_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def check_light(work: Path) -> Result:
    """`uv tool install ./apps/injector` as the README says, in its own tool folder; then
    `codegrep --version` and `codegrep localize --json` on a small repository, which must
    read definitions with tree-sitter (the app requires worktree-sandbox's `symbols`)."""
    result = Result("codegrep", "light")
    tools, bins = work / "tools", work / "tool-bin"
    shutil.rmtree(tools, ignore_errors=True)
    env = {**os.environ, "UV_TOOL_DIR": str(tools), "UV_TOOL_BIN_DIR": str(bins)}
    started = time.perf_counter()
    ok = sh_env(["uv", "tool", "install", str(ROOT / LIGHT_APP)], result, env)
    result.install_s = time.perf_counter() - started
    result.steps.append(("install", ok))
    if not ok:
        return result
    result.size_mb = tree_bytes(tools) / 1e6
    started = time.perf_counter()
    exe = str(bins / "codegrep")
    result.steps.append(("--version", sh_env([exe, "--version"], result, env)))
    repo = Path(tempfile.mkdtemp(prefix="light-repo-", dir=work))
    for rel, text in APP_FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    out = subprocess.run(
        [exe, "localize", "--repo", str(repo), "--issue", "-", "--json"],
        input=ISSUE,
        capture_output=True,
        text=True,
        timeout=300,
    )
    result.log.append(f"$ codegrep localize --json  # exit {out.returncode}")
    result.log.append((out.stdout + out.stderr).rstrip())
    try:
        answer = json.loads(out.stdout)
        used = answer["files"][:1] == ["billing/invoice.py"] and (
            answer["definitions"] == "tree-sitter"
        )
    except (ValueError, KeyError, TypeError):
        used = False
    result.steps.append(("localize", out.returncode == 0 and used))
    result.smoke_s = time.perf_counter() - started
    return result


def check_pip_source(member: release.Member, work: Path, python: str, cutoff: str | None) -> Result:
    """`pip install` of `member` from the checkout, its siblings given as paths beside it
    (the way its README documents), in a fresh venv with pip; then import and --help."""
    result = Result(member.name, "pip-source")
    by_key = {m.key: m for m in release.discover(ROOT)}
    venv = work / "venvs" / f"{member.key}-pip-source"
    shutil.rmtree(venv, ignore_errors=True)
    py = str(venv / "bin" / "python")
    started = time.perf_counter()
    ok = sh(["uv", "venv", "--quiet", "--seed", "--python", python, str(venv)], result)
    if ok and cutoff is not None:  # pip's own spelling of the index cutoff (the venv's config)
        (venv / "pip.conf").write_text(f"[install]\nuploaded-prior-to = {cutoff}\n")
    paths = [str(by_key[k].path) for k in sibling_closure(member, by_key)]
    ok = ok and sh([py, "-m", "pip", "install", "--quiet", *paths], result, timeout=900)
    result.install_s = time.perf_counter() - started
    result.steps.append(("install", ok))
    if not ok:
        return result
    started = time.perf_counter()
    module = member.name.replace("-", "_")
    result.steps.append(("import", sh([py, "-c", f"import {module}"], result)))
    helps = [sh([str(venv / "bin" / s), "--help"], result) for s in member.scripts]
    if helps:
        result.steps.append(("--help", all(helps)))
    result.smoke_s = time.perf_counter() - started
    return result


def sh_env(argv: list[str], result: Result, env: dict[str, str], timeout: float = 900) -> bool:
    """`sh` with an environment of its own."""
    started = time.perf_counter()
    try:
        out = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL
        )
        code, text = out.returncode, out.stdout + out.stderr
    except subprocess.TimeoutExpired:
        code, text = -1, f"timed out after {timeout:g} s"
    result.log.append(f"$ {' '.join(argv)}  # exit {code}, {time.perf_counter() - started:.1f} s")
    if text.strip():
        result.log.append(text.rstrip())
    return code == 0


def table(results: list[Result]) -> str:
    rows = [("package", "mode", "install", "checks", "steps", "result", "direct requirements")]
    for r in results:
        checks = " ".join(f"{name}:{'ok' if ok else 'FAIL'}" for name, ok in r.steps)
        versions = ", ".join(f"{k} {v}" for k, v in sorted(r.versions.items()))
        if r.size_mb is not None:
            versions = f"installed size {r.size_mb:.0f} MB"
        rows.append(
            (
                r.package,
                r.mode,
                f"{r.install_s:.1f}s",
                f"{r.smoke_s:.1f}s",
                checks,
                "PASS" if r.ok else "FAIL",
                versions,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    lines = []
    for row in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row[:6], widths, strict=True)))
        lines[-1] += "  " + row[6]
    return "\n".join(lines)


def index_env(today: bool) -> str | None:
    """UV_EXCLUDE_NEWER for every uv call: the committed cutoff, or None for today's index."""
    return None if today else INDEX_CUTOFF.read_text(encoding="utf-8").strip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--mode", choices=("latest", "lowest", "both"), default="both")
    ap.add_argument("--only", action="append", default=[], help="this package only (repeatable)")
    ap.add_argument("-j", "--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--work", type=Path, help="working folder (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the working folder")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the venvs")
    ap.add_argument(
        "-v", "--verbose", action="store_true", help="print every log, not only failures"
    )
    ap.add_argument(
        "--today",
        action="store_true",
        help="resolve against today's index, not the cutoff in .ci/index-cutoff (a drift check)",
    )
    ap.add_argument(
        "--no-user-paths",
        dest="user_paths",
        action="store_false",
        help="skip the installs from the checkout (the app's light path, pip from source)",
    )
    args = ap.parse_args(argv)

    members = release.discover(ROOT)
    unknown = set(map(release.canonical, args.only)) - {m.key for m in members}
    if unknown:
        print(f"not a workspace member: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    chosen = [m for m in members if not args.only or m.key in map(release.canonical, args.only)]
    modes = ("latest", "lowest") if args.mode == "both" else (args.mode,)
    work = args.work or Path(tempfile.mkdtemp(prefix="install-alone-"))
    work.mkdir(parents=True, exist_ok=True)
    dist = work / "dist"
    os.environ["UV_COMPILE_BYTECODE"] = "0"  # compile only what the checks import
    # "latest" is the newest as of the committed cutoff, so CI gives the same verdict on any day;
    # --today is the drift check a release runs (infra/README.md).
    cutoff = index_env(today=args.today)
    if cutoff is None:
        os.environ.pop("UV_EXCLUDE_NEWER", None)
    else:
        os.environ["UV_EXCLUDE_NEWER"] = cutoff
    print(f"== index: {os.environ.get('UV_EXCLUDE_NEWER') or 'today'}", flush=True)
    os.environ.pop("VIRTUAL_ENV", None)
    started = time.perf_counter()
    try:
        shutil.rmtree(dist, ignore_errors=True)
        print(f"== building every wheel into {dist}", flush=True)
        build = subprocess.run(
            ["uv", "build", "--all-packages", "--wheel", "--out-dir", str(dist)],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if build.returncode != 0:
            print(build.stdout + build.stderr, file=sys.stderr)
            return 1
        print(f"   built in {time.perf_counter() - started:.1f} s", flush=True)
        # Siblings exactly as built here, never a same-named project from the index.
        constraints = work / "siblings.txt"
        constraints.write_text("".join(f"{m.name}=={m.version}\n" for m in members))
        SIBLINGS.update(m.key for m in members)

        jobs = [(m, mode) for mode in modes for m in chosen]
        results: list[Result] = []
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = [
                pool.submit(check, m, mode, dist, work, constraints, args.python)
                for m, mode in jobs
            ]
            # the user paths from the checkout: the README's light install of the app, and
            # pip from source with the siblings as paths
            if args.user_paths:
                keys = {m.key for m in chosen}
                if "codegrep" in keys:
                    futures.append(pool.submit(check_light, work))
                futures += [
                    pool.submit(check_pip_source, m, work, args.python, cutoff)
                    for m in chosen
                    if m.key in PIP_FROM_SOURCE
                ]
            for future in futures:
                r = future.result()
                results.append(r)
                print(
                    f"== {r.package} ({r.mode}): {'PASS' if r.ok else 'FAIL'}, install "
                    f"{r.install_s:.1f} s, checks {r.smoke_s:.1f} s",
                    flush=True,
                )
                if args.verbose or not r.ok:
                    print("   " + "\n".join(r.log).replace("\n", "\n   "), flush=True)
        print()
        print(table(results))
        failed = [r for r in results if not r.ok]
        total = time.perf_counter() - started
        print(f"\n{len(results) - len(failed)}/{len(results)} passed in {total:.0f} s")
        return 1 if failed else 0
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
