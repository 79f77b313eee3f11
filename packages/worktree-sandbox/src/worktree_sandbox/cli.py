"""Command line of worktree-sandbox."""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True, help="Read-only repository tools at a commit.")


@app.command()
def version() -> None:
    """Print the package version."""
    from worktree_sandbox import __version__

    typer.echo(__version__)


def main() -> None:
    app()
