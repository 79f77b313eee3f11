"""Converters from peers' published per-instance outputs to prediction files.

Each converter reads one published format (see `shared/data/SOURCES.md` for their origin) and
returns `Prediction`s plus the rows it could not use. None of them drops an instance silently:
an instance a peer did not answer simply has no prediction, and the scorer counts it as missing.

- `locagent`: LocAgent's raw output (`found_files`, ChronoRepo's copy) or CodeScout's evaluation
  JSON (`per_instance[].pred_files`); files in LocAgent's rank order.
- `swefixer`: CodeScout's evaluation JSON for SWE-Fixer (`per_instance[].pred_files`).
- `chronorepo`: ChronoRepo's `f1_scores_*.jsonl`, the `bm25` or `hybrid` ranking of
  `[path, score]` pairs, cut to the top k and/or to a score floor.
- `autocoderover`, `swe-agent`: SWE-bench prediction files (`instance_id`, `model_patch`); the
  files edited, read with the same rule as gold (`codegrep_records.GoldRule`): new files and
  test files do not count. An empty or absent patch gives an empty prediction.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from codegrep_records import (
    GoldRule,
    Prediction,
    RowProblem,
    files_from_patch,
    normalize_path,
    read_rows,
)

__all__ = [
    "Conversion",
    "PeerFormat",
    "convert_peer",
]


class PeerFormat(StrEnum):
    LOCAGENT = "locagent"
    SWEFIXER = "swefixer"
    CHRONOREPO = "chronorepo"
    AUTOCODEROVER = "autocoderover"
    SWE_AGENT = "swe-agent"


@dataclass(frozen=True)
class Conversion:
    """What a converter made of a file, and enough about the file to say when it was not the
    format asked for.

    `rows` counts every row read (good or not), `recognized` the rows that carried the format's
    own field (`found_files`/`pred_files`, the chosen ranking, `model_patch`); a file with rows
    of which none is recognized is in another format (`wrong_format`), even when its rows gave
    predictions (a patch format reads an absent `model_patch` as an empty prediction).
    """

    predictions: tuple[Prediction, ...]
    problems: tuple[RowProblem, ...]
    rows: int = 0
    recognized: int = 0
    expected: str = ""
    found_keys: tuple[str, ...] = ()

    @property
    def wrong_format(self) -> bool:
        """Nothing in the file was in the format asked for (an empty file included)."""
        return self.recognized == 0

    def found(self) -> str:
        """What the file held, in words, for a message."""
        if self.rows == 0:
            return "no rows"
        if not self.found_keys:
            return f"{self.rows} row(s), none a JSON object with an instance_id"
        return f"{self.rows} row(s) with the keys {', '.join(self.found_keys)}"


def _unique(paths: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for p in paths:
        n = normalize_path(p)
        if n and n not in seen:
            seen.add(n)
            out.append(n)
    return out


def _str_list(value: Any) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


def _cut(
    ranked: list[tuple[str, float]], top_k: int | None, min_score: float | None
) -> list[tuple[str, float]]:
    if min_score is not None:
        ranked = [(p, s) for p, s in ranked if s >= min_score]
    if top_k is not None:
        ranked = ranked[:top_k]
    return ranked


def _expected_shape(fmt: PeerFormat | str, ranking: str = "hybrid") -> str:
    """The rows a format's converter reads, in words (for messages)."""
    fmt = PeerFormat(fmt)
    if fmt is PeerFormat.LOCAGENT:
        return "rows with instance_id and found_files (LocAgent) or pred_files (CodeScout)"
    if fmt is PeerFormat.SWEFIXER:
        return "rows with instance_id and pred_files (CodeScout's evaluation JSON)"
    if fmt is PeerFormat.CHRONOREPO:
        return f"rows with instance_id and a {ranking!r} list of [path, score] pairs"
    return "SWE-bench prediction rows with instance_id and model_patch"


