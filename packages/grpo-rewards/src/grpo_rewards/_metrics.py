"""Set metrics over file paths and line ranges, and CodeScout's hierarchical F1.

Everything here is a pure function of its arguments. Paths are expected already normalized
(`normalize_paths`); the convenience wrappers in `_rewards` do that. Not for ranking metrics
(Acc@k, MRR): those belong to evaluation, not to a training reward.

Conventions, chosen so that a reward can never be earned by saying nothing:
- an empty prediction has precision 0; an empty gold set has recall 0;
- F-beta is 0 when precision and recall are both 0 (and so whenever either set is empty).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from grpo_rewards._answer import LineRange
from grpo_rewards._paths import normalize_path

__all__ = [
    "CodeLocation",
    "MultiLevelScores",
    "MultiLevelTargets",
    "SetScores",
    "fbeta",
    "fbeta_from_counts",
    "fbeta_line_ranges",
    "line_range_scores",
    "multilevel_f1",
    "precision",
    "recall",
    "set_scores",
    "targets_from_file_changes",
]


@dataclass(frozen=True)
class SetScores:
    """Precision, recall and F-beta of one prediction, with the counts they come from."""

    true_positives: int
    predicted: int
    gold: int
    beta: float
    precision: float
    recall: float
    fbeta: float


def fbeta_from_counts(true_positives: int, predicted: int, gold: int, beta: float = 0.5) -> float:
    """F-beta = (1 + β²)·P·R / (β²·P + R) from counts; β < 1 favours precision."""
    if beta < 0:
        raise ValueError(f"beta must be >= 0, got {beta}")
    if true_positives == 0 or predicted == 0 or gold == 0:
        return 0.0
    p = true_positives / predicted
    r = true_positives / gold
    b2 = beta * beta
    return (1.0 + b2) * p * r / (b2 * p + r)


def set_scores(predicted: Iterable[str], gold: Iterable[str], *, beta: float = 0.5) -> SetScores:
    """Precision, recall and F-beta of a predicted set against a gold set (duplicates collapse)."""
    for name, value in (("predicted", predicted), ("gold", gold)):
        if isinstance(value, str | bytes):
            raise TypeError(f"{name} must be a collection of paths, got the string {value!r}")
    pred = set(predicted)
    truth = set(gold)
    tp = len(pred & truth)
    return SetScores(
        true_positives=tp,
        predicted=len(pred),
        gold=len(truth),
        beta=beta,
        precision=tp / len(pred) if pred else 0.0,
        recall=tp / len(truth) if truth else 0.0,
        fbeta=fbeta_from_counts(tp, len(pred), len(truth), beta),
    )


def precision(predicted: Iterable[str], gold: Iterable[str]) -> float:
    """|P ∩ G| / |P|, 0 for an empty prediction."""
    return set_scores(predicted, gold).precision


def recall(predicted: Iterable[str], gold: Iterable[str]) -> float:
    """|P ∩ G| / |G|, 0 for an empty gold set."""
    return set_scores(predicted, gold).recall


def fbeta(predicted: Iterable[str], gold: Iterable[str], *, beta: float = 0.5) -> float:
    """File-level F-beta (CodeGrep: β = 0.5, precision-biased).

    >>> round(fbeta({"config.py", "main.py"}, {"config.py"}), 3)
    0.556
    """
    return set_scores(predicted, gold, beta=beta).fbeta


# ---------------------------------------------------------------- line ranges


def _merge(ranges: Iterable[LineRange]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for r in sorted(ranges):
        if merged and r.start <= merged[-1][1] + 1:
            if r.end > merged[-1][1]:
                merged[-1] = (merged[-1][0], r.end)
        else:
            merged.append((r.start, r.end))
    return merged


def _overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if lo <= hi:
            total += hi - lo + 1
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def line_range_scores(
    predicted: Mapping[str, Sequence[LineRange]],
    gold: Mapping[str, Sequence[LineRange]],
    *,
    beta: float = 0.5,
) -> SetScores:
    """Line-level precision/recall/F-beta: lines only match within the same file.

    Each side is the set of (file, line) pairs covered by its ranges (overlapping ranges count a
    line once). Counts are pooled over files, so a long range weighs by its length. A gold set
    without any range (a CATM-only label) makes the score 0, the bias the CodeGrep paper names as
    one reason v3 drops this term.
    """
    pred_m = {p: _merge(rs) for p, rs in predicted.items()}
    gold_m = {p: _merge(rs) for p, rs in gold.items()}
    n_pred = sum(e - s + 1 for rs in pred_m.values() for s, e in rs)
    n_gold = sum(e - s + 1 for rs in gold_m.values() for s, e in rs)
    tp = sum(_overlap(rs, gold_m[p]) for p, rs in pred_m.items() if p in gold_m)
    return SetScores(
        true_positives=tp,
        predicted=n_pred,
        gold=n_gold,
        beta=beta,
        precision=tp / n_pred if n_pred else 0.0,
        recall=tp / n_gold if n_gold else 0.0,
        fbeta=fbeta_from_counts(tp, n_pred, n_gold, beta),
    )


def fbeta_line_ranges(
    predicted: Mapping[str, Sequence[LineRange]],
    gold: Mapping[str, Sequence[LineRange]],
    *,
    beta: float = 0.5,
) -> float:
    """Line-range F-beta (see `line_range_scores`)."""
    return line_range_scores(predicted, gold, beta=beta).fbeta


# ---------------------------------------------------------------- CodeScout hierarchical F1


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
