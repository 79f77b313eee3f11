"""The flag convention's options are the command-line kit's, in every CLI of the workspace.

`codegrep-cli` declares `-i/--instances`, `-o/--output`, `-j/--jobs`, `--limit`, `--seed`,
`--dry-run` and `--timeout` once, the policy's `--policy`, `--base-url`, `--model` and
`--api-key`, and `--grep-engine`. Two checks keep the CLIs on them:
- the source: no `typer.Option(...)` in a member's `src` spells one of those flags (by its
  names, or by a parameter name typer turns into one) outside `EXCEPTIONS`;
- the built commands: every option of every command that takes one of those flags has the
  kit's names, type and default (`KIT`), so `--seed` cannot become `int | None` in one command.

A flag that means something else in one command is an entry of `EXCEPTIONS`, with the reason;
an entry that no longer matches anything fails too.
"""

from __future__ import annotations

import ast
import importlib
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from codegrep_cli import (
    api_key_option,
    base_url_option,
    dry_run_option,
    grep_engine_option,
    instances_option,
    jobs_option,
    limit_option,
    model_option,
    output_option,
    policy_option,
    seed_option,
    timeout_option,
)
from typer.main import get_command

ROOT = Path(__file__).resolve().parents[1]
MEMBERS = sorted([*ROOT.glob("packages/*"), *ROOT.glob("apps/*")])


@dataclass(frozen=True)
class Rule:
    """What the kit's declaration of one flag is: its names, the type typer reads from the
    annotation (`None` stripped), the default when the kit fixes one, the lower bound."""

    names: frozenset[str]
    types: frozenset[Any]
    default: object = ...  # ... : the command's own default
    min: object = None


def _reference() -> dict[str, Any]:
    """The kit's declarations as typer builds them, by parameter name."""
    app = typer.Typer()

    @app.command("one")
    def one(
        instances: Annotated[Path, instances_option("")],
        output: Annotated[Path, output_option("")],
        jobs: Annotated[int, jobs_option("")] = 1,
        limit: Annotated[int | None, limit_option("")] = None,
        seed: Annotated[int, seed_option("")] = 0,
        dry_run: Annotated[bool, dry_run_option("")] = False,
        timeout: Annotated[float, timeout_option("")] = 1.0,
        policy: Annotated[str | None, policy_option()] = None,
        base_url: Annotated[str | None, base_url_option()] = None,
        model: Annotated[str | None, model_option()] = None,
        api_key: Annotated[str | None, api_key_option()] = None,
        grep_engine: Annotated[str | None, grep_engine_option()] = None,
    ) -> None:
        """The kit's options."""

    @app.command("two")
    def two(negatable: Annotated[bool, dry_run_option("", negatable=True)] = False) -> None:
        """The negatable --dry-run."""

    group = get_command(app)
    commands = getattr(group, "commands", {})
    return {p.name: p for c in commands.values() for p in c.params}


REF = _reference()


def _names(param: Any) -> frozenset[str]:
    return frozenset({*param.opts, *param.secondary_opts})


KIT: dict[str, Rule] = {
    "--instances": Rule(_names(REF["instances"]), frozenset({Path, list[Path]})),
    "--output": Rule(_names(REF["output"]), frozenset({Path}), default=None),
    "--jobs": Rule(_names(REF["jobs"]), frozenset({int}), min=REF["jobs"].min),
    "--limit": Rule(_names(REF["limit"]), frozenset({int}), default=None, min=REF["limit"].min),
    "--seed": Rule(_names(REF["seed"]), frozenset({int}), default=0),
    "--dry-run": Rule(_names(REF["dry_run"]), frozenset({bool}), default=False),
    "--timeout": Rule(_names(REF["timeout"]), frozenset({float})),
    "--policy": Rule(_names(REF["policy"]), frozenset({str}), default=None),
    "--base-url": Rule(_names(REF["base_url"]), frozenset({str}), default=None),
    "--model": Rule(_names(REF["model"]), frozenset({str}), default=None),
    "--api-key": Rule(_names(REF["api_key"]), frozenset({str}), default=None),
    "--grep-engine": Rule(_names(REF["grep_engine"]), frozenset({str}), default=None),
}
NEGATABLE_DRY_RUN = _names(REF["negatable"])
# Every name the kit declares, mapped to its rule (`-j` -> the `--jobs` rule).
BY_NAME = {name: rule for rule in KIT.values() for name in rule.names}

# (command, flag) -> why that command declares the flag by hand.
EXCEPTIONS = {
    ("worktree-sandbox grep", "-i"): "-i/--ignore-case, as grep spells it; the tool takes no "
    "instances",
    ("swe-eval downstream plan", "--seed"): "int | None: no seed keeps the file's order",
    ("swe-eval downstream plan", "--dry-run"): "True and the only mode: a plan never runs",
    ("swe-eval downstream plan", "--model"): "the frozen coding agent's LiteLLM model, required; "
    "not a retrieval policy",
    ("swe-eval downstream plan", "--base-url"): "the frozen coding agent's endpoint, not a "
    "retrieval policy",
    ("catm mine", "--api-key"): "the judge's bearer token ($CATM_JUDGE_API_KEY), not a policy's",
}
# The same exceptions, by the file that declares them.
EXCEPTION_FILES = {
    ("worktree_sandbox/cli.py", "-i"),
    ("swe_eval/downstream/plan_cli.py", "--seed"),
    ("swe_eval/downstream/plan_cli.py", "--dry-run"),
    ("swe_eval/downstream/plan_cli.py", "--model"),
    ("swe_eval/downstream/plan_cli.py", "--base-url"),
    ("catm/cli.py", "--api-key"),
}


