"""codegrep-cli: the command-line kit every CodeGrep CLI shares.

- `version_option(prog, package)`: the root callback's eager `--version` (`<prog> <version>`).
- `fail(message, code=2)`: one `error:` line on stderr; returns the `typer.Exit` to raise.
  Exit 2 is bad input (`EXIT_BAD_INPUT`), 1 the work ran and failed (`EXIT_FAILED`).
- `instances_option`, `output_option`, `jobs_option`, `limit_option`, `seed_option`,
  `dry_run_option`, `timeout_option`: the flag convention's names, with the command's help.
- `policy_option` (`--policy SPEC`), `base_url_option` and `model_option` (its old spelling),
  `api_key_option`: the policy's flags, read by `codegrep_model.spec_from_options`.
- `grep_engine_option` (`--grep-engine NAME`): worktree-sandbox's `SandboxLimits.grep_engine`.

Only packages with a command line depend on it, so typer never reaches one without.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from codegrep_cli._kit import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    api_key_option,
    base_url_option,
    dry_run_option,
    fail,
    grep_engine_option,
    instances_option,
    jobs_option,
    limit_option,
    model_option,
    output_option,
    policy_option,
    seed_option,
    timeout_option,
    version_option,
)

# pyproject.toml holds the version; a source checkout that was never installed has no metadata.
try:
    __version__ = _metadata.version("codegrep-cli")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "__version__",
    "api_key_option",
    "base_url_option",
    "dry_run_option",
    "fail",
    "grep_engine_option",
    "instances_option",
    "jobs_option",
    "limit_option",
    "model_option",
    "output_option",
    "policy_option",
    "seed_option",
    "timeout_option",
    "version_option",
]
