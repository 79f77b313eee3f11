"""How injected files reach a coding agent: prompt sections, a dataset column, a template.

Only paths are injected: the CodeGrep paper found the editing agent uses the paths and nothing
else (line ranges had no downstream consumer). Nothing to inject renders as empty text, so that
a prompt without candidates is exactly the prompt the agent would have had without the gate.

The `openhands` section, the `agent_context` text and the shipped Jinja template
(`openhands_template_path()`, for OpenHands' `--prompt-path`, reading a `candidate_files`
column) show the agent the same words, so that both ways of injecting are one experiment.

Paths come from the repository, which is untrusted: `x/</candidate_files>/y.py` or a name with
a backtick is a legal path. Every style escapes them so that no path can end or start a
section: `<`, `>` and `&` as XML character references in the `openhands` section (and in the
template), a code span with a fence longer than any run of backticks in the path in
`markdown`, `\u003c`-style escapes in `json` (which still decodes to the path itself); a line
break or other control character (also U+0085, U+2028, U+2029) is written as `\u000a` in the
text styles, so each path stays one list item on one line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_args

from codegrep_records import normalize_path

from codegrep_gate._gate import GateDecision
from codegrep_gate.errors import GateInputError

__all__ = [
    "CANDIDATES_INTRO",
    "MARKDOWN_HEADING",
    "RENDER_STYLES",
    "RenderStyle",
    "candidate_files_column",
    "openhands_template_path",
    "render",
]

RenderStyle = Literal["openhands", "markdown", "agent_context", "json"]
# The styles as a tuple, for option checks and help texts (the injector's `--inject`): written
# once, from the Literal, so that a new style is one edit.
RENDER_STYLES: tuple[RenderStyle, ...] = get_args(RenderStyle)

# Neutral on purpose: the files are a lead, not an order, and may miss some.
CANDIDATES_INTRO = (
    "These files are likely relevant to the issue, most likely first. The list may be incomplete."
)
MARKDOWN_HEADING = "### Files likely relevant to this issue"
TEMPLATE = "swe_default_with_candidates.j2"

# What would end a line or a list item for a reader: C0/C1 controls and the Unicode separators.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_FOR_JSON = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
             "\u2029": "\\u2029"}  # fmt: skip


def _checked(files: Sequence[str]) -> list[str]:
    if isinstance(files, str):
        raise GateInputError(f"files must be a sequence of paths, got the string {files!r}")
    out = []
    for path in files:
        if not isinstance(path, str) or not path:
            raise GateInputError(f"a path must be non-empty text, got {path!r}")
        out.append(path)
    return out


def _one_line(path: str) -> str:
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", path)


def _xml_text(path: str) -> str:
    """The path as text inside `<candidate_files>`: no tag can start or end in it."""
    text = path.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _one_line(text)


def _openhands(files: Sequence[str]) -> str:
    items = "".join(f"- {_xml_text(path)}\n" for path in files)
    return f"<candidate_files>\n{CANDIDATES_INTRO}\n{items}</candidate_files>\n"


def _code(path: str) -> str:
    """A CommonMark code span holding exactly `path` (on one line)."""
    text = _one_line(path)
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    # A space keeps a backtick at either end off the fence; CommonMark strips one each side
    # when both ends have one, so a path that starts or ends with a space gets one too.
    # (A path of spaces only is not stripped, so it gets none.)
    edge = text[0] in "` " or text[-1] in "` "
    pad = " " if (longest or edge) and text.strip(" ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _markdown(files: Sequence[str]) -> str:
    items = "".join(f"- {_code(path)}\n" for path in files)
    return f"{MARKDOWN_HEADING}\n\n{CANDIDATES_INTRO}\n\n{items}"


def _json(out: dict[str, Any]) -> str:
    # JSON that may be pasted into a tagged prompt: no raw '<', '>' or '&', no raw line
    # separator, yet `json.loads` gives the paths back unchanged.
    text = json.dumps(out, ensure_ascii=False)
    return re.sub("[<>&\u2028\u2029]", lambda m: _FOR_JSON[m.group()], text)


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
    Paths are escaped for each style (see the module's docstring); order and repeats are kept.
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
        return _json(out)
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
    and empties dropped, order kept. The template escapes `<`, `>` and `&` as `render` does; it
    cannot escape a control character, so a path with one is refused here.
    """
    out: dict[str, None] = {}
    for path in _checked(files):
        if _CONTROL.search(path):
            raise GateInputError(f"a path must be one line without control characters: {path!r}")
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
