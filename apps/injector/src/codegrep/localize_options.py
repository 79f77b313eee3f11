"""The options of `codegrep localize`, declared once: `LocalizeJob`.

For: each option's name, type, default and help, as the fields of `LocalizeJob` (the job the
command runs) with how the command line spells them (`Flag`, in the field's metadata), the
command line's own options beside them (`CLI_ONLY`: an output choice, an old spelling, a part
of another option), and what a server request may carry of them (`Served`). `codegrep
localize` builds its options from here (`cli_options`), `run_localize_job` runs the job, and
`codegrep serve` validates a request with the `Served` fields (`served_field`). Not for:
reading the values (the CLI, the job, the server do) or any other command's options.

Nothing heavy is imported here: `codegrep localize --help` reads this module.
"""

from collections.abc import Callable, Iterator
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codegrep_gate import GateConfig

__all__ = [
    "CLI_ONLY",
    "DEFAULT_MAX_ISSUE_BYTES",
    "DEFAULT_SOURCE",
    "DEFAULT_TIMEOUT_S",
    "GATE_DEFAULT",
    "CliOption",
    "Flag",
    "LocalizeJob",
    "Served",
    "cli_options",
    "served_field",
    "tool_field",
]

DEFAULT_TIMEOUT_S = 120.0  # per model request
DEFAULT_MAX_ISSUE_BYTES = 262_144  # codegrep_model.DEFAULT_MAX_ISSUE_BYTES (a test holds them)
DEFAULT_SOURCE = "https://github.com/{repo}.git"  # where owner/name is cloned from
GATE_DEFAULT = 0.45  # codegrep_gate.GateConfig's default: the paper's neutral precision
_OWN: Any = object()  # a `Flag`'s type or default that is the field's own
BASE_URL_HELP = (
    "OpenAI-compatible endpoint of a served model (the old spelling of "
    "--policy openai:MODEL@URL); default: lexical."
)


@dataclass(frozen=True)
class Flag:
    """How the command line spells one option of the job."""

    help: str = ""
    flags: tuple[str, ...] = ()  # (): typer's `--name` of the parameter
    kit: str | None = None  # a `codegrep_cli` option of the flag convention, by its name
    param: str | None = None  # the command line's parameter when it is not the field's name
    type: Any = _OWN  # its type on the command line when it is not the field's
    default: Any = _OWN  # its default on the command line when it is not the field's
    options: tuple[tuple[str, Any], ...] = ()  # typer.Option's others: min, metavar, ...


@dataclass(frozen=True)
class Served:
    """What a server request says of one option: its text and bounds (pydantic `Field`'s).

    The server's own: a request names a folder the server may read, or a repository of its
    allow-list, and its limits are the server's."""

    description: str
    bounds: tuple[tuple[str, Any], ...] = ()  # min_length, max_length, ge, le
    tool: str = ""  # the MCP tool's text for the argument, where it says more than `description`
    tool_bounds: bool = False  # the MCP tool's schema shows the bounds too


