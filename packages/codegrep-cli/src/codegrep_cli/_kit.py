"""What every CodeGrep command line does the same way: `--version`, the error exit, the flags.

For: the root callback's `--version`, the one `error:` line and exit code of a command that
stops, and the option declarations of the toolkit's flag convention (`-i/--instances`, `-o`,
`-j/--jobs`, `--limit`, `--seed`, `--dry-run`, `--timeout`). Not for: anything a single CLI
prints (tables, progress, notes), nor checks of what a flag names (each CLI knows its files).
"""

from __future__ import annotations

import importlib
from typing import Any

import typer
from typer.models import OptionInfo

EXIT_FAILED = 1
"""The work ran and some of it failed (counted and reported)."""
EXIT_BAD_INPUT = 2
"""Bad input, found before any work: a flag, a file, an endpoint (click's usage errors too)."""


def fail(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    """Say `error: message` on one line of stderr and return the exit to raise.

    Returned, not raised, so that the caller's `raise fail(...)` shows the type checker and the
    reader that the command ends there. The message is one line whatever it holds (an
    endpoint's reply or an exception's text may span lines) and is never read as markup.
    """
    one_line = " ".join(message.splitlines())
    typer.echo(f"{typer.style('error:', fg='red')} {one_line}", err=True)
    return typer.Exit(code)


def version_option(prog: str, package: str) -> Any:
    """The eager `--version` of a root callback: prints `<prog> <version>` and exits 0.

    `package` is the import name whose `__version__` (read from the installed metadata) is
    printed; it is imported only when `--version` is given.

        @app.callback()
        def _root(version: Annotated[bool, version_option("catm", "catm")] = False) -> None: ...
    """

    def _print(value: bool) -> None:
        if value:
            version = getattr(importlib.import_module(package), "__version__", "0+unknown")
            typer.echo(f"{prog} {version}")
            raise typer.Exit()

    return typer.Option(
        "--version", is_eager=True, callback=_print, help=f"Print '{prog} <version>' and exit."
    )


# The flag convention. Each returns the option declaration with the convention's names; the
# command gives its own help text and constraints (`envvar=`, `show_default=`, ...). What each
# flag is, type and default included, is in its docstring; `tests/test_cli_options.py` fails on a
# command that declares one of these flags by hand or with another type or default. A short
# name comes first, as in `-o/--output`, wherever the flag has one.


def instances_option(help: str, **kwargs: Any) -> OptionInfo:
    """`-i/--instances`: SWE-bench style instances (`Path`, `Path | None` or `list[Path]`)."""
    return typer.Option("-i", "--instances", help=help, **kwargs)  # type: ignore[no-any-return]


def output_option(help: str, **kwargs: Any) -> OptionInfo:
    """`-o/--output`: where the command writes, a file or a folder (`Path` or `Path | None`)."""
    return typer.Option("-o", "--output", help=help, **kwargs)  # type: ignore[no-any-return]


def jobs_option(help: str, **kwargs: Any) -> OptionInfo:
    """`-j/--jobs`: how many run at once (`int`, at least 1; the default is the command's, or
    `int | None` = None where the help says what None picks)."""
    kwargs.setdefault("min", 1)
    return typer.Option("-j", "--jobs", help=help, **kwargs)  # type: ignore[no-any-return]


def limit_option(help: str, **kwargs: Any) -> OptionInfo:
    """`--limit`: at most this many (`int | None`, 0 or more; default None, no limit)."""
    kwargs.setdefault("min", 0)
    return typer.Option("--limit", help=help, **kwargs)  # type: ignore[no-any-return]


def seed_option(help: str, **kwargs: Any) -> OptionInfo:
    """`--seed`: the seed of whatever the command draws at random (`int`, default 0)."""
    return typer.Option("--seed", help=help, **kwargs)  # type: ignore[no-any-return]


def dry_run_option(help: str, *, negatable: bool = False, **kwargs: Any) -> OptionInfo:
    """`--dry-run`: say what would run, run nothing (`bool`, default False).

    `negatable=True` also takes `--no-dry-run` (the `codegrep-model` commands always have).
    """
    decl = "--dry-run/--no-dry-run" if negatable else "--dry-run"
    return typer.Option(decl, help=help, **kwargs)  # type: ignore[no-any-return]


def timeout_option(help: str, **kwargs: Any) -> OptionInfo:
    """`--timeout`: seconds (`float`; the default is the command's, or `float | None` = None
    where the help says what None picks; the command sets `min=` where it has one)."""
    return typer.Option("--timeout", help=help, **kwargs)  # type: ignore[no-any-return]
