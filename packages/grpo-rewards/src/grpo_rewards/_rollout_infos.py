"""The rollout record: what the RL environment writes once and the reward side reads once.

`RolloutInfo` is one typed record per rollout. The environment that runs the rollout
(codegrep-model's `RolloutEnvironment`, over its `Episode`) fills it in; the reward
(`score_rollout`, which the ORMs call), the advantage scale and the rollout log read it. Where a
trainer carries it between processes (ms-swift's per-rollout `rollout_infos`), it travels in its
JSON form, `to_infos()`, and is read back with `RolloutInfo.from_infos` where it arrives; no
other module reads or writes its keys.

The JSON form (an object; every key optional, absent meaning "not recorded"):

| key | JSON type | field |
| --- | --- | --- |
| `num_turns` | int | T, the assistant turns (ms-swift also adds it on its own) |
| `tool_calls_per_turn` | [int] | the calls that ran in each turn (a number there: C_total) |
| `num_tool_calls` | int | C_total, for writers that keep no per-turn list |
| `max_calls_per_turn` | int >= 1 | the per-turn cap the rollout ran under |
| `answer_files` | [str] or null | the parsed final answer's files; null: no answer |
| `answer_line_ranges` | {path: [[start, end], ...]} | the answer's line ranges |
| `answer_error` | str or null | why there is no answer |
| `episode_status` | str | "answered", "unanswered" or "error" once done |
| `test_policy` | str | test runs only: the policy whose replies replaced the model's |
| `overflow` | str or null | the token limit that ended the rollout |
| `rollout_tokens`, `completion_tokens`, `tool_results_cut` | int | the token budget's counts |
| `token_counter` | str | what counted the tokens |
| `schema_version` | int | the layout (1; a dict without it is version 1) |

A value of the wrong shape is an `InvalidRolloutError` naming its key; a layout newer than this
package reads is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from grpo_rewards._answer import LineRange, ParsedAnswer, RewardAnswer
from grpo_rewards._codescout import MultiLevelTargets, score_codescout
from grpo_rewards._rewards import Gold, RewardResult
from grpo_rewards._rollout import MAX_CALLS_PER_TURN, RolloutStats, check_calls_per_turn
from grpo_rewards._spec import score_completion, score_parsed
from grpo_rewards._trainer_rows import Label, count_value, count_values, final_text
from grpo_rewards.errors import InvalidRolloutError

__all__ = [
    "ROLLOUT_INFO_SCHEMA_VERSION",
    "RolloutInfo",
    "recorded_stats",
    "rollout_record",
    "score_rollout",
    "score_row",
]

# The JSON keys (see the table above); private: the record, not its keys, is the interface.
_KEY_NUM_TURNS = "num_turns"
_KEY_TOOL_CALLS_PER_TURN = "tool_calls_per_turn"
_KEY_MAX_CALLS_PER_TURN = "max_calls_per_turn"
_KEY_NUM_TOOL_CALLS = "num_tool_calls"
_KEY_ANSWER_FILES = "answer_files"
_KEY_ANSWER_LINE_RANGES = "answer_line_ranges"
_KEY_ANSWER_ERROR = "answer_error"
_KEY_EPISODE_STATUS = "episode_status"
_KEY_TEST_POLICY = "test_policy"
_KEY_OVERFLOW = "overflow"
_KEY_ROLLOUT_TOKENS = "rollout_tokens"
_KEY_COMPLETION_TOKENS = "completion_tokens"
_KEY_TOOL_RESULTS_CUT = "tool_results_cut"
_KEY_TOKEN_COUNTER = "token_counter"
_KEY_SCHEMA_VERSION = "schema_version"
#: The layout `RolloutInfo.to_infos` writes.
ROLLOUT_INFO_SCHEMA_VERSION = 1


def _answer_json(parsed: ParsedAnswer) -> dict[str, object]:
    """The `rollout_infos` entries for a parsed final answer (JSON-safe).

    >>> from grpo_rewards import parse_answer
    >>> _answer_json(parse_answer('{"files": ["/testbed/a.py"]}'))
    {'answer_files': ['a.py'], 'answer_line_ranges': {}, 'answer_error': None}
    >>> _answer_json(parse_answer("no idea"))["answer_error"]
    'no JSON object in the answer'
    """
    answer = parsed.answer
    if answer is None:
        return {
            _KEY_ANSWER_FILES: None,
            _KEY_ANSWER_LINE_RANGES: {},
            _KEY_ANSWER_ERROR: parsed.error,
        }
    ranges = {p: [[r.start, r.end] for r in rs] for p, rs in answer.line_ranges.items()}
    return {
        _KEY_ANSWER_FILES: list(answer.files),
        _KEY_ANSWER_LINE_RANGES: ranges,
        _KEY_ANSWER_ERROR: None,
    }


def _range(value: object, path: str) -> LineRange:
    bad = InvalidRolloutError(f"{_KEY_ANSWER_LINE_RANGES}[{path!r}] holds {value!r}"[:200])
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
        raise InvalidRolloutError(f"{_KEY_ANSWER_LINE_RANGES}[{path!r}]: {exc}") from exc


def _answer_from_json(info: Mapping[str, object]) -> ParsedAnswer | None:
    """The parsed answer a driver recorded in `info`; None when it recorded none (then the
    completion is parsed). Entries of the wrong shape are a harness bug and raise
    `InvalidRolloutError` naming the key.

    >>> info = {"answer_files": ["a.py"], "answer_line_ranges": {"a.py": [[3, 5]]}}
    >>> parsed = _answer_from_json(info)
    >>> parsed.answer.files, parsed.answer.line_ranges
    (('a.py',), {'a.py': (LineRange(start=3, end=5),)})
    >>> _answer_from_json({"answer_files": None, "answer_error": "no JSON object in the answer"})
    ParsedAnswer(answer=None, error='no JSON object in the answer')
    >>> _answer_from_json({"num_turns": 2}) is None
    True
    """
    if _KEY_ANSWER_FILES not in info:
        return None
    files = info[_KEY_ANSWER_FILES]
    if files is None:
        error = info.get(_KEY_ANSWER_ERROR)
        return ParsedAnswer(None, error if isinstance(error, str) else "no answer")
    if not isinstance(files, list | tuple) or not all(isinstance(f, str) for f in files):
        raise InvalidRolloutError(
            f"{_KEY_ANSWER_FILES} must be a list of paths, got {files!r}"[:200]
        )
    raw_ranges = info.get(_KEY_ANSWER_LINE_RANGES) or {}
    if not isinstance(raw_ranges, Mapping):
        raise InvalidRolloutError(
            f"{_KEY_ANSWER_LINE_RANGES} must map paths to ranges, got {raw_ranges!r}"[:200]
        )
    ranges: dict[str, tuple[LineRange, ...]] = {}
    for path, items in raw_ranges.items():
        if not isinstance(path, str) or not isinstance(items, list | tuple):
            raise InvalidRolloutError(f"{_KEY_ANSWER_LINE_RANGES} holds {path!r}: {items!r}"[:200])
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
    without a token budget records no token counts. `answer` is None when the writer recorded no
    parse of the final answer (then `score_rollout` parses the completion).

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
        """The record's JSON form (the module docstring's table): what ms-swift carries as
        `rollout_infos`; a field that is None is left out (the budget's fields go together)."""
        infos: dict[str, object] = {}
        if self.num_turns is not None:
            infos[_KEY_NUM_TURNS] = self.num_turns
        if self.num_tool_calls is not None:
            infos[_KEY_NUM_TOOL_CALLS] = self.num_tool_calls
        if self.tool_calls_per_turn is not None:
            infos[_KEY_TOOL_CALLS_PER_TURN] = list(self.tool_calls_per_turn)
        if self.max_calls_per_turn is not None:
            infos[_KEY_MAX_CALLS_PER_TURN] = self.max_calls_per_turn
        if self.answer is not None:
            infos.update(_answer_json(self.answer))
        if self.budgeted:
            infos[_KEY_OVERFLOW] = self.overflow
            infos[_KEY_ROLLOUT_TOKENS] = self.rollout_tokens
            infos[_KEY_COMPLETION_TOKENS] = self.completion_tokens
            infos[_KEY_TOOL_RESULTS_CUT] = self.tool_results_cut
            infos[_KEY_TOKEN_COUNTER] = self.token_counter
        if self.episode_status is not None:
            infos[_KEY_EPISODE_STATUS] = self.episode_status
        if self.test_policy is not None:
            infos[_KEY_TEST_POLICY] = self.test_policy
        infos[_KEY_SCHEMA_VERSION] = self.schema_version
        return infos

    @classmethod
    def from_infos(cls, info: object) -> RolloutInfo:
        """The record a `rollout_infos` dict holds; anything but a mapping holds nothing.

        A key that is absent is None; a value of the wrong shape is an `InvalidRolloutError`
        naming the key; a dict written in a later layout than this package reads is refused.
        """
        if not isinstance(info, Mapping):
            return cls()
        version = info.get(_KEY_SCHEMA_VERSION, 1)
        if version != ROLLOUT_INFO_SCHEMA_VERSION or isinstance(version, bool):
            raise InvalidRolloutError(
                f"{_KEY_SCHEMA_VERSION} is {version!r}; this grpo-rewards reads "
                f"{ROLLOUT_INFO_SCHEMA_VERSION}"[:200]
            )
        per_turn = info.get(_KEY_TOOL_CALLS_PER_TURN)
        total = info.get(_KEY_NUM_TOOL_CALLS)
        if isinstance(per_turn, int | float):  # one number under the per-turn key: C_total
            per_turn, total = None, per_turn
        elif per_turn is not None and (
            not isinstance(per_turn, Sequence) or isinstance(per_turn, str | bytes)
        ):
            raise InvalidRolloutError(
                f"{_KEY_TOOL_CALLS_PER_TURN} must be a list of counts, got {per_turn!r}"[:200]
            )
        cap = _optional_count(info, _KEY_MAX_CALLS_PER_TURN, "the per-turn call cap")
        if cap is not None and cap < 1:
            raise InvalidRolloutError(f"{_KEY_MAX_CALLS_PER_TURN} must be >= 1, got {cap}")
        return cls(
            num_turns=_optional_count(info, _KEY_NUM_TURNS, "the turn count"),
            num_tool_calls=None if total is None else count_value(total, "the tool-call count"),
            tool_calls_per_turn=None
            if per_turn is None
            else count_values(per_turn, "a per-turn tool-call count"),
            max_calls_per_turn=cap,
            answer=_answer_from_json(info),
            episode_status=_optional_str(info, _KEY_EPISODE_STATUS),
            test_policy=_optional_str(info, _KEY_TEST_POLICY),
            overflow=_optional_str(info, _KEY_OVERFLOW),
            rollout_tokens=_optional_count(info, _KEY_ROLLOUT_TOKENS),
            completion_tokens=_optional_count(info, _KEY_COMPLETION_TOKENS),
            tool_results_cut=_optional_count(info, _KEY_TOOL_RESULTS_CUT),
            token_counter=_optional_str(info, _KEY_TOKEN_COUNTER),
        )


def score_rollout(
    name: str,
    info: RolloutInfo | None,
    completion: object,
    gold: Gold,
    stats: RolloutStats | None,
    *,
    params: Mapping[str, object] | None = None,
) -> RewardResult:
    """Score one rollout with the reward called `name`: the answer its record holds (the
    environment parsed it once, exactly as `parse_answer` does), not parsed again.

    Only a record that holds no answer has `completion` (the final assistant message) parsed
    here: ms-swift without codegrep-model's scheduler writes none, and neither did rows and logs
    written before the record carried the answer. `stats`: T and C_total as the caller found
    them (the record's `stats()`, else what the messages show).

    >>> from grpo_rewards import Gold, RolloutStats, parse_answer
    >>> answer = parse_answer('{"files": ["a.py"]}')
    >>> info = RolloutInfo(num_turns=2, num_tool_calls=2, answer=answer)
    >>> score_rollout("codegrep_v3", info, "ignored", Gold.of(["a.py"]), info.stats()).reward
    1.0
    >>> score_rollout("fbeta_file", None, '{"files": ["a.py"]}', Gold.of(["a.py"]), None).reward
    1.0
    """
    parsed = None if info is None else info.answer
    if parsed is None:
        return score_completion(name, completion, gold, stats, params=params)
    return score_parsed(name, parsed, gold, stats, params=params)


def rollout_record(value: object) -> RolloutInfo | None:
    """The record a trainer's row carries (a `RolloutInfo` or its JSON form), or None."""
    if value is None or isinstance(value, RolloutInfo):
        return value
    return RolloutInfo.from_infos(value)


def recorded_stats(record: RolloutInfo | None) -> RolloutStats | None:
    """T and C_total a record holds, or None (no record, or no counts in it)."""
    return None if record is None else record.stats()


def score_row(
    reward: str,
    completion: object,
    label: Label,
    stats: RolloutStats | None,
    record: RolloutInfo | None,
    params: Mapping[str, object],
) -> RewardResult:
    """One trainer row (TRL, verl): a CodeScout label against the completion's finish call; a
    gold-files label from the environment's record (`score_rollout`: its parsed answer, else
    the completion's final text parsed)."""
    if isinstance(label, MultiLevelTargets):
        return score_codescout(completion, label, None if stats is None else stats.turns, params)
    return score_rollout(reward, record, final_text(completion), label, stats, params=params)
