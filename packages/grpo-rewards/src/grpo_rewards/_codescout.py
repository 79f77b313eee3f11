"""CodeScout's reward in one place: its gold (`file_changes` rows), its answer (the
`localization_finish` call), its hierarchical F1 and the reward built from them.

CodeScout's agent submits its answer by calling the `localization_finish` tool with
`{"locations": [{"file": ..., "class_name": ..., "function_name": ...}, ...]}`, and its reward is
0 unless that call was made exactly once, alone, as the final turn, with no text after it. The
finish call is read from what the adapters receive: a list of chat messages (assistant
`tool_calls`, or Hermes `<tool_call>{"name": ..., "arguments": ...}</tool_call>` blocks in the
text, read by `_formats.hermes_calls` as the engine reads them), or the text of the response
(the final turn is what follows the last `</tool_response>`). The set metric under the F1 is
`_metrics.fbeta` and the path rule `_paths.normalize_path`, as for every other reward; a row's
loosely typed `file_changes` value is turned into targets by `_trainer_rows.targets_from_values`,
beside the reader of the other labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from grpo_rewards._formats import hermes_calls, loads_strict
from grpo_rewards._metrics import fbeta
from grpo_rewards._paths import normalize_path
from grpo_rewards._rewards import RewardResult
from grpo_rewards.errors import InvalidRolloutError

__all__ = [
    "CODESCOUT_FINISH_TOOL",
    "DEFAULT_FILE_CHANGES_COLUMN",
    "CodeLocation",
    "FinishCall",
    "MultiLevelScores",
    "MultiLevelTargets",
    "codescout_last_turn_ok",
    "codescout_multilevel",
    "multilevel_f1",
    "read_finish_call",
    "score_codescout",
    "targets_from_file_changes",
]

# ---------------------------------------------------------------- the gold and the F1


@dataclass(frozen=True)
class CodeLocation:
    """One entry of CodeScout's `localization_finish` call: a file, optionally a class/function."""

    file: str
    class_name: str | None = None
    function_name: str | None = None


@dataclass(frozen=True)
class MultiLevelTargets:
    """Gold sets at three levels: files, modules (`file:Class`), entities (`file:Class.func`)."""

    files: frozenset[str]
    modules: frozenset[str]
    entities: frozenset[str]


@dataclass(frozen=True)
class MultiLevelScores:
    """F1 at each level (the CodeScout reward sums them, each with weight 1 by default)."""

    file_f1: float
    module_f1: float
    entity_f1: float


def _normalize_symbol(symbol: str) -> str:
    """`path:Symbol` with the path part normalized; a bare path is normalized as a path."""
    path, sep, rest = symbol.partition(":")
    return normalize_path(path) + sep + rest.strip() if sep else normalize_path(symbol)


def targets_from_file_changes(file_changes: Iterable[Mapping[str, object]]) -> MultiLevelTargets:
    """Gold sets from LocAgent/CodeScout `file_changes` rows.

    Each row is `{"file": path, "changes": {"edited_modules": [...], "edited_entities": [...]}}`
    (CodeScout's `multilevel_localization_f1_reward` reads exactly these keys; `None` lists are
    empty).
    """
    files: set[str] = set()
    modules: set[str] = set()
    entities: set[str] = set()
    for i, change in enumerate(file_changes):
        if not isinstance(change, Mapping):
            shown = repr(change)[:120]
            raise TypeError(f"file_changes[{i}] must be a mapping with 'file', got {shown}")
        path = change.get("file")
        if isinstance(path, str) and normalize_path(path):
            files.add(normalize_path(path))
        changes = change.get("changes")
        if not isinstance(changes, Mapping):
            continue
        for key, bucket in (("edited_modules", modules), ("edited_entities", entities)):
            values = changes.get(key) or []
            if isinstance(values, list | tuple):
                bucket.update(_normalize_symbol(v) for v in values if isinstance(v, str))
    return MultiLevelTargets(frozenset(files), frozenset(modules), frozenset(entities))


