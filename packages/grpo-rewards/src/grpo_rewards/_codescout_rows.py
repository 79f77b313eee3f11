"""CodeScout's answer as trainers hand it over: the finish call in a rollout, and scoring it.

CodeScout's agent submits its answer by calling the `localization_finish` tool with
`{"locations": [{"file": ..., "class_name": ..., "function_name": ...}, ...]}`, and its reward is
0 unless that call was made exactly once, alone, as the final turn, with no text after it. This
module reads those facts from what the adapters receive: a list of chat messages (assistant
`tool_calls`, or Hermes `<tool_call>{"name": ..., "arguments": ...}</tool_call>` blocks in the
text), or the text of the response (the final turn is what follows the last
`</tool_response>`). It does not score, nor read the gold `file_changes` column (that is
`_trainer_rows.targets_from_values`, beside the reader of the other labels).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from grpo_rewards._formats import hermes_calls
from grpo_rewards._metrics import CodeLocation, MultiLevelTargets
from grpo_rewards._rewards import RewardResult, codescout_last_turn_ok, codescout_multilevel

__all__ = [
    "CODESCOUT_FINISH_TOOL",
    "DEFAULT_FILE_CHANGES_COLUMN",
    "FinishCall",
    "read_finish_call",
    "score_codescout",
]

#: The name of CodeScout's finish tool (`src/tools/localization_finish.py`).
CODESCOUT_FINISH_TOOL = "localization_finish"
#: The dataset column holding LocAgent-style `file_changes` rows (CodeScout's gold).
DEFAULT_FILE_CHANGES_COLUMN = "file_changes"


_Call = tuple[str | None, object]


@dataclass(frozen=True)
class FinishCall:
    """What CodeScout's reward needs from a rollout besides the label."""

    #: The locations of the last finish call, or None (no call, or arguments not readable).
    locations: tuple[CodeLocation, ...] | None
    #: Finish calls in the whole rollout (CodeScout scores only exactly 1).
    finish_calls: int
    #: The final turn is one call, the finish call, with nothing but whitespace after it.
    last_turn_ok: bool


def _decoded(arguments: object) -> object:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except (ValueError, RecursionError):  # not JSON, a 5,000-digit number, deep nesting
            return None
    return arguments


def _structured_call(call: object) -> _Call:
    # OpenAI style {"function": {"name", "arguments"}}, or {"name", "arguments"} itself
    if not isinstance(call, Mapping):
        return None, None
    function = call.get("function")
    body = function if isinstance(function, Mapping) else call
    name = body.get("name")
    arguments = _decoded(body.get("arguments", body.get("parameters")))
    return (name if isinstance(name, str) else None), arguments


def _calls_in_text(text: str) -> list[_Call]:
    # the Hermes blocks, by grpo-rewards' one rule for them (the engine reads them the same way)
    return [(c.name, _decoded(c.arguments)) for c in hermes_calls(text)]


def _calls_in_message(message: Mapping[str, object]) -> list[_Call]:
    structured = message.get("tool_calls")
    if isinstance(structured, list | tuple) and structured:
        return [_structured_call(c) for c in structured]
    content = message.get("content")
    return _calls_in_text(content) if isinstance(content, str) else []


def _location(item: object) -> CodeLocation | None:
    if not isinstance(item, Mapping):
        return None
    path = item.get("file")
    cls = item.get("class_name", item.get("class"))
    func = item.get("function_name", item.get("function"))
    if not isinstance(path, str):
        return None
    if not all(v is None or isinstance(v, str) for v in (cls, func)):
        return None
    return CodeLocation(path, cls if isinstance(cls, str) else None, func)


def _locations(arguments: object) -> tuple[CodeLocation, ...] | None:
    raw = arguments.get("locations") if isinstance(arguments, Mapping) else None
    if not isinstance(raw, list | tuple):
        return None
    locations = [_location(item) for item in raw]
    if any(loc is None for loc in locations):
        return None
    return tuple(loc for loc in locations if loc is not None)


def read_finish_call(completion: object) -> FinishCall:
    """The finish call of a rollout given as chat messages, or as the response text.

    >>> text = ('<tool_call>{"name": "localization_finish", "arguments": {"locations": '
    ...         '[{"file": "a.py", "class_name": "Foo"}]}}</tool_call>')
    >>> finish = read_finish_call(text)
    >>> finish.locations, finish.finish_calls, finish.last_turn_ok
    ((CodeLocation(file='a.py', class_name='Foo', function_name=None),), 1, True)
    >>> read_finish_call(text + " Done.").last_turn_ok
    False
    """
    if isinstance(completion, Sequence) and not isinstance(completion, str | bytes):
        turns = [m for m in completion if isinstance(m, Mapping) and m.get("role") == "assistant"]
        calls = [_calls_in_message(m) for m in turns]
        last_calls = calls[-1] if calls else []
        last_text = turns[-1].get("content") if turns else None
        last_ok = len(last_calls) == 1 and last_calls[0][0] == CODESCOUT_FINISH_TOOL
        # text after the call is visible only when the message kept the raw `<tool_call>` text
        if last_ok and isinstance(last_text, str) and "<tool_call>" in last_text:
            last_ok = codescout_last_turn_ok(last_text)
        every = [c for turn in calls for c in turn]
    else:
        text = completion if isinstance(completion, str) else ""
        every = _calls_in_text(text)
        final_turn = text.rsplit("</tool_response>", 1)[-1]
        final_calls = _calls_in_text(final_turn)
        last_ok = (
            codescout_last_turn_ok(final_turn)
            and len(final_calls) == 1
            and final_calls[0][0] == CODESCOUT_FINISH_TOOL
        )
    finish = [args for name, args in every if name == CODESCOUT_FINISH_TOOL]
    locations = _locations(finish[-1]) if finish else None
    return FinishCall(locations, len(finish), last_ok)


def score_codescout(
    completion: object,
    targets: MultiLevelTargets,
    turns: int | None,
    params: Mapping[str, object],
) -> RewardResult:
    """`codescout_multilevel` of one rollout: its finish call against `targets`."""
    finish = read_finish_call(completion)
    return codescout_multilevel(
        finish.locations,
        targets,
        finish_calls=finish.finish_calls,
        last_turn_ok=finish.last_turn_ok,
        turns=turns,
        **params,  # type: ignore[arg-type]
    )
