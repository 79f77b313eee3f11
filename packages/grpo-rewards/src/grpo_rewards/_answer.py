"""Reading the agent's final answer: `{"files": [...], "line_ranges": {...}}` inside free text.

The final assistant message of a CodeGrep rollout should be a JSON object; models wrap it in code
fences, prepend a `<think>` block or a sentence, or emit several objects. The parser is tolerant of
that packaging and strict about the content: `files` must be a list of paths. Anything else is a
malformed answer, which scores 0 upstream with the reason kept here. This module does not score.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from grpo_rewards._formats import record_text, split_reasoning
from grpo_rewards._paths import normalize_path

__all__ = [
    "LineRange",
    "ParsedAnswer",
    "RewardAnswer",
    "coerce_line_ranges",
    "parse_answer",
]


@dataclass(frozen=True, order=True)
class LineRange:
    """Inclusive 1-based line range `[start, end]` within one file."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if self.start < 1 or self.end < self.start:
            raise ValueError(f"invalid line range [{self.start}, {self.end}]")

    def __len__(self) -> int:
        return self.end - self.start + 1


LineRanges = Mapping[str, tuple[LineRange, ...]]


@dataclass(frozen=True)
class RewardAnswer:
    """A parsed answer: normalized file paths in the model's order, and optional line ranges."""

    files: tuple[str, ...]
    line_ranges: Mapping[str, tuple[LineRange, ...]] = field(default_factory=dict)
    #: Line-range entries that could not be read (kept so a caller can log format drift).
    dropped_line_ranges: int = 0


@dataclass(frozen=True)
class ParsedAnswer:
    """The outcome of parsing: an `answer`, or `None` and the `error` saying why."""

    answer: RewardAnswer | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.answer is not None


_FENCE_RE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_RANGE_TEXT_RE = re.compile(r"^\s*L?(\d+)\s*(?:[-–:,]|\.\.)\s*L?(\d+)\s*$|^\s*L?(\d+)\s*$")


def _json_objects(text: str) -> list[object]:
    """Every top-level JSON object found in `text`, in order of appearance."""
    decoder = json.JSONDecoder()
    found: list[object] = []
    pos = text.find("{")
    while pos != -1:
        try:
            obj, end = decoder.raw_decode(text, pos)
        except RecursionError:
            # nesting past Python's limit: a hostile reply, and every later "{" inside it would
            # recurse as deep again; what was found before it stands
            break
        except ValueError:  # not JSON here (or an integer past Python's 4,300 digits)
            pos = text.find("{", pos + 1)
            continue
        found.append(obj)
        pos = text.find("{", end)
    return found


def _one_range(value: object) -> LineRange | None:
    start: object
    end: object
    if isinstance(value, str):
        m = _RANGE_TEXT_RE.match(value)
        if m is None:
            return None
        if m.group(3) is not None:
            start = end = int(m.group(3))
        else:
            start, end = int(m.group(1)), int(m.group(2))
    elif isinstance(value, Mapping):
        start = value.get("start", value.get("start_line"))
        end = value.get("end", value.get("end_line", start))
    elif isinstance(value, list | tuple) and len(value) == 2:
        start, end = value
    elif isinstance(value, int) and not isinstance(value, bool):
        start = end = value
    else:
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
        return None
    assert isinstance(start, int)
    assert isinstance(end, int)
    try:
        return LineRange(start, end)
    except ValueError:
        return None


def _ranges_of(value: object) -> tuple[list[LineRange], int]:
    """Ranges for one file: a single range (`[a, b]`, `"a-b"`, `{start, end}`) or a list of them."""
    single = _one_range(value)
    if single is not None:
        return [single], 0
    if isinstance(value, list | tuple):
        good: list[LineRange] = []
        dropped = 0
        for item in value:
            r = _one_range(item)
            if r is None:
                dropped += 1
            else:
                good.append(r)
        return good, dropped
    return [], 1