def _levels(locations: Sequence[CodeLocation]) -> MultiLevelTargets:
    # CodeScout (module_rewards.parse_structured_outputs): module = file:Class, else file:func;
    # entity = file:Class.func, else file:func; one location without a file voids the answer.
    files: set[str] = set()
    modules: set[str] = set()
    entities: set[str] = set()
    for loc in locations:
        path = normalize_path(loc.file) if loc.file else ""
        if not path:
            return MultiLevelTargets(frozenset(), frozenset(), frozenset())
        files.add(path)
        cls = (loc.class_name or "").strip()
        func = (loc.function_name or "").strip()
        if cls:
            modules.add(f"{path}:{cls}")
        elif func:
            modules.add(f"{path}:{func}")
        if cls and func:
            entities.add(f"{path}:{cls}.{func}")
        elif func:
            entities.add(f"{path}:{func}")
    return MultiLevelTargets(frozenset(files), frozenset(modules), frozenset(entities))


def multilevel_f1(
    locations: Sequence[CodeLocation], targets: MultiLevelTargets
) -> MultiLevelScores:
    """CodeScout's file / module / function F1 (β = 1; 0 at a level whose gold set is empty)."""
    pred = _levels(locations)
    return MultiLevelScores(
        file_f1=fbeta(pred.files, targets.files, beta=1.0),
        module_f1=fbeta(pred.modules, targets.modules, beta=1.0),
        entity_f1=fbeta(pred.entities, targets.entities, beta=1.0),
    )


# ---------------------------------------------------------------- the finish call

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
            return loads_strict(arguments)
        except ValueError:  # not JSON, or JSON the toolkit refuses (NaN, 1e999, deep nesting)
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


# ---------------------------------------------------------------- the reward


def codescout_last_turn_ok(last_turn_text: str) -> bool:
    """CodeScout's sanity check of the final turn, on its decoded text.

    Exactly one `<tool_call>` … `</tool_call>` (the finish call, alone: no parallel calls) and
    nothing but whitespace after it, up to the end-of-turn token.
    """
    if last_turn_text.count("<tool_call>") != 1 or last_turn_text.count("</tool_call>") != 1:
        return False
    if last_turn_text.count("<|im_end|>") > 1:
        return False
    tail = last_turn_text.split("</tool_call>", 1)[1].split("<|im_end|>", 1)[0]
    return tail.strip() == ""


def codescout_multilevel(
    locations: Sequence[CodeLocation] | None,
    targets: MultiLevelTargets,
    *,
    finish_calls: int = 1,
    last_turn_ok: bool = True,
    file_weight: float = 1.0,
    module_weight: float = 1.0,
    entity_weight: float = 1.0,
    turns: int | None = None,
    turn_bonus_range: tuple[int, int] | None = None,
    turn_bonus_weight: float = 1.0,
) -> RewardResult:
    """CodeScout's reward: w_f·F1_file + w_m·F1_module + w_e·F1_function, with its finish rules.

    The localization part is 0 unless `localization_finish` was called exactly once
    (`finish_calls == 1`) and the final turn passed `codescout_last_turn_ok` (no parallel call,
    no trailing text). CodeScout-14B adds a turn reward: `turn_bonus_weight` when
    `turn_bonus_range[0] <= turns <= turn_bonus_range[1]` (its config uses (4, 4)); that term is
    independent of the finish rules, as in CodeScout's reward manager.
    """
    parts: dict[str, float] = {"file_f1": 0.0, "module_f1": 0.0, "entity_f1": 0.0}
    reason: str | None = None
    if finish_calls != 1:
        reason = f"finish tool called {finish_calls} times (exactly 1 required)"
    elif not last_turn_ok:
        reason = "final turn is not a lone finish call"
    elif locations is None:
        reason = "no submitted locations"
    else:
        scores = multilevel_f1(locations, targets)
        parts = {
            "file_f1": scores.file_f1,
            "module_f1": scores.module_f1,
            "entity_f1": scores.entity_f1,
        }
    reward = (
        file_weight * parts["file_f1"]
        + module_weight * parts["module_f1"]
        + entity_weight * parts["entity_f1"]
    )
    if turn_bonus_range is not None:
        if turns is None:
            raise InvalidRolloutError("turn_bonus_range needs the number of turns")
        lo, hi = turn_bonus_range
        parts["turn_bonus"] = turn_bonus_weight if lo <= turns <= hi else 0.0
        reward += parts["turn_bonus"]
    return RewardResult(reward, parts, reason)


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
