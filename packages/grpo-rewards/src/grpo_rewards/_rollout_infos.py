"""The `rollout_infos` keys the rewards read, and how a parsed answer is written under them.

ms-swift hands each reward the per-rollout `rollout_infos` dict a multi-turn driver filled in.
The driver (codegrep-model's `Episode`, a scheduler) writes these keys and `grpo_rewards.swift_orm`
reads them; both take the names from here, so a renamed key cannot split them. Every value is
JSON-safe (ms-swift gathers and logs the dict). This module does not score.
"""

from __future__ import annotations

from collections.abc import Mapping

from grpo_rewards._answer import Answer, LineRange, ParsedAnswer
from grpo_rewards.errors import InvalidRolloutError

__all__ = [
    "INFO_ANSWER_ERROR",
    "INFO_ANSWER_FILES",
    "INFO_ANSWER_LINE_RANGES",
    "INFO_NUM_TOOL_CALLS",
    "INFO_NUM_TURNS",
    "INFO_TOOL_CALLS_PER_TURN",
    "answer_from_infos",
    "answer_infos",
]

#: T, the rollout's assistant turns (int). ms-swift also adds it on its own.
INFO_NUM_TURNS = "num_turns"
#: Executed tool calls of each assistant turn (list of int): summed into C_total, each held to
#: the per-turn cap. Read before `INFO_NUM_TOOL_CALLS`.
INFO_TOOL_CALLS_PER_TURN = "tool_calls_per_turn"
#: C_total as one number (int), for drivers that keep no per-turn list.
INFO_NUM_TOOL_CALLS = "num_tool_calls"
#: The final answer's files as `parse_answer` read them (list of str), or None: no answer. When
#: the key is present the ORMs score it and do not parse the completion again.
INFO_ANSWER_FILES = "answer_files"
#: The answer's line ranges, `{path: [[start, end], ...]}`.
INFO_ANSWER_LINE_RANGES = "answer_line_ranges"
#: Why there is no answer (`ParsedAnswer.error`), or None.
INFO_ANSWER_ERROR = "answer_error"


def answer_infos(parsed: ParsedAnswer) -> dict[str, object]:
    """The `rollout_infos` entries for a parsed final answer (JSON-safe).

    >>> from grpo_rewards import parse_answer
    >>> answer_infos(parse_answer('{"files": ["/testbed/a.py"]}'))
    {'answer_files': ['a.py'], 'answer_line_ranges': {}, 'answer_error': None}
    >>> answer_infos(parse_answer("no idea"))[INFO_ANSWER_ERROR]
    'no JSON object in the answer'
    """
    answer = parsed.answer
    if answer is None:
        return {
            INFO_ANSWER_FILES: None,
            INFO_ANSWER_LINE_RANGES: {},
            INFO_ANSWER_ERROR: parsed.error,
        }
    ranges = {p: [[r.start, r.end] for r in rs] for p, rs in answer.line_ranges.items()}
    return {
        INFO_ANSWER_FILES: list(answer.files),
        INFO_ANSWER_LINE_RANGES: ranges,
        INFO_ANSWER_ERROR: None,
    }


def _range(value: object, path: str) -> LineRange:
    bad = InvalidRolloutError(f"{INFO_ANSWER_LINE_RANGES}[{path!r}] holds {value!r}"[:200])
    if not (isinstance(value, list | tuple) and len(value) == 2):
        raise bad
    start, end = value
    if not (isinstance(start, int) and isinstance(end, int)):
        raise bad
    if isinstance(start, bool) or isinstance(end, bool):
        raise bad
    try:
        return LineRange(start, end)
    except ValueError as exc:
        raise InvalidRolloutError(f"{INFO_ANSWER_LINE_RANGES}[{path!r}]: {exc}") from exc


def answer_from_infos(info: Mapping[str, object]) -> ParsedAnswer | None:
    """The parsed answer a driver recorded in `info`; None when it recorded none (then the
    completion is parsed). Entries of the wrong shape are a harness bug and raise
    `InvalidRolloutError` naming the key.

    >>> info = {"answer_files": ["a.py"], "answer_line_ranges": {"a.py": [[3, 5]]}}
    >>> parsed = answer_from_infos(info)
    >>> parsed.answer.files, parsed.answer.line_ranges
    (('a.py',), {'a.py': (LineRange(start=3, end=5),)})
    >>> answer_from_infos({"answer_files": None, "answer_error": "no JSON object in the answer"})
    ParsedAnswer(answer=None, error='no JSON object in the answer')
    >>> answer_from_infos({"num_turns": 2}) is None
    True
    """
    if INFO_ANSWER_FILES not in info:
        return None
    files = info[INFO_ANSWER_FILES]
    if files is None:
        error = info.get(INFO_ANSWER_ERROR)
        return ParsedAnswer(None, error if isinstance(error, str) else "no answer")
    if not isinstance(files, list | tuple) or not all(isinstance(f, str) for f in files):
        raise InvalidRolloutError(
            f"{INFO_ANSWER_FILES} must be a list of paths, got {files!r}"[:200]
        )
    raw_ranges = info.get(INFO_ANSWER_LINE_RANGES) or {}
    if not isinstance(raw_ranges, Mapping):
        raise InvalidRolloutError(
            f"{INFO_ANSWER_LINE_RANGES} must map paths to ranges, got {raw_ranges!r}"[:200]
        )
    ranges: dict[str, tuple[LineRange, ...]] = {}
    for path, items in raw_ranges.items():
        if not isinstance(path, str) or not isinstance(items, list | tuple):
            raise InvalidRolloutError(f"{INFO_ANSWER_LINE_RANGES} holds {path!r}: {items!r}"[:200])
        ranges[path] = tuple(_range(item, path) for item in items)
    return ParsedAnswer(Answer(tuple(str(f) for f in files), ranges))