def coerce_line_ranges(
    value: object, *, roots: Iterable[str] = ()
) -> tuple[dict[str, tuple[LineRange, ...]], int]:
    """Read line ranges from the shapes seen in answers and datasets.

    Accepted: a mapping `path -> ranges` (ranges as `[a, b]`, `[[a, b], ...]`, `"a-b"`,
    `{"start": a, "end": b}`), or a list of records `{"path"|"file": p, "start": a, "end": b}`
    (the Arrow-friendly form for dataset columns). Returns the ranges by normalized path, sorted,
    and the count of entries that could not be read.
    """
    root_list = tuple(roots)
    out: dict[str, list[LineRange]] = {}
    dropped = 0
    if value is None:
        return {}, 0
    if isinstance(value, Mapping):
        items: list[tuple[object, object]] = list(value.items())
    elif isinstance(value, list | tuple):
        items = []
        for rec in value:
            if isinstance(rec, Mapping) and isinstance(rec.get("path", rec.get("file")), str):
                items.append((rec.get("path", rec.get("file")), rec))
            else:
                dropped += 1
    else:
        return {}, 1
    for raw_path, raw_ranges in items:
        if not isinstance(raw_path, str):
            dropped += 1
            continue
        path = normalize_path(record_text(raw_path), roots=root_list)
        if not path:
            dropped += 1
            continue
        ranges, bad = _ranges_of(raw_ranges)
        dropped += bad
        if ranges:
            out.setdefault(path, []).extend(ranges)
    return {p: tuple(sorted(rs)) for p, rs in out.items()}, dropped


def _answer_from_object(obj: Mapping[str, object], roots: tuple[str, ...]) -> ParsedAnswer:
    files_value = obj.get("files")
    if not isinstance(files_value, list):
        return ParsedAnswer(None, "`files` is missing or not a list")
    files: list[str] = []
    seen: set[str] = set()
    for item in files_value:
        raw = item.get("path", item.get("file")) if isinstance(item, Mapping) else item
        if not isinstance(raw, str):
            return ParsedAnswer(None, f"`files` holds a non-path entry: {item!r}"[:200])
        # JSON's "\udce9" decodes to a lone surrogate: U+FFFD, as the engine records it
        path = normalize_path(record_text(raw), roots=roots)
        if path and path not in seen:
            seen.add(path)
            files.append(path)
    ranges, dropped = coerce_line_ranges(obj.get("line_ranges"), roots=roots)
    return ParsedAnswer(RewardAnswer(tuple(files), ranges, dropped))


def parse_answer(text: object, *, roots: Iterable[str] = ()) -> ParsedAnswer:
    """Parse the final assistant message of a rollout.

    The last JSON object that has a `files` key wins: objects in code-fenced blocks first, then
    anywhere in the text (a fenced snippet without `files` does not hide the answer after it).
    Reasoning is not an answer: `<think>` blocks are removed, text up to a lone `</think>` (the
    chat template opened the block) is dropped, and a `<think>` never closed — a rollout cut off
    while reasoning — is malformed. Never raises on model output.

    >>> parse_answer('Done.\\n```json\\n{"files": ["./a.py", "/testbed/b.py"]}\\n```').answer.files
    ('a.py', 'b.py')
    >>> parse_answer("I could not find it.").error
    'no JSON object in the answer'
    """
    if not isinstance(text, str):
        return ParsedAnswer(None, f"the answer is not text ({type(text).__name__})")
    body, unclosed = split_reasoning(record_text(text))
    if unclosed:
        return ParsedAnswer(None, "unclosed <think> block: no answer after the reasoning")
    root_list = tuple(roots)
    fenced: list[object] = []
    for block in _FENCE_RE.findall(body):
        fenced.extend(_json_objects(block))
    anywhere = _json_objects(body)
    if not fenced and not anywhere:
        return ParsedAnswer(None, "no JSON object in the answer")
    for candidates in (fenced, anywhere):
        with_files = [c for c in candidates if isinstance(c, Mapping) and "files" in c]
        if with_files:
            return _answer_from_object(with_files[-1], root_list)
    return ParsedAnswer(None, "no JSON object with a `files` key")
