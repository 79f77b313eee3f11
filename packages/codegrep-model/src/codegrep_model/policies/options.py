"""A command's policy flags turned into one `PolicySpec`: `--policy SPEC`, and its old spelling
`--base-url URL [--model NAME]`.

For: every command that takes a policy (`codegrep localize`, `codegrep serve`, `codegrep-model
batch`, `swe-eval predict`) declares `--policy` (and the old flags) with codegrep-cli's kit and
hands what it got to `spec_from_options`, the one place they are read. The spec itself is parsed
by the policy registry (`codegrep_model.policies.spec.parse_policy_spec`), so any kind registered
in `POLICY_KINDS`, or a dotted import path `module:Class`, reaches every command with no change
here. Not for: building the policy (`policy_from_spec`) or checking that an endpoint answers.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from codegrep_model.errors import PolicySpecError
from codegrep_model.policies.spec import PolicySpec, parse_policy_spec, served_spec

__all__ = [
    "DEFAULT_POLICY",
    "DEFAULT_SERVED_MODEL",
    "base_url_problem",
    "spec_from_options",
    "spec_or_exit",
]

#: The policy a command runs when given none.
DEFAULT_POLICY = "lexical"
#: The model name `--base-url` without `--model` means (what the training recipes serve).
DEFAULT_SERVED_MODEL = "codegrep"


def base_url_problem(base_url: str | None) -> str | None:
    """Why `--base-url` cannot be a served model's endpoint (not an http(s) URL with a host)."""
    if base_url is None:
        return None
    url = urlsplit(base_url)
    if url.scheme not in ("http", "https") or not url.netloc:
        return f"--base-url {base_url}: not an http(s) URL (e.g. http://127.0.0.1:8000/v1)"
    return None


def spec_from_options(
    policy: str | None,
    *,
    base_url: str | None = None,
    model: str | None = None,
    default: str = DEFAULT_POLICY,
) -> PolicySpec:
    """The spec a command's flags name: `--policy SPEC` (parsed by the registry), or the served
    model `--base-url URL` with `--model NAME` (default `codegrep`), or `default`.

    Raises `PolicySpecError` naming the flag: a bad spec, a `--base-url` that is not an http(s)
    URL, `--policy` and `--base-url` together, or a `--model` without `--base-url`.

    >>> str(spec_from_options(None, base_url="http://127.0.0.1:8000/v1"))
    'openai:codegrep@http://127.0.0.1:8000/v1'
    >>> spec_from_options("lexical-heuristic").name, spec_from_options(None).name
    ('lexical-heuristic', 'lexical')
    """
    if base_url is not None:
        if policy is not None:
            raise PolicySpecError(
                f"--policy {policy} and --base-url {base_url} both name the policy; give one "
                "(a served model is --policy openai:MODEL@URL)"
            )
        problem = base_url_problem(base_url)
        if problem is not None:
            raise PolicySpecError(problem)
        return served_spec(base_url, model if model is not None else DEFAULT_SERVED_MODEL)
    if model is not None:
        raise PolicySpecError(
            f"--model {model} names a model at --base-url, and no --base-url is given "
            f"(a served model is --policy openai:{model}@URL)"
        )
    spec = policy if policy is not None else default
    try:
        return parse_policy_spec(spec)
    except PolicySpecError as exc:
        raise PolicySpecError(f"--policy: {exc}") from exc


def spec_or_exit(
    policy: str | None, *, base_url: str | None = None, model: str | None = None
) -> PolicySpec:
    """`spec_from_options` for a command: a bad spec exits 2 with its one-line reason (the
    kit's `fail`). An import path is imported here, so its errors are bad input too."""
    from codegrep_cli import fail

    try:
        spec = spec_from_options(policy, base_url=base_url, model=model)
        spec.name  # noqa: B018  # resolves an import path now, not mid-run
    except PolicySpecError as exc:
        raise fail(str(exc)) from exc
    return spec
