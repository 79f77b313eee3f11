"""How injected files reach a coding agent: prompt sections, a dataset column, a template.

Only paths are injected: the CodeGrep paper found the editing agent uses the paths and nothing
else (line ranges had no downstream consumer). Nothing to inject renders as empty text, so that
a prompt without candidates is exactly the prompt the agent would have had without the gate.

The `openhands` section, the `agent_context` text and the shipped Jinja template
(`openhands_template_path()`, for OpenHands' `--prompt-path`, reading a `candidate_files`
column) show the agent the same words, so that both ways of injecting are one experiment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from codegrep_records import normalize_path

from codegrep_gate._gate import GateDecision
from codegrep_gate.errors import GateInputError

__all__ = [
    "CANDIDATES_INTRO",
    "MARKDOWN_HEADING",
    "RenderStyle",
    "candidate_files_column",
    "openhands_template_path",
    "render",
]

RenderStyle = Literal["openhands", "markdown", "agent_context", "json"]

# Neutral on purpose: the files are a lead, not an order, and may miss some.
CANDIDATES_INTRO = (
    "These files are likely relevant to the issue, most likely first. The list may be incomplete."
)
MARKDOWN_HEADING = "### Files likely relevant to this issue"
TEMPLATE = "swe_default_with_candidates.j2"

# A line break or other control character in a path would let it write outside its list item.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _checked(files: Sequence[str]) -> list[str]:
    if isinstance(files, str):
        raise GateInputError(f"files must be a sequence of paths, got the string {files!r}")
    out = []
    for path in files:
        if not isinstance(path, str) or not path:
            raise GateInputError(f"a path must be non-empty text, got {path!r}")
        if _CONTROL.search(path):
            raise GateInputError(f"a path must be one line without control characters: {path!r}")
        out.append(path)
    return out


def _openhands(files: Sequence[str]) -> str:
    items = "".join(f"- {path}\n" for path in files)
    return f"<candidate_files>\n{CANDIDATES_INTRO}\n{items}</candidate_files>\n"


def _code(path: str) -> str:
    fence = "``" if "`" in path else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{path}{pad}{fence}"


def _markdown(files: Sequence[str]) -> str:
    items = "".join(f"- {_code(path)}\n" for path in files)
    return f"{MARKDOWN_HEADING}\n\n{CANDIDATES_INTRO}\n\n{items}"


def render(
    files: Sequence[str], style: RenderStyle, *, decision: GateDecision | None = None
) -> str:
    """The injected files as text for one way of prompting; paths only, in the given order.

    - `openhands`: a `<candidate_files>` section for OpenHands' SWE-bench instruction;
    - `markdown`: a `### Files likely relevant to this issue` block with a list of paths;
    - `agent_context`: text for openhands-sdk `AgentContext(user_message_suffix=...)` (the
      same section as `openhands`);
    - `json`: `{"candidate_files": [...]}`, plus `"gate"` (summary, threshold, bound) when
      `decision` is given.

    No files: empty text for the text styles (the prompt stays as it was), an empty list in JSON.
    """
    paths = _checked(files)
    if style == "json":
        out: dict[str, Any] = {"candidate_files": paths}
        if decision is not None:
            out["gate"] = {
                "summary": decision.summary,
                "threshold": decision.config.threshold,
                "bound": decision.config.bound,
            }
        return json.dumps(out, ensure_ascii=False)
    if not paths:
        return ""
    if style in ("openhands", "agent_context"):
        return _openhands(paths)
    if style == "markdown":
        return _markdown(paths)
    raise GateInputError(
        f"unknown render style {style!r}; use openhands, markdown, agent_context or json"
    )


def candidate_files_column(files: Sequence[str]) -> list[str]:
    """The `candidate_files` value of one dataset row for the shipped OpenHands template.

    Paths normalized with the records' path rule (mount prefixes dropped, POSIX form), repeats
    and empties dropped, order kept.
    """
    out: dict[str, None] = {}
    for path in _checked(files):
        norm = normalize_path(path)
        if norm:
            out.setdefault(norm, None)
    return list(out)


def openhands_template_path() -> Path:
    """The shipped Jinja template for OpenHands' `--prompt-path`.

    A SWE-bench instruction (the uploaded repository's path, the issue, minimal changes to
    non-test files) with a `<candidate_files>` section, the same text as
    `render(files, "openhands")`, when the dataset row has a non-empty `candidate_files` column
    (`candidate_files_column`); without it the section is left out.
    """
    return Path(str(resources.files("codegrep_gate").joinpath("templates").joinpath(TEMPLATE)))