def _apps() -> dict[str, typer.Typer]:
    """Console script name -> its typer app (the `app` beside each script's `main`)."""
    found: dict[str, typer.Typer] = {}
    for member in MEMBERS:
        meta = tomllib.loads((member / "pyproject.toml").read_text())["project"]
        for name, target in meta.get("scripts", {}).items():
            module = importlib.import_module(target.split(":", 1)[0])
            found[name] = module.app
    return found


def _options(command: Any, path: str) -> Iterator[tuple[str, Any]]:
    """(command path, option) for every option of `command` and its sub-commands."""
    for param in command.params:
        if param.param_type_name == "option":
            yield path, param
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _options(sub, f"{path} {name}")


def _kit_options() -> Iterator[tuple[str, str, Any]]:
    """(command path, the kit flag it matches, option) for each option taking a kit name."""
    for prog, app in _apps().items():
        for path, param in _options(get_command(app), prog):
            for flag, rule in KIT.items():
                if _names(param) & rule.names:
                    yield path, flag, param


def _problems(param: Any, flag: str) -> list[str]:
    rule = KIT[flag]
    names = _names(param)
    allowed = {rule.names, NEGATABLE_DRY_RUN} if flag == "--dry-run" else {rule.names}
    found = []
    if names not in allowed:
        found.append(f"names {sorted(names)}, not {sorted(rule.names)}")
    annotation = param.type_descriptor.annotation
    if annotation not in rule.types:
        found.append(f"type {annotation}")
    if rule.default is not ... and param.default != rule.default:
        found.append(f"default {param.default!r}, not {rule.default!r}")
    if rule.min is not None and param.min != rule.min:
        found.append(f"min {param.min}, not {rule.min}")
    return found


def test_every_kit_flag_has_the_kits_names_type_and_default() -> None:
    seen = set()
    wrong = []
    for path, flag, param in _kit_options():
        key = next(((path, n) for n in sorted(_names(param)) if (path, n) in EXCEPTIONS), None)
        if key is not None:
            seen.add(key)
            continue
        wrong += [f"{path} {flag}: {p}" for p in _problems(param, flag)]
    assert wrong == [], "declare these with codegrep_cli's *_option or add an exception"
    assert seen == set(EXCEPTIONS), f"exceptions that match nothing: {set(EXCEPTIONS) - seen}"


def test_the_check_sees_a_hand_declared_option() -> None:
    """The check above fails on an option declared by hand with another type or default."""
    app = typer.Typer()

    @app.command()
    def run(
        seed: Annotated[int | None, typer.Option("--seed")] = None,
        jobs: Annotated[int, typer.Option("--jobs")] = 4,
        limit: Annotated[int | None, typer.Option("--limit", min=0)] = None,
    ) -> None:
        """A command."""

    options = {p.name: p for p in get_command(app).params}
    assert _problems(options["seed"], "--seed") == ["default None, not 0"]
    assert _problems(options["jobs"], "--jobs") == [
        "names ['--jobs'], not ['--jobs', '-j']",
        "min None, not 1",
    ]
    assert _problems(options["limit"], "--limit") == []


def _hand_declared(source: str) -> Iterator[tuple[int, str]]:
    """(line, flag) for each `typer.Option(...)` in `source` that takes a kit flag's name,
    spelled out or made by typer from the parameter's name."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        params: list[tuple[str | None, ast.expr]] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = [*node.args.args, *node.args.kwonlyargs]
            params = [(a.arg, a.annotation) for a in args if a.annotation is not None]
        elif isinstance(node, ast.Assign):  # module-level `XOpt = Annotated[...]` aliases
            params = [(None, node.value)]
        for arg, annotation in params:
            for call in ast.walk(annotation):
                if not (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "Option"
                    and isinstance(call.func.value, ast.Name)
                    and call.func.value.id == "typer"
                ):
                    continue
                decls = [
                    a.value
                    for a in call.args
                    if isinstance(a, ast.Constant) and isinstance(a.value, str)
                ]
                names = [n for d in decls if d.startswith("-") for n in d.split("/")]
                if not names and arg is not None:
                    names = ["--" + arg.replace("_", "-")]
                for name in names:
                    if name in BY_NAME:
                        yield call.lineno, name


def test_no_cli_declares_a_kit_flag_by_hand() -> None:
    found = []
    seen = set()
    for source in sorted(p for m in MEMBERS for p in (m / "src").rglob("*.py")):
        if "codegrep_cli" in source.parts:
            continue
        for line, flag in _hand_declared(source.read_text()):
            keys = {k for k in EXCEPTION_FILES if source.as_posix().endswith("/" + k[0])}
            if (key := next((k for k in keys if k[1] == flag), None)) is not None:
                seen.add(key)
                continue
            found.append(f"{source.relative_to(ROOT)}:{line}: {flag}")
    assert found == [], "use codegrep_cli's *_option for these"
    assert seen == EXCEPTION_FILES


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('def f(seed: A[int, typer.Option(help="x")] = 0): ...', [(1, "--seed")]),
        ('J = A[int, typer.Option("-j", "--workers")]', [(1, "-j")]),
        ('def f(dry_run: A[bool, typer.Option("--dry-run/--no-dry-run")] = False): ...',
         [(1, "--dry-run")]),
        ('def f(seed: A[int, seed_option("x")] = 0): ...', []),
        ('def f(seeds: A[int, typer.Option(help="x")] = 0): ...', []),
    ],
)  # fmt: skip
def test_the_source_check_sees_a_hand_declared_flag(
    source: str, expected: list[tuple[int, str]]
) -> None:
    assert list(_hand_declared(source)) == expected