def convert_peer(
    fmt: PeerFormat | str,
    path: str | Path,
    *,
    name: str | None = None,
    ranking: str = "hybrid",
    top_k: int | None = None,
    min_score: float | None = None,
    rule: GoldRule | None = None,
) -> Conversion:
    """Read a peer's published file as predictions.

    `ranking` picks ChronoRepo's `bm25` or `hybrid` list; `top_k` and `min_score` cut any ranked
    list (for LocAgent and SWE-Fixer `top_k` keeps the first k files, `min_score` is unused).
    A file in another format gives no predictions (or, for the patch formats, only empty ones)
    and a `Conversion` whose `wrong_format` is true.
    """
    fmt = PeerFormat(fmt)
    if top_k is not None and top_k < 1:
        raise ValueError("top_k must be >= 1")
    label = name or (f"chronorepo-{ranking}" if fmt is PeerFormat.CHRONOREPO else fmt.value)
    if top_k is not None:
        label = f"{label}@{top_k}"
    preds: list[Prediction] = []
    problems: list[RowProblem] = []
    where = str(path)
    rows = recognized = 0
    keys: set[str] = set()
    extract: Callable[[Mapping[str, Any]], tuple[list[str], list[float] | None] | str]

    def from_files(row: Mapping[str, Any]) -> tuple[list[str], list[float] | None] | str:
        for key in ("found_files", "pred_files", "files"):
            if key in row:
                files = _str_list(row[key])
                if files is None:
                    return f"{key} is not a list of paths"
                files = _unique(files)
                return (files[:top_k] if top_k else files), None
        return "no found_files/pred_files"

    def from_ranking(row: Mapping[str, Any]) -> tuple[list[str], list[float] | None] | str:
        raw = row.get(ranking)
        if not isinstance(raw, list):
            return f"no {ranking!r} ranking"
        ranked: list[tuple[str, float]] = []
        seen: set[str] = set()
        for item in raw:
            if not (isinstance(item, list | tuple) and len(item) == 2 and isinstance(item[0], str)):
                return f"{ranking}: expected [path, score] pairs"
            if isinstance(item[1], bool) or not isinstance(item[1], int | float):
                return f"{ranking}: score of {item[0]!r} is not a number: {item[1]!r}"
            if not math.isfinite(item[1]):  # Python's json reads NaN and Infinity
                return f"{ranking}: score of {item[0]!r} is not finite: {item[1]!r}"
            p = normalize_path(item[0])
            if p and p not in seen:
                seen.add(p)
                ranked.append((p, float(item[1])))
        ranked = _cut(ranked, top_k, min_score)
        return [p for p, _ in ranked], [s for _, s in ranked]

    def from_patch(row: Mapping[str, Any]) -> tuple[list[str], list[float] | None] | str:
        patch = row.get("model_patch")
        if patch is None:
            return [], None
        if not isinstance(patch, str):
            return "model_patch is not a string"
        files = list(files_from_patch(patch, rule))
        return (files[:top_k] if top_k else files), None

    if fmt in (PeerFormat.LOCAGENT, PeerFormat.SWEFIXER):
        extract = from_files
    elif fmt is PeerFormat.CHRONOREPO:
        extract = from_ranking
    else:
        extract = from_patch

    own_keys = {
        PeerFormat.LOCAGENT: ("found_files", "pred_files", "files"),
        PeerFormat.SWEFIXER: ("found_files", "pred_files", "files"),
        PeerFormat.CHRONOREPO: (ranking,),
    }.get(fmt, ("model_patch",))
    seen_ids: set[str] = set()
    for line, row in read_rows(path):
        rows += 1
        if isinstance(row, Mapping) and len(keys) < 40:
            keys.update(str(k) for k in row)
        if isinstance(row, Mapping) and any(k in row for k in own_keys):
            recognized += 1
        if isinstance(row, RowProblem):
            problems.append(row)
            continue
        if not isinstance(row, Mapping) or not isinstance(row.get("instance_id"), str):
            problems.append(RowProblem(where, line, "no instance_id"))
            continue
        iid = row["instance_id"]
        if iid in seen_ids:
            problems.append(RowProblem(where, line, f"duplicate instance_id {iid!r}; first kept"))
            continue
        got = extract(row)
        if isinstance(got, str):
            problems.append(RowProblem(where, line, got))
            continue
        seen_ids.add(iid)
        files, scores = got
        preds.append(
            Prediction(
                instance_id=iid,
                files=tuple(files),
                scores=tuple(scores) if scores is not None else None,
                retriever=label,
            )
        )
    return Conversion(
        tuple(preds),
        tuple(problems),
        rows=rows,
        recognized=recognized,
        expected=_expected_shape(fmt, ranking),
        found_keys=tuple(sorted(keys)[:12]),
    )
