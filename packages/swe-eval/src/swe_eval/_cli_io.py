"""What swe-eval's commands share to speak and to write: notes on stderr, the table to stdout or
`-o`, the output checks made before any work, and clear exits for files that cannot be read.

For: `swe_eval.cli` and the `swe_eval.downstream` command modules, which import this module and
never each other. Not for: the library, which never prints.
"""

from __future__ import annotations

import gzip
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from codegrep_cli import fail
from codegrep_records import RecordError
from codegrep_records.io import why_unwritable
from rich.console import Console
from rich.text import Text

from swe_eval.errors import SweEvalError

err = Console(stderr=True)

# matplotlib's own formats that need nothing beyond it (and Pillow, which it requires)
IMAGE_SUFFIXES = (".png", ".svg", ".svgz", ".pdf", ".eps", ".ps", ".jpg", ".jpeg", ".tif",
                   ".tiff", ".webp")  # fmt: skip


def say(message: str, style: str = "") -> None:
    """One note on stderr; never read as markup (paths and file contents hold brackets)."""
    err.print(Text(message, style=style), soft_wrap=True)


@contextmanager
def clear_errors() -> Iterator[None]:
    """A file that cannot be read (or a bad value) ends the command with its message, exit 2."""
    try:
        yield
    except (SweEvalError, RecordError, ValueError) as exc:
        raise fail(str(exc)) from exc


def check_output(
    flag: str, path: Path | None, *, appends: bool = False, suffixes: tuple[str, ...] = ()
) -> None:
    """Exit 2 before any work when `path` cannot take the output."""
    if path is None:
        return
    problem = why_unwritable(path)
    if problem is not None:
        raise fail(f"cannot write {flag} {path}: {problem}")
    if appends and path.suffix == ".gz":
        raise fail(
            f"{flag} {path}: this command appends to it as it goes; name a plain .jsonl file"
        )
    if suffixes and path.suffix.lower() not in suffixes:
        raise fail(f"{flag} {path}: name a file of one of the kinds {', '.join(suffixes)}")


def emit(text: str, output: Path | None) -> None:
    """The table on stdout, or into `output` (gzipped when its name ends in .gz)."""
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        if output.suffix == ".gz":
            with gzip.open(output, "wt", encoding="utf-8") as fh:
                fh.write(text)
        else:
            output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise fail(f"cannot write -o {output}: {exc.strerror or exc}") from exc
    say(f"wrote {output}")
