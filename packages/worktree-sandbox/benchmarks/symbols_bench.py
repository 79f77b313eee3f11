"""Time the definition index (`worktree_sandbox.symbols`) over every file of one language in a
repository at a commit: the parse alone, then a `SymbolIndex` cold, warm (memory cache) and from
its disk cache in a new index. Needs the `symbols` extra.

    python benchmarks/symbols_bench.py REPO [--commit HEAD] [--glob '*.py'] [-o symbols.json]

REPO is a git repository (a work tree, its .git, or a bare clone). Prints files, MB, seconds and
MB/s per phase and writes them as JSON with `-o`.
"""

from __future__ import annotations

import argparse
import asyncio
import fnmatch
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

from worktree_sandbox import SymbolIndex, TreePool, parse_definitions
from worktree_sandbox.commit_tree import CommitTree
from worktree_sandbox.symbols import MAX_PARSE_BYTES, grammar_version, language_of


def _row(
    phase: str, files: int, size: int, seconds: float, cpu: float, **extra: object
) -> dict[str, object]:
    """One phase's figures. CPU seconds (this process, all threads) are given beside the wall
    clock: on a shared machine they say more about the code than the wall clock does."""
    mb = size / 1e6
    row: dict[str, object] = {
        "phase": phase,
        "files": files,
        "MB": round(mb, 2),
        "seconds": round(seconds, 3),
        "MB/s": round(mb / seconds, 2) if seconds > 0 else None,
        "cpu_seconds": round(cpu, 3),
        "MB/cpu_s": round(mb / cpu, 2) if cpu > 0 else None,
        **extra,
    }
    rate, cpu_rate = row["MB/s"] or 0, row["MB/cpu_s"] or 0
    notes = " ".join(f"{k}={v}" for k, v in extra.items())
    print(
        f"{phase:<32} {files:>5} files {mb:>6.2f} MB {seconds:>7.3f} s {rate:>7.2f} MB/s  "
        f"cpu {cpu:>7.3f} s {cpu_rate:>7.2f} MB/cpu-s  {notes}",
        flush=True,
    )
    return row


class _Clock:
    def __enter__(self) -> _Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


async def _index_pass(index: SymbolIndex, tree: CommitTree, paths: list[str]) -> tuple[_Clock, int]:
    with _Clock() as clock:
        found = await index.defining(tree, ["__init__"], paths)
    return clock, len(found["__init__"])


async def run(repo: str, commit: str, glob: str, jobs: int) -> tuple[str, list[dict[str, object]]]:
    rows: list[dict[str, object]] = []
    async with TreePool(materialize="never") as pool, pool.tree_at(repo, commit) as tree:
        contents = {}
        for p in await tree.files():
            name = p if "/" in glob else p.rsplit("/", 1)[-1]
            if not fnmatch.fnmatchcase(name, glob) or language_of(p) is None:
                continue
            st = await tree._stat(p)
            if st is None or st.kind != "file" or not 0 <= st.size <= MAX_PARSE_BYTES:
                continue  # links and files over the cap: the index skips them too
            contents[p] = await tree.read_bytes(p)
        size = sum(len(d) for d in contents.values())
        sha = tree.commit
        mb = size / 1e6
        print(
            f"{repo} @ {commit} ({sha[:12]}): {len(contents)} files matching {glob!r}, {mb:.2f} MB"
        )
        print(grammar_version())

        # The parse and extraction alone, one file after another, content already in memory.
        count = 0
        with _Clock() as clock:
            for p, data in contents.items():
                language = language_of(p)
                assert language is not None
                count += len(parse_definitions(data, language))
        rows.append(
            _row("parse+extract (bytes in memory)", len(contents), size, clock.wall, clock.cpu,
                 definitions=count)
        )  # fmt: skip

        files = list(contents)

        def add(phase: str, clock: _Clock, **extra: object) -> None:
            rows.append(_row(phase, len(files), size, clock.wall, clock.cpu, **extra))

        index = SymbolIndex(jobs=jobs)
        clock, hits = await _index_pass(index, tree, files)
        add("index cold, no disk cache", clock, parsed=index.stats.parsed)
        clock, hits = await _index_pass(index, tree, files)
        add("index warm (memory cache)", clock, memory_hits=index.stats.memory_hits)

        with tempfile.TemporaryDirectory(prefix="symbols-bench-") as cache_dir:
            with SymbolIndex(cache_dir, jobs=jobs) as writer:
                clock, _ = await _index_pass(writer, tree, files)
                add("index cold, writing disk cache", clock, parsed=writer.stats.parsed)
                db = writer.cache_file
                assert db is not None
                db_bytes = sum(f.stat().st_size for f in db.parent.glob(db.name + "*"))
            with SymbolIndex(cache_dir, jobs=jobs) as reader:
                clock, _ = await _index_pass(reader, tree, files)
                add(
                    "new index, from disk cache",
                    clock,
                    disk_hits=reader.stats.disk_hits,
                    parsed=reader.stats.parsed,
                    cache_MB=round(db_bytes / 1e6, 2),
                )
        print(f"__init__ defined {hits} times")
    return sha, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo", help="a git repository (work tree, .git or bare)")
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--glob", default="*.py", help="which files (default: *.py)")
    ap.add_argument("-j", "--jobs", type=int, default=4, help="files read and parsed at once")
    ap.add_argument("-o", "--output", type=Path, help="write the figures as JSON")
    args = ap.parse_args()
    sha, rows = asyncio.run(run(args.repo, args.commit, args.glob, args.jobs))
    if args.output:
        meta = {
            "repo": args.repo,
            "commit": sha,
            "glob": args.glob,
            "grammar": grammar_version(),
            "python": sys.version.split()[0],
            "machine": platform.platform(),
        }
        args.output.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
