"""Typed arguments, results and limits of the three read-only tools.

The args models are the tools' schemas: their field descriptions are what a model reads, and
`codegrep-model` turns them into OpenAI function tools. Results carry both the text a model sees
(`text`) and the structured payload a program uses (matches, paths, lines). A failed call is a
result with `ok=False` and an `error` kind, never an exception.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "TOOL_ARGS",
    "GlobArgs",
    "GlobResult",
    "GrepArgs",
    "GrepMatch",
    "GrepResult",
    "ReadArgs",
    "ReadResult",
    "SandboxLimits",
    "ToolArgs",
    "ToolErrorKind",
    "ToolName",
    "ToolResult",
]

ToolName = Literal["grep", "glob", "read"]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)

    @field_validator("*", mode="after")
    @classmethod
    def _unicode_text(cls, value: object) -> object:
        # A lone surrogate (JSON's "\udce9") is no text any record can carry: echoed in an
        # error ("no file or directory '\udce9'") it failed the rollout's record, and a model's
        # one call ended `codegrep localize` with a traceback. pydantic refuses one in a `str`
        # field but let it through an optional one (`path`, `glob`).
        if isinstance(value, str) and not _is_unicode(value):
            raise ValueError("is not valid Unicode text (it holds a lone surrogate)")
        return value


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class GrepArgs(_Args):
    """Search file contents with a regular expression."""

    pattern: str = Field(
        min_length=1,
        max_length=1000,
        description="Regular expression (Rust/PCRE common syntax) to search for, e.g. "
        r"'def parse_\w+' or 'class Session\b'.",
    )
    path: str | None = Field(
        default=None,
        description="Directory or file to search in, relative to the repository root. "
        "Default: the whole repository.",
    )
    glob: str | None = Field(
        default=None,
        description="Only search files whose path matches this glob, e.g. '*.py' or 'src/**/*.rs'.",
    )
    ignore_case: bool = Field(default=False, description="Match case-insensitively.")
    max_results: int = Field(
        default=100, ge=1, le=1000, description="Stop after this many matching lines."
    )


class GlobArgs(_Args):
    """Find files by path pattern."""

    pattern: str = Field(
        min_length=1,
        max_length=500,
        description="Glob over file paths: '*' within one directory level, '**' across levels, "
        "'?' one character, '[ab]' a set. A pattern without '/' matches file names at any depth "
        "(e.g. 'test_*.py'); with '/' it matches from the search root (e.g. 'src/**/models.py').",
    )
    path: str | None = Field(
        default=None,
        description="Directory to search in, relative to the repository root. Default: the root.",
    )


class ReadArgs(_Args):
    """Read a file (or a range of its lines)."""

    path: str = Field(
        min_length=1, description="File path relative to the repository root, e.g. 'src/app.py'."
    )
    start_line: int | None = Field(
        default=None, ge=1, description="First line to read (1-based). Default: 1."
    )
    end_line: int | None = Field(
        default=None, ge=1, description="Last line to read (inclusive). Default: a capped window."
    )


ToolArgs = GrepArgs | GlobArgs | ReadArgs

TOOL_ARGS: dict[str, type[GrepArgs] | type[GlobArgs] | type[ReadArgs]] = {
    "grep": GrepArgs,
    "glob": GlobArgs,
    "read": ReadArgs,
}


class ToolErrorKind(StrEnum):
    """Why a call failed. Each kind comes with a message the model can act on."""

    INVALID_ARGUMENTS = "invalid_arguments"
    INVALID_PATH = "invalid_path"  # escapes the tree, absolute, or under .git
    NOT_FOUND = "not_found"
    IS_DIRECTORY = "is_directory"
    BINARY_FILE = "binary_file"
    FILE_TOO_LARGE = "file_too_large"
    INVALID_PATTERN = "invalid_pattern"
    TIMEOUT = "timeout"
    INTERNAL = "internal"


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True)

    ok: bool = True
    text: str = Field(description="What the model sees.")
    truncated: bool = False
    error: ToolErrorKind | None = None
    elapsed_ms: float = 0.0
    cached: bool = False


class GrepMatch(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    line: int
    text: str = Field(description="The line, capped at `max_line_chars` as in `text`.")


class GrepResult(_Result):
    tool: Literal["grep"] = "grep"
    matches: tuple[GrepMatch, ...] = ()
    total_matches: int = 0
    backend: str = ""
    skipped_large: tuple[str, ...] = Field(
        default=(), description="Files in scope over `max_file_bytes`, not searched."
    )


class GlobResult(_Result):
    tool: Literal["glob"] = "glob"
    paths: tuple[str, ...] = ()
    total_paths: int = 0


class ReadResult(_Result):
    tool: Literal["read"] = "read"
    path: str = ""
    start_line: int = 0
    end_line: int = 0
    total_lines: int = 0
    content: str = ""


ToolResult = Annotated[GrepResult | GlobResult | ReadResult, Field(discriminator="tool")]


class SandboxLimits(BaseModel):
    """Every limit of the sandbox in one place; defaults follow the CodeGrep paper's harness."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_concurrency: int = Field(default=64, ge=1, description="Tool calls running at once.")
    timeout_s: float = Field(default=10.0, gt=0, description="Per call; the child is killed.")
    max_output_bytes: int = Field(default=16_384, ge=256, description="Cap on `text`.")
    max_output_lines: int = Field(default=200, ge=1, description="Cap on lines of `text`.")
    max_line_chars: int = Field(default=300, ge=20, description="Longer lines are cut.")
    max_read_lines: int = Field(default=400, ge=1, description="Lines one read returns at most.")
    max_file_bytes: int = Field(default=2 * 1024 * 1024, ge=1, description="Larger files refused.")
    cache_entries: int = Field(default=4096, ge=0, description="Memoized results per pool.")
    grep_engine: str | None = Field(
        default=None,
        description="The engine that greps a folder, by its name in GREP_ENGINES ('ripgrep', "
        "'git-grep', or one registered); None: ripgrep when the machine has it, else git grep.",
    )
