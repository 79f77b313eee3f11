"""What an episode hands the reward and the log: `RolloutInfo`, and its `rollout_infos` keys.

ms-swift hands each reward the per-rollout `rollout_infos` dict a multi-turn driver filled in.
The driver (codegrep-model's `Episode` and scheduler) builds a `RolloutInfo`, and turns it into
that dict (`to_infos`) only where it hands it to ms-swift; the ORM (`grpo_rewards.swift_orm`),
the advantage scale and the rollout log turn the dict back (`RolloutInfo.from_infos`) where they
receive it, so the record, not raw keys, travels between them. Every key is named here once; a
value of the wrong shape is an `InvalidRolloutError` naming its key. The dict is JSON-safe
(ms-swift gathers and logs it). This module does not score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from grpo_rewards._answer import LineRange, ParsedAnswer, RewardAnswer
from grpo_rewards._rollout import MAX_CALLS_PER_TURN, RolloutStats, check_calls_per_turn
from grpo_rewards._trainer_rows import count_value, count_values
from grpo_rewards.errors import InvalidRolloutError

__all__ = [
    "INFO_ANSWER_ERROR",
    "INFO_ANSWER_FILES",
    "INFO_ANSWER_LINE_RANGES",
    "INFO_COMPLETION_TOKENS",
    "INFO_EPISODE_STATUS",
    "INFO_MAX_CALLS_PER_TURN",
    "INFO_NUM_TOOL_CALLS",
    "INFO_NUM_TURNS",
    "INFO_OVERFLOW",
    "INFO_ROLLOUT_TOKENS",
    "INFO_SCHEMA_VERSION",
    "INFO_TEST_POLICY",
    "INFO_TOKEN_COUNTER",
    "INFO_TOOL_CALLS_PER_TURN",
    "INFO_TOOL_RESULTS_CUT",
    "ROLLOUT_INFO_SCHEMA_VERSION",
    "RolloutInfo",
    "answer_from_infos",
    "answer_infos",
]

#: T, the rollout's assistant turns (int). ms-swift also adds it on its own.
INFO_NUM_TURNS = "num_turns"
#: Executed tool calls of each assistant turn (list of int): summed into C_total, each held to
#: the per-turn cap. Read before `INFO_NUM_TOOL_CALLS`.
INFO_TOOL_CALLS_PER_TURN = "tool_calls_per_turn"
#: The per-turn call cap the driver ran under (int); absent: `MAX_CALLS_PER_TURN`. The turns are
#: held to this cap, so an episode run with another cap is scored, not refused.
INFO_MAX_CALLS_PER_TURN = "max_calls_per_turn"
#: C_total as one number (int), for drivers that keep no per-turn list.
INFO_NUM_TOOL_CALLS = "num_tool_calls"
#: The final answer's files as `parse_answer` read them (list of str), or None: no answer. When
#: the key is present the ORMs score it and do not parse the completion again.
INFO_ANSWER_FILES = "answer_files"
#: The answer's line ranges, `{path: [[start, end], ...]}`.
INFO_ANSWER_LINE_RANGES = "answer_line_ranges"
#: Why there is no answer (`ParsedAnswer.error`), or None.
INFO_ANSWER_ERROR = "answer_error"
#: The episode's status once done ("answered", "unanswered", "error").
INFO_EPISODE_STATUS = "episode_status"
#: Test runs only: the policy whose replies replaced the model's, or "model" for a rollout that
#: kept the model's own (absent in real training).
INFO_TEST_POLICY = "test_policy"
#: The token budget's cause that ended the rollout ("max_length", "completion_budget"), or None.
INFO_OVERFLOW = "overflow"
#: The rollout's tokens so far (prompt, replies, tool results, prompts).
INFO_ROLLOUT_TOKENS = "rollout_tokens"
#: The model's output tokens summed over the rollout.
INFO_COMPLETION_TOKENS = "completion_tokens"
#: Tool results cut to fit `max_length`.
INFO_TOOL_RESULTS_CUT = "tool_results_cut"
#: What counted the tokens (codegrep-model's `TokenCounter.name`).
INFO_TOKEN_COUNTER = "token_counter"
#: The `RolloutInfo` layout the dict was written in; a dict without it is version 1.
INFO_SCHEMA_VERSION = "schema_version"
#: The layout `RolloutInfo.to_infos` writes.
ROLLOUT_INFO_SCHEMA_VERSION = 1


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
    return ParsedAnswer(RewardAnswer(tuple(str(f) for f in files), ranges))


def _optional_str(info: Mapping[str, object], key: str) -> str | None:
    value = info.get(key)
    if value is None or isinstance(value, str):
        return value
    raise InvalidRolloutError(f"{key} must be text or null, got {value!r}"[:200])


def _optional_count(info: Mapping[str, object], key: str, what: str = "") -> int | None:
    value = info.get(key)
    return None if value is None else count_value(value, what or key)


@dataclass(frozen=True)
class RolloutInfo:
    """What one rollout's driver records for the reward, the advantage scale and the log.

    Every field is optional: ms-swift without our scheduler adds `num_turns` alone, and a driver
    without a token budget records no token counts. `answer` is None when the driver recorded no
    parse of the final answer (then the reward parses the completion).

    >>> info = RolloutInfo(num_turns=2, num_tool_calls=3, tool_calls_per_turn=(3, 0))
    >>> info.to_infos()
    {'num_turns': 2, 'num_tool_calls': 3, 'tool_calls_per_turn': [3, 0], 'schema_version': 1}
    >>> RolloutInfo.from_infos(info.to_infos()) == info, info.stats().cbar
    (True, 1.5)
    """

    #: T, the assistant turns.
    num_turns: int | None = None
    #: C_total as one number.
    num_tool_calls: int | None = None
    #: The calls that ran in each assistant turn; read before `num_tool_calls`.
    tool_calls_per_turn: tuple[int, ...] | None = None
    #: The per-turn cap the driver ran under; None: `MAX_CALLS_PER_TURN`.
    max_calls_per_turn: int | None = None
    #: The driver's parse of the final answer; None: not recorded.
    answer: ParsedAnswer | None = None
    episode_status: str | None = None
    test_policy: str | None = None
    #: The token budget's fields, recorded together when the driver holds a budget
    #: (`token_counter` set); `overflow` None then means no limit ended the rollout.
    overflow: str | None = None
    rollout_tokens: int | None = None
    completion_tokens: int | None = None
    tool_results_cut: int | None = None
    token_counter: str | None = None
    schema_version: int = ROLLOUT_INFO_SCHEMA_VERSION

    @property
    def budgeted(self) -> bool:
        """Whether the driver recorded the token budget's fields."""
        return self.token_counter is not None or any(
            v is not None for v in (self.overflow, self.rollout_tokens, self.completion_tokens)
        )

    def stats(self) -> RolloutStats | None:
        """T and C_total, or None when either is missing; a turn over the cap the driver
        recorded (else `MAX_CALLS_PER_TURN`) raises `InvalidRolloutError`."""
        cap = MAX_CALLS_PER_TURN if self.max_calls_per_turn is None else self.max_calls_per_turn
        if self.num_turns is None:
            return None
        if self.tool_calls_per_turn is not None:
            calls = check_calls_per_turn(self.tool_calls_per_turn, cap)
        elif self.num_tool_calls is not None:
            calls = self.num_tool_calls
        else:
            return None
        return RolloutStats(turns=self.num_turns, tool_calls=calls, max_calls_per_turn=cap)

    def to_infos(self) -> dict[str, object]:
        """The JSON-safe dict ms-swift carries as `rollout_infos`, under the `INFO_*` keys."""
        infos: dict[str, object] = {}
        if self.num_turns is not None:
            infos[INFO_NUM_TURNS] = self.num_turns
        if self.num_tool_calls is not None:
            infos[INFO_NUM_TOOL_CALLS] = self.num_tool_calls
        if self.tool_calls_per_turn is not None:
            infos[INFO_TOOL_CALLS_PER_TURN] = list(self.tool_calls_per_turn)
        if self.max_calls_per_turn is not None:
            infos[INFO_MAX_CALLS_PER_TURN] = self.max_calls_per_turn
        if self.answer is not None:
            infos.update(answer_infos(self.answer))
        if self.budgeted:
            infos[INFO_OVERFLOW] = self.overflow
            infos[INFO_ROLLOUT_TOKENS] = self.rollout_tokens
            infos[INFO_COMPLETION_TOKENS] = self.completion_tokens
            infos[INFO_TOOL_RESULTS_CUT] = self.tool_results_cut
            infos[INFO_TOKEN_COUNTER] = self.token_counter
        if self.episode_status is not None:
            infos[INFO_EPISODE_STATUS] = self.episode_status
        if self.test_policy is not None:
            infos[INFO_TEST_POLICY] = self.test_policy
        infos[INFO_SCHEMA_VERSION] = self.schema_version
        return infos

    @classmethod
    def from_infos(cls, info: object) -> RolloutInfo:
        """The record a `rollout_infos` dict holds; anything but a mapping holds nothing.

        A key that is absent is None; a value of the wrong shape is an `InvalidRolloutError`
        naming the key; a dict written in a later layout than this package reads is refused.
        """
        if not isinstance(info, Mapping):
            return cls()
        version = info.get(INFO_SCHEMA_VERSION, 1)
        if version != ROLLOUT_INFO_SCHEMA_VERSION or isinstance(version, bool):
            raise InvalidRolloutError(
                f"{INFO_SCHEMA_VERSION} is {version!r}; this grpo-rewards reads "
                f"{ROLLOUT_INFO_SCHEMA_VERSION}"[:200]
            )
        per_turn = info.get(INFO_TOOL_CALLS_PER_TURN)
        total = info.get(INFO_NUM_TOOL_CALLS)
        if isinstance(per_turn, int | float):  # one number under the per-turn key: C_total
            per_turn, total = None, per_turn
        elif per_turn is not None and (
            not isinstance(per_turn, Sequence) or isinstance(per_turn, str | bytes)
        ):
            raise InvalidRolloutError(
                f"{INFO_TOOL_CALLS_PER_TURN} must be a list of counts, got {per_turn!r}"[:200]
            )
        cap = _optional_count(info, INFO_MAX_CALLS_PER_TURN, "the per-turn call cap")
        if cap is not None and cap < 1:
            raise InvalidRolloutError(f"{INFO_MAX_CALLS_PER_TURN} must be >= 1, got {cap}")
        return cls(
            num_turns=_optional_count(info, INFO_NUM_TURNS, "the turn count"),
            num_tool_calls=None if total is None else count_value(total, "the tool-call count"),
            tool_calls_per_turn=None
            if per_turn is None
            else count_values(per_turn, "a per-turn tool-call count"),
            max_calls_per_turn=cap,
            answer=answer_from_infos(info),
            episode_status=_optional_str(info, INFO_EPISODE_STATUS),
            test_policy=_optional_str(info, INFO_TEST_POLICY),
            overflow=_optional_str(info, INFO_OVERFLOW),
            rollout_tokens=_optional_count(info, INFO_ROLLOUT_TOKENS),
            completion_tokens=_optional_count(info, INFO_COMPLETION_TOKENS),
            tool_results_cut=_optional_count(info, INFO_TOOL_RESULTS_CUT),
            token_counter=_optional_str(info, INFO_TOKEN_COUNTER),
        )
