"""What a run really read, recorded when it starts: the runner checkout's commit (and its
vendored SDK's), the hash of the runner's template, and the hashes of the run's own inputs.

The manifest says what the plan pinned; this record (`<run>/read.json`, written by `swe-eval
downstream stamp` as the first command of each run in commands.sh) says what was there when the
run began. `report` compares the two and the records of every run it pools.

Commits are read from the checkout's files (HEAD, a loose ref or packed-refs), never by running
git in it: the runner's checkout is the user's, and its git configuration is not ours to run.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from codegrep_records import RecordFileError
from codegrep_records.io import read_text_file
from worktree_sandbox import repository_locations
from worktree_sandbox.errors import RepositoryLayoutError

from swe_eval.downstream._plan_pins import STOCK_TEMPLATE

__all__ = [
    "READ_FILE",
    "READ_KIND",
    "RunRead",
    "StampError",
    "head_commit",
    "read_run_inputs",
    "sdk_folder",
]

READ_FILE = "read.json"
READ_KIND = "swe-eval-downstream-read"
_HEX = re.compile(r"^[0-9a-f]{40}$|^[0-9a-f]{64}$")
_REF = re.compile(r"^refs/[A-Za-z0-9._/-]{1,200}$")
_MAX_SMALL = 1 << 16  # HEAD, a ref, .gitmodules
_MAX_PACKED_REFS = 64 << 20
# the run's own inputs, hashed when it starts (relative to its folder; absent ones are None)
RUN_INPUTS = ("dataset.jsonl", "llm_config.json", "injected.jsonl", "prompt.j2", "../instances.txt")


class StampError(ValueError):
    """A checkout or run folder whose state cannot be read: the message says which file."""


def _small(path: Path, what: str, limit: int = _MAX_SMALL) -> str:
    try:
        return read_text_file(path, refuse_links=True, max_bytes=limit)
    except RecordFileError as exc:
        raise StampError(f"{what}: {exc}") from None


def head_commit(folder: Path) -> str:
    """The commit `folder` (a git checkout or a submodule in one) has checked out, read from
    HEAD and the ref it names (loose or packed)."""
    try:
        places = repository_locations(folder)
    except RepositoryLayoutError as exc:
        raise StampError(f"{folder}: where its repository lives cannot be said ({exc})") from None
    if places.git_dir is None:
        raise StampError(f"{folder} is not a git checkout (no .git)")
    head = _small(places.git_dir / "HEAD", f"{folder}: HEAD").strip()
    if _HEX.match(head):
        return head
    if not head.startswith("ref:"):
        raise StampError(f"{folder}: HEAD is neither a commit nor a ref")
    ref = head.removeprefix("ref:").strip()
    if not _REF.match(ref) or ".." in ref.split("/"):
        raise StampError(f"{folder}: HEAD names an unusable ref")
    common = places.common_dir or places.git_dir
    for base in (places.git_dir, common):
        loose = base / ref
        if loose.is_file() and not loose.is_symlink():
            value = _small(loose, f"{folder}: {ref}").strip()
            if _HEX.match(value):
                return value
            raise StampError(f"{folder}: {ref} holds no commit id")
    packed = common / "packed-refs"
    if packed.is_file():
        text = _small(packed, f"{folder}: packed-refs", _MAX_PACKED_REFS)
        for line in text.splitlines():
            sha, _, name = line.partition(" ")
            if name == ref and _HEX.match(sha):
                return sha
    raise StampError(f"{folder}: HEAD names {ref}, which has no commit (an unborn branch?)")


def sdk_folder(benchmarks: Path) -> Path:
    """The vendored agent SDK of the runner's checkout: the submodule of `.gitmodules` whose
    url names the agent SDK."""
    gitmodules = benchmarks / ".gitmodules"
    text = _small(gitmodules, f"{benchmarks}: .gitmodules")
    path: str | None = None
    for line in text.splitlines():
        key, _, value = line.strip().partition("=")
        key, value = key.strip(), value.strip()
        if line.strip().startswith("["):
            path = None
        elif key == "path":
            path = value
        elif key == "url" and "agent-sdk" in value and path:
            folder = (benchmarks / path).resolve()
            if not folder.is_relative_to(benchmarks.resolve()):
                raise StampError(f"{gitmodules}: the SDK's path leaves the checkout")
            return folder
    raise StampError(f"{gitmodules}: no submodule whose url names the agent SDK")


def _sha256(path: Path) -> str | None:
    if not path.exists() and not path.is_symlink():
        return None
    if path.is_symlink() or not path.is_file():
        raise StampError(f"{path}: not a regular file (a link or a folder)")
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise StampError(f"{path}: {exc.strerror or exc}") from None
    return digest.hexdigest()


@dataclass(frozen=True)
class RunRead:
    """`<run>/read.json`: what one run read when it started."""

    runner_head: str
    sdk_head: str
    template_sha256: str | None
    inputs: dict[str, str | None]

    def record(self, *, allowed_other_checkout: bool) -> dict[str, object]:
        return {
            "kind": READ_KIND,
            "schema_version": 1,
            "runner_head": self.runner_head,
            "sdk_head": self.sdk_head,
            "template_sha256": self.template_sha256,
            "inputs_sha256": self.inputs,
            "allowed_other_checkout": allowed_other_checkout,
        }


def read_run_inputs(run_folder: Path, benchmarks: Path) -> RunRead:
    """What the run in `run_folder` is about to read from the runner's checkout and its own
    folder; `StampError` naming the file that cannot be read."""
    return RunRead(
        runner_head=head_commit(benchmarks),
        sdk_head=head_commit(sdk_folder(benchmarks)),
        template_sha256=_sha256(benchmarks / STOCK_TEMPLATE),
        inputs={name: _sha256(run_folder / name) for name in RUN_INPUTS},
    )