@dataclass(frozen=True)
class LocalizeJob:
    """One `codegrep localize`: where to search, the issue, the policy, the gate, the outputs."""

    repo: str = field(
        metadata={
            "flag": Flag(
                "The repository to search: a local directory (as it is, or at --commit), or "
                "owner/name (cloned into --cache; needs --commit).",
                flags=("--repo",),
            ),
            "served": Served(
                "An absolute folder path inside an allowed root (searched as it is, or at "
                "`commit`), or owner/name on the allow-list (needs `commit`).",
                (("min_length", 1), ("max_length", 4096)),
                tool="Absolute path of a folder this server may read (searched as it is, or at "
                "`commit`), or owner/name from its allow-list (needs `commit`).",
            ),
        }
    )
    # a file, or "-" for standard input; a request carries the text
    issue: str = field(
        metadata={
            "flag": Flag("Issue text file, or - for stdin.", flags=("--issue",)),
            "served": Served(
                "The issue text (non-empty).",
                (("min_length", 1),),
                tool="The issue text: what is wrong or wanted.",
            ),
        }
    )
    commit: str | None = field(
        default=None,
        metadata={
            "flag": Flag("Search the repository at this commit, not the work tree."),
            "served": Served(
                "Search the repository at this commit (a sha, a branch, HEAD).",
                (("min_length", 1), ("max_length", 256)),
                tool="Search the repository at this commit.",
            ),
        },
    )
    # also write the response JSON here
    output: Path | None = field(
        default=None, metadata={"flag": Flag("Also write the JSON here.", kit="output_option")}
    )
    # write the full rollout record here
    rollout: Path | None = field(
        default=None, metadata={"flag": Flag("Write the full rollout record (JSON) here.")}
    )
    # a spec (codegrep_model.spec_from_options); None: lexical
    policy: str | None = field(default=None, metadata={"flag": Flag(kit="policy_option")})
    # the old spelling of a served model's spec
    base_url: str | None = field(
        default=None, metadata={"flag": Flag(BASE_URL_HELP, kit="base_url_option")}
    )
    # the model at base_url (None: codegrep)
    model: str | None = field(default=None, metadata={"flag": Flag(kit="model_option")})
    api_key: str | None = field(default=None, metadata={"flag": Flag(kit="api_key_option")})
    # per model request
    timeout_s: float = field(
        default=DEFAULT_TIMEOUT_S,
        metadata={
            "flag": Flag(
                "Seconds per model request (default 120).",
                kit="timeout_option",
                param="timeout",
                type=float | None,
                default=None,
                options=(("show_default", False),),
            )
        },
    )
    cache: Path | None = field(
        default=None,
        metadata={
            "flag": Flag(
                "Clone cache (a worktree_sandbox.BareRepoCache folder) for owner/name "
                "(default ~/.cache/codegrep/repos)."
            )
        },
    )
    source: str = field(
        default=DEFAULT_SOURCE,
        metadata={"flag": Flag("Clone source template for owner/name.")},
    )
    max_issue_bytes: int = field(
        default=DEFAULT_MAX_ISSUE_BYTES,
        metadata={
            "flag": Flag(
                "Cut a longer issue (UTF-8 bytes) to this before searching; warns.",
                options=(("min", 1),),
            )
        },
    )
    # None: not gated
    gate: "GateConfig | None" = field(
        default=None,
        metadata={
            "flag": Flag(
                "Keep only files whose calibrated precision (95% lower bound) is at least "
                f"THRESHOLD (default {GATE_DEFAULT}: the paper's neutral point); nothing at all "
                "when none is.",
                flags=("--gate",),
                type=str | None,
                options=(("metavar", "[THRESHOLD]"), ("show_default", False)),
            ),
            "served": Served(
                "true/false: gate or not; a number in [0, 1]: gate at that precision "
                "threshold; null: the server's default.",
                tool="true: inject only the files whose calibrated precision clears the "
                "server's threshold; a number in [0, 1]: at that threshold; false: every file "
                "found; absent: the server's default (`codegrep serve --gate/--no-gate`).",
            ),
        },
    )
    calibration: Path | None = field(
        default=None,
        metadata={
            "flag": Flag(
                "The calibration to gate with (default: the one shipped for the lexical "
                "policy; a served model needs its own, from `codegrep calibrate`)."
            )
        },
    )
    # a style of `codegrep_gate.RENDER_STYLES`
    inject: str | None = field(
        default=None,
        metadata={
            "flag": Flag(
                "Print what to inject into a coding agent's prompt, in this form: "
                "openhands, markdown, agent_context or json (the gate's reasons go to stderr).",
                flags=("--inject",),
            ),
            "served": Served(
                "Also render the injected files as this style of text.",
                tool="Render the kept files as text to inject, in this style.",
            ),
        },
    )
    max_files: int | None = field(
        default=None,
        metadata={
            "flag": Flag("Inject at most this many files.", options=(("min", 0),)),
            "served": Served(
                "At most this many files injected.",
                (("ge", 1), ("le", 100)),
                tool="Inject at most this many files.",
                tool_bounds=True,
            ),
        },
    )
    # a `worktree_sandbox.GREP_ENGINES` name; None: the default
    grep_engine: str | None = field(default=None, metadata={"flag": Flag(kit="grep_engine_option")})
    # also give the policy's `top` best files with their scores
    top: int | None = field(
        default=None,
        metadata={
            "flag": Flag(
                "Also give the policy's N best files with their scores, the answer's first "
                "and beyond it (`top` in --json; a table, or N paths with --paths).",
                options=(("min", 1),),
            ),
            "served": Served(
                "Also give the policy's N best files with their scores (`top`), the answer's "
                "first and beyond it.",
                (("ge", 1), ("le", 100)),
                tool="Also return the policy's N best files with their scores (`top`), beyond "
                "the answer.",
                tool_bounds=True,
            ),
        },
    )
    progress: Callable[[str], None] | None = None  # told of a clone before the search


