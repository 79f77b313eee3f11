"""`python -m train_launcher.fetch`: one training input from a dataset hub at a pinned revision.

The plan's `fetch` stage runs this once per `data.fetch` source: the rows of one split of one
dataset repository, at one revision, written as a JSON-lines file (the instances, the agent
trajectories or the held-out instances the rest of the plan reads), with a sidecar
`<output>.fetch.json` that records what was fetched (repository, revision asked for, the commit
it resolved to, split, rows). The output is written whole or not at all.

Where the rows come from is a `RowSource`:

- `HubSource`: the Hugging Face hub through `datasets.load_dataset(..., revision=...)` (the
  commit is read back with `huggingface_hub`); both are in the node image. Imported lazily:
  this module never needs them to be planned or tested.
- `FolderSource`: a local mirror laid out `<root>/<repo_id>/<revision>/<split>.jsonl` (or
  `.jsonl.gz`), given as a folder or a `file://` URL. For nodes without the hub and for tests;
  the same command line, the same checks, the same sidecar.

Not for mining, splitting or converting rows: the rows are written as the dataset holds them.
Exit 0 done, 2 bad input (an unknown split or revision, a bad row), 1 the hub failed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlparse

__all__ = [
    "FETCH_REPORT_SCHEMA_VERSION",
    "SIDECAR_SUFFIX",
    "FetchFailed",
    "FetchInputError",
    "FetchReport",
    "FolderSource",
    "HubSource",
    "RowSource",
    "fetch",
    "is_commit",
    "main",
    "row_source",
    "sidecar",
]

SIDECAR_SUFFIX = ".fetch.json"
#: The layout of `FetchReport` (the sidecar).
FETCH_REPORT_SCHEMA_VERSION = 1
_COMMIT = re.compile(r"[0-9a-f]{40}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}")


class FetchInputError(Exception):
    """The source has no such repository, revision or split, or a row is not a JSON object."""


class FetchFailed(Exception):
    """The hub could not be reached or refused the download."""


def is_commit(revision: str) -> bool:
    """A full commit id (40 hex digits): the only revision that names fixed rows."""
    return bool(_COMMIT.fullmatch(revision))


def sidecar(output: Path) -> Path:
    return output.with_name(output.name + SIDECAR_SUFFIX)


def _check_names(repo_id: str, revision: str, split: str) -> None:
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(_NAME.fullmatch(p) and ".." not in p for p in parts):
        raise FetchInputError(f"repo_id {repo_id!r} is not OWNER/NAME")
    for what, value in (("revision", revision), ("split", split)):
        if not _NAME.fullmatch(value) or ".." in value:
            raise FetchInputError(f"{what} {value!r} is not a plain name")


class RowSource(Protocol):
    """Where a dataset's rows come from."""

    def rows(self, repo_id: str, revision: str, split: str) -> Iterator[dict[str, Any]]: ...

    def resolved(self, repo_id: str, revision: str) -> str | None:
        """The commit `revision` names, when the source can tell."""
        ...


@dataclass(frozen=True)
class FolderSource:
    """A local mirror: `<root>/<repo_id>/<revision>/<split>.jsonl[.gz]`."""

    root: Path

    def _file(self, repo_id: str, revision: str, split: str) -> Path:
        _check_names(repo_id, revision, split)
        folder = self.root / repo_id / revision
        for name in (f"{split}.jsonl", f"{split}.jsonl.gz"):
            if (folder / name).is_file():
                return folder / name
        raise FetchInputError(f"{repo_id}@{revision}: no split {split!r} under {folder}")

    def rows(self, repo_id: str, revision: str, split: str) -> Iterator[dict[str, Any]]:
        from codegrep_records import RowProblem, read_rows

        path = self._file(repo_id, revision, split)
        if path.suffix == ".gz":
            yield from _gz_rows(path)
            return
        for line, row in read_rows(path):
            if isinstance(row, RowProblem) or not isinstance(row, dict):
                raise FetchInputError(f"{path}:{line}: not a JSON object row ({row})")
            yield row

    def resolved(self, repo_id: str, revision: str) -> str | None:
        return revision if is_commit(revision) else None


def _gz_rows(path: Path) -> Iterator[dict[str, Any]]:
    from codegrep_records.io import parse_json

    line = 0
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line, text in enumerate(fh, 1):
                if not text.strip():
                    continue
                try:
                    row = parse_json(text)
                except ValueError as exc:
                    raise FetchInputError(f"{path}:{line}: not JSON ({exc})") from None
                if not isinstance(row, dict):
                    raise FetchInputError(f"{path}:{line}: not a JSON object row")
                yield row
    except (UnicodeDecodeError, EOFError, gzip.BadGzipFile) as exc:
        raise FetchInputError(f"{path}:{line + 1}: not gzip'd UTF-8 ({exc})") from None


