"""Run the ```python blocks of a README, in order, the way a reader would paste them.

    python readme_examples.py README.md [--workdir DIR] [--copy PATH ...] [--timeout S]

Standard library only: it runs in a bare venv that holds nothing but the package under test.

- Blocks share one namespace, so a later block may use what an earlier one defined.
- A block whose first line starts with `>>>` is a doctest: its expected output is checked.
- Other blocks are executed as a script; top-level `await` is allowed (it runs in a fresh event
  loop), as in an asyncio REPL.
- A block that cannot run offline on a CPU-only machine is marked in the README by an HTML
  comment on the last non-blank line before its fence, with the reason:
  `<!-- no-run: needs a served model -->`. It is listed as skipped.
- Blocks run in a scratch git repository (one commit) holding a copy of the README and of each
  `--copy` path, so examples that search "." at HEAD find files, and nothing they write lands in
  the checkout. `--workdir DIR` runs them in DIR instead.

Exit status: 0 when every block that ran passed, 1 otherwise, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import doctest
import inspect
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
NO_RUN = re.compile(r"^\s*<!--\s*no-run\s*:\s*(?P<reason>.*?)\s*-->\s*$")
PYTHON_INFOS = {"python", "py", "python3", "pycon"}


@dataclass
class Block:
    line: int  # 1-based line of the opening fence
    code: str
    skip_reason: str | None

    @property
    def is_doctest(self) -> bool:
        first = next((ln for ln in self.code.splitlines() if ln.strip()), "")
        return first.lstrip().startswith(">>>")


def python_blocks(text: str) -> list[Block]:
    """The ```python fenced blocks of a markdown text, with their no-run marks."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    last_text = ""  # the last non-blank line outside a fence
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if lines[i].strip():
                last_text = lines[i]
            i += 1
            continue
        fence, info = m.group("fence"), m.group("info").strip()
        lang = info.split()[0].lower() if info else ""
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines):
            close = FENCE.match(lines[i])
            if (
                close
                and close.group("fence")[0] == fence[0]
                and len(close.group("fence")) >= len(fence)
                and not close.group("info").strip()
            ):
                break
            body.append(lines[i])
            i += 1
        i += 1  # past the closing fence (or the end of the text)
        if lang in PYTHON_INFOS:
            mark = NO_RUN.match(last_text)
            blocks.append(
                Block(
                    line=start + 1,
                    code="\n".join(body) + "\n",
                    skip_reason=mark.group("reason") if mark else None,
                )
            )
        last_text = ""
    return blocks


def _where(readme: Path) -> str:
    return f"{readme.resolve().parent.name}/{readme.name}"


class BlockTimeout(Exception):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise BlockTimeout


def _run_script(code: str, namespace: dict[str, object], filename: str) -> None:
    compiled = compile(code, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(compiled, namespace)
    if inspect.iscoroutine(result):
        asyncio.run(result)


def _run_doctest(code: str, namespace: dict[str, object], name: str, line: int) -> str | None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(code, namespace, name, name, line)
    out: list[str] = []
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    runner.run(test, out=out.append, clear_globs=False)
    namespace.update(test.globs)  # a DocTest runs in a copy of the globals it is given
    return "".join(out) if runner.failures else None


def scratch_repo(readme: Path, copies: list[Path]) -> Path:
    """A one-commit git repository holding the README and the `copies`."""
    root = Path(tempfile.mkdtemp(prefix="readme-examples-"))
    shutil.copy2(readme, root / "README.md")
    for path in copies:
        target = root / path.name
        if path.is_dir():
            shutil.copytree(path, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, target)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "readme-examples",
        "GIT_AUTHOR_EMAIL": "ci@localhost",
        "GIT_COMMITTER_NAME": "readme-examples",
        "GIT_COMMITTER_EMAIL": "ci@localhost",
    }
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "README examples"]):
        subprocess.run(["git", "-C", str(root), *argv], check=True, env=env)
    return root


def run(readme: Path, workdir: Path, timeout: float) -> int:
    blocks = python_blocks(readme.read_text(encoding="utf-8"))
    namespace: dict[str, object] = {"__name__": "__main__", "__builtins__": __builtins__}
    failures = 0
    ran = 0
    cwd = Path.cwd()
    os.chdir(workdir)
    signal.signal(signal.SIGALRM, _alarm)
    try:
        for block in blocks:
            label = f"{_where(readme)}:{block.line}"
            if block.skip_reason is not None:
                print(f"  SKIP {label} ({block.skip_reason})")
                continue
            ran += 1
            started = time.perf_counter()
            error: str | None = None
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                if block.is_doctest:
                    error = _run_doctest(block.code, namespace, label, block.line - 1)
                else:
                    _run_script(block.code, namespace, label)
            except BlockTimeout:
                error = f"timed out after {timeout:g} s"
            except BaseException:  # a README example may even call sys.exit
                error = traceback.format_exc(limit=-8)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            took = time.perf_counter() - started
            if error is None:
                print(f"  PASS {label} ({took:.1f} s)")
            else:
                failures += 1
                print(f"  FAIL {label} ({took:.1f} s)")
                print("    " + error.rstrip().replace("\n", "\n    "))
    finally:
        os.chdir(cwd)
    print(f"  {readme}: {ran} block(s) ran, {failures} failed, {len(blocks) - ran} skipped")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("readme", type=Path)
    ap.add_argument("--workdir", type=Path, help="run the blocks here (default: a scratch repo)")
    ap.add_argument("--copy", type=Path, action="append", default=[], help="copy into the repo")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per block")
    ap.add_argument("--list", action="store_true", help="list the blocks and exit")
    args = ap.parse_args(argv)
    if not args.readme.is_file():
        print(f"no such file: {args.readme}", file=sys.stderr)
        return 2
    if args.list:
        for block in python_blocks(args.readme.read_text(encoding="utf-8")):
            kind = "doctest" if block.is_doctest else "script"
            skip = f" no-run: {block.skip_reason}" if block.skip_reason is not None else ""
            print(f"{_where(args.readme)}:{block.line} {kind}{skip}")
        return 0
    workdir = args.workdir or scratch_repo(args.readme.resolve(), [p.resolve() for p in args.copy])
    try:
        return run(args.readme.resolve(), workdir, args.timeout)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