@dataclass(frozen=True)
class CliOption:
    """An option of the command line that is no field of the job: where it is listed (after
    the field `after`), its parameter, type and default, and how it is spelled."""

    after: str
    param: str
    type: Any
    default: Any
    flag: Flag


CLI_ONLY: tuple[CliOption, ...] = (
    CliOption("commit", "as_json", bool, False, Flag("One JSON object on stdout.", ("--json",))),
    CliOption(
        "timeout_s",
        "timeout_s",  # the old spelling of --timeout, read into the job's timeout_s
        float | None,
        None,
        Flag(
            "Old spelling of --timeout.",
            ("--timeout-s",),
            options=(("hidden", True),),
        ),
    ),
    CliOption(
        "calibration",
        "gate_bound",  # read into the job's gate
        str,
        "lower",
        Flag("Compare the interval's `lower` bound or its `point` estimate.", ("--gate-bound",)),
    ),
    CliOption(
        "grep_engine",
        "paths",
        bool,
        False,
        Flag(
            "Print one path a line and nothing else: the files to inject (the gate's, "
            "when gated), or the --top N best.",
            ("--paths",),
        ),
    ),
)


def cli_options() -> Iterator[tuple[str, Any, Any, Flag]]:
    """`codegrep localize`'s options in `--help` order: (parameter, type, default, spelling);
    a required one's default is `dataclasses.MISSING`."""
    extras = {option.after: option for option in CLI_ONLY}
    for f in fields(LocalizeJob):
        flag = f.metadata.get("flag")
        if isinstance(flag, Flag):
            kind = f.type if flag.type is _OWN else flag.type
            default = f.default if flag.default is _OWN else flag.default
            yield flag.param or f.name, kind, default, flag
        extra = extras.get(f.name)
        if extra is not None:
            yield extra.param, extra.type, extra.default, extra.flag


def _served(name: str) -> tuple[Any, Served]:
    f = next(f for f in fields(LocalizeJob) if f.name == name)
    served = f.metadata["served"]
    assert isinstance(served, Served), name
    return f.default, served


def served_field(name: str) -> dict[str, Any]:
    """The pydantic `Field` arguments of a server request's field `name`: its description and
    bounds, and the job's default when it has one."""
    default, served = _served(name)
    given: dict[str, Any] = {} if default is MISSING else {"default": default}
    return {**given, "description": served.description, **dict(served.bounds)}


def tool_field(name: str) -> dict[str, Any]:
    """The pydantic `Field` arguments of the MCP tool's argument `name`: its text and bounds
    (the tool validates a call as a request, `served_field`'s)."""
    _, served = _served(name)
    bounds = dict(served.bounds) if served.tool_bounds else {}
    return {"description": served.tool or served.description, **bounds}
