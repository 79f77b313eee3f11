"""What every CodeGrep command line does the same way: `--version`, the error exit, the flags.

For: the root callback's `--version`, the one `error:` line and exit code of a command that
stops, and the option declarations of the toolkit's flag convention (`-i/--instances`, `-o`,
`-j/--jobs`, `--limit`, `--seed`, `--dry-run`, `--timeout`), and the policy's: `--policy SPEC`
with its old spelling `--base-url`/`--model`, and `--api-key`. Not for: anything a single CLI
prints (tables, progress, notes), nor checks of what a flag names (each CLI knows its files;
a policy spec is parsed by codegrep-model's registry, `codegrep_model.spec_from_options`, so
the kit passes any registered kind through without knowing it).
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


# The policy. Every command that runs a policy takes `--policy SPEC` (parsed by codegrep-model's
# policy registry: `lexical`, `lexical-heuristic`, `openai:MODEL@URL`, any other registered
# kind, or an import path `module:Class`); `--base-url URL` with `--model NAME` is its old
# spelling of a served model, kept working. All are `str | None`, default None: the command
# hands them to `codegrep_model.spec_from_options`, which says what None picks.

POLICY_HELP = (
    "The policy: lexical, lexical-heuristic, openai:MODEL@URL (a served model), any other "
    "registered kind, or module:Class (an import path); default lexical."
)


def policy_option(help: str = POLICY_HELP, **kwargs: Any) -> OptionInfo:
    """`--policy SPEC`: the policy to run (`str | None`, default None: the command's default)."""
    kwargs.setdefault("metavar", "SPEC")
    return typer.Option("--policy", help=help, **kwargs)  # type: ignore[no-any-return]


def base_url_option(help: str = "", **kwargs: Any) -> OptionInfo:
    """`--base-url URL`: a served model's OpenAI-compatible endpoint, the old spelling of
    `--policy openai:MODEL@URL` (`str | None`, default None)."""
    text = help or "Old spelling of --policy openai:MODEL@URL: a served model's endpoint."
    return typer.Option("--base-url", help=text, **kwargs)  # type: ignore[no-any-return]


def model_option(help: str = "", **kwargs: Any) -> OptionInfo:
    """`--model NAME`: the model at `--base-url` (`str | None`, default None: `codegrep`)."""
    text = help or "The model at --base-url (default codegrep)."
    return typer.Option("--model", help=text, **kwargs)  # type: ignore[no-any-return]


def api_key_option(help: str = "", **kwargs: Any) -> OptionInfo:
    """`--api-key`: a served model's key (`str | None`, default None; `$OPENAI_API_KEY`)."""
    kwargs.setdefault("envvar", "OPENAI_API_KEY")
    text = help or "A served model's API key."
    return typer.Option("--api-key", help=text, **kwargs)  # type: ignore[no-any-return]


def grep_engine_option(help: str = "", **kwargs: Any) -> OptionInfo:
    """`--grep-engine NAME`: the engine that greps a folder, by its name in worktree-sandbox's
    `GREP_ENGINES` (`str | None`, default None: ripgrep when the machine has it, else git grep)."""
    text = help or (
        "The grep engine: ripgrep, git-grep, or one registered in worktree_sandbox."
        "GREP_ENGINES; default ripgrep when installed, else git-grep."
    )
    kwargs.setdefault("metavar", "NAME")
    return typer.Option("--grep-engine", help=text, **kwargs)  # type: ignore[no-any-return]
