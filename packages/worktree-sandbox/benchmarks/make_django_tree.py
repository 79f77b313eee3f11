"""Build a django-size git repository from Django release archives on the package registry.

django's own repository is too large to bring here, so the benchmark's django-size tree is made
of real Django source releases, one commit per release: a realistic tree (~6,500 files, the
same file sizes and layout), not its real history. Figures that depend on history (clone size,
fetch) are therefore optimistic for django; figures per tree (setup, checkout, grep) are real.

    python benchmarks/make_django_tree.py OUT_DIR            # -> OUT_DIR/django/.git
    worktree-sandbox bench --cache C --source 'OUT_DIR/{name}' --repo django/django
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

RELEASES = ["3.0.14", "3.1.14", "3.2.25", "4.0.10", "4.1.13"]


def _pip() -> list[str]:
    for cand in ([sys.executable, "-m", "pip"], ["python3", "-m", "pip"]):
        ok = subprocess.run([*cand, "--version"], capture_output=True, check=False)
        if ok.returncode == 0:
            return cand
    raise SystemExit("pip is needed to download the Django release archives")


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}  # fmt: skip
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="folder to create the repository in")
    parser.add_argument("--releases", nargs="+", default=RELEASES)
    args = parser.parse_args()
    repo = args.out / "django"
    if repo.exists():
        raise SystemExit(f"{repo} exists; remove it first")
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    with tempfile.TemporaryDirectory() as tmp:
        downloads = Path(tmp) / "dl"
        for i, version in enumerate(args.releases, 1):
            print(f"[{i}/{len(args.releases)}] Django {version}", flush=True)
            subprocess.run(
                [*_pip(), "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                 "--dest", str(downloads), f"django=={version}"],
                check=True,
            )  # fmt: skip
            sdist = next(p for p in downloads.iterdir() if version in p.name)
            for entry in repo.iterdir():
                if entry.name != ".git":
                    shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
            with tarfile.open(sdist) as tar:
                top = tar.getnames()[0].split("/")[0]
                tar.extractall(Path(tmp) / "x", filter="data")
            for entry in (Path(tmp) / "x" / top).iterdir():
                shutil.move(str(entry), repo / entry.name)
            shutil.rmtree(Path(tmp) / "x")
            _git(repo, "add", "-A")
            _git(repo, "commit", "-q", "-m", f"Django {version} (release archive)")
            _git(repo, "tag", version)
    count = subprocess.run(
        ["git", "ls-files"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.count("\n")
    print(f"{repo}: {len(args.releases)} commits, {count} files at the last one")


if __name__ == "__main__":
    main()