class HubSource:
    """The Hugging Face hub (`datasets` and `huggingface_hub`, both in the node image)."""

    def rows(self, repo_id: str, revision: str, split: str) -> Iterator[dict[str, Any]]:
        _check_names(repo_id, revision, split)
        try:
            import datasets  # type: ignore[import-not-found, import-untyped, unused-ignore]
        except ImportError as exc:
            raise FetchFailed(
                "fetching from the hub needs the `datasets` package (in the node image; "
                "pip install datasets), or give a local mirror as the source"
            ) from exc
        try:
            table = datasets.load_dataset(repo_id, split=split, revision=revision)
        except ValueError as exc:  # an unknown split
            raise FetchInputError(f"{repo_id}@{revision}: {exc}") from None
        except Exception as exc:  # network, authentication, a missing revision
            raise FetchFailed(f"{repo_id}@{revision}: {type(exc).__name__}: {exc}") from None
        for row in table:
            yield dict(row)

    def resolved(self, repo_id: str, revision: str) -> str | None:
        try:
            from huggingface_hub import HfApi  # type: ignore[import-not-found, unused-ignore]

            sha = HfApi().dataset_info(repo_id, revision=revision).sha
        except Exception:  # the rows came; the commit id is a record, not a condition
            return None
        return sha if isinstance(sha, str) else None


def row_source(source: str) -> RowSource:
    """`hub` -> `HubSource`; a folder or a `file://` URL -> `FolderSource`."""
    if source == "hub":
        return HubSource()
    if source.startswith("file://"):
        return FolderSource(Path(unquote(urlparse(source).path)))
    if "://" in source:
        raise FetchInputError(f"source {source!r}: use hub, a folder or a file:// URL")
    return FolderSource(Path(source).expanduser())


@dataclass(frozen=True)
class FetchReport:
    """The sidecar of a fetched file: what was fetched, at which commit, how many rows."""

    repo_id: str
    revision: str
    commit: str | None
    split: str
    rows: int
    output: str
    #: The sidecar's layout; a sidecar without `schema_version` (written before it) is 1.
    schema_version: int = FETCH_REPORT_SCHEMA_VERSION

    def to_json(self) -> str:
        return json.dumps(self.__dict__, indent=1) + "\n"


def fetch(
    rows_from: RowSource,
    *,
    repo_id: str,
    revision: str,
    split: str,
    output: Path,
    limit: int | None = None,
) -> FetchReport:
    """Write the split's rows (at most `limit`) to `output` and its sidecar; the report.

    The rows stream to `<output>.part` (a trajectory set is gigabytes), renamed over `output`
    once complete; the sidecar is written last, so a file without a matching sidecar is never
    taken as fetched."""
    from codegrep_records.io import open_appending, write_atomically

    output.parent.mkdir(parents=True, exist_ok=True)
    part = output.with_name(output.name + ".part")
    if part.is_symlink() or part.exists():  # our own name: a stale part, or a planted link
        part.unlink()
    rows = 0
    try:
        with open_appending(part) as fh:
            for row in rows_from.rows(repo_id, revision, split):
                if limit is not None and rows >= limit:
                    break
                fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
                rows += 1
        if not rows:
            raise FetchInputError(f"{repo_id}@{revision} split {split!r} has no rows")
        report = FetchReport(
            repo_id=repo_id,
            revision=revision,
            commit=rows_from.resolved(repo_id, revision),
            split=split,
            rows=rows,
            output=str(output),
        )
        stale = sidecar(output)
        if stale.is_symlink() or stale.exists():  # our own name: never vouch for new rows
            stale.unlink()
        os.replace(part, output)
    finally:
        if part.is_symlink() or part.exists():
            part.unlink()
    write_atomically(sidecar(output), report.to_json())
    return report


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m train_launcher.fetch", description=__doc__)
    ap.add_argument("--repo-id", required=True, help="OWNER/NAME of the dataset repository")
    ap.add_argument("--revision", required=True, help="a commit id (or a branch or tag)")
    ap.add_argument("--split", default="train")
    ap.add_argument("--source", default="hub", help="hub, a mirror folder or a file:// URL")
    ap.add_argument("--limit", type=int, default=None, help="at most this many rows")
    ap.add_argument("-o", "--output", type=Path, required=True, help="the rows (JSONL)")
    args = ap.parse_args(argv)
    from codegrep_records import RecordError

    try:
        report = fetch(
            row_source(args.source),
            repo_id=args.repo_id,
            revision=args.revision,
            split=args.split,
            output=args.output,
            limit=args.limit,
        )
    except (FetchInputError, RecordError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except FetchFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    pinned = report.commit or "unknown commit"
    print(
        f"{report.rows} rows of {report.repo_id}@{report.revision} ({pinned}) "
        f"split {report.split} -> {report.output}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
