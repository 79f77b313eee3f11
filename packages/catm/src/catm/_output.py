"""Writing and reading label files, and the statistics report built from them.

`write_labels` writes `LABELS.jsonl` and `LABELS.stats.json` through temporary files and renames,
so a killed run never leaves a half-written label file that looks complete. `label_report`
recomputes everything that can be recomputed from the labels alone (so it also works on label
files someone else produced); the per-stage read counts come from the stats file.
"""

from __future__ import annotations

import importlib
import itertools
import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from codegrep_records.io import open_replacing
from pydantic import ValidationError

from catm._readers import open_text_lines
from catm._records import LabelRecord, MiningStats, Skip
from catm._weights import GOLD_THRESHOLD
from catm.errors import InputError, MissingExtraError

HISTOGRAM_BINS = 20


def stats_path(labels: Path) -> Path:
    """Where the run statistics of `labels` live: `<labels>.stats.json`."""
    return labels.with_name(labels.name + ".stats.json")


def write_labels(path: Path, labels: Iterable[LabelRecord], stats: MiningStats) -> None:
    """Stream `labels` to `path` and write the stats beside it. Each goes to a new file beside
    its destination (codegrep-records' `open_replacing`: a random name
    opened with O_EXCL|O_NOFOLLOW, so a link planted there is never followed) and is renamed
    over it at the end; a run that fails midway leaves the old files and no temporary one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open_replacing(stats_path(path)) as sidecar:
        with open_replacing(path) as out:
            for label in labels:
                out.write(label.model_dump_json())
                out.write("\n")
        # the labels are renamed into place first, then the stats
        sidecar.write(stats.model_dump_json(indent=2) + "\n")


def read_labels(path: Path) -> Iterator[LabelRecord | Skip]:
    """Stream a labels file; rows that do not validate come back as `Skip`s."""
    for number, line in open_text_lines(path):
        if not line.strip():
            continue
        try:
            yield LabelRecord.model_validate_json(line)
        except ValidationError as exc:
            yield Skip(str(path), number, f"invalid label: {exc.errors()[0]['msg']}")


def read_stats(labels: Path) -> MiningStats | None:
    sidecar = stats_path(labels)
    if not sidecar.exists():
        return None
    try:
        text = sidecar.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{sidecar}: cannot read ({exc})") from exc
    try:
        return MiningStats.model_validate_json(text)
    except ValidationError as exc:
        raise InputError(f"{sidecar}: not a catm stats file ({exc.errors()[0]['msg']})") from exc


@dataclass(frozen=True, slots=True)
class MinedExample:
    """A gold file that only mining found: the auxiliary context CATM exists for."""

    instance_id: str
    path: str
    reasoning_tokens: int
    weight: float
    patch_files: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LabelReport:
    labels: int
    skipped_rows: int
    patch_files: int
    mined_files: int
    verdicts: dict[str, int]
    weighted: int
    above_threshold: int
    gold_files: int
    mined_not_in_patch: int
    instances_with_mined_only_gold: int
    patch_files_mined: int  # patch files some trajectory read
    weight_mean: float
    histogram_edges: tuple[float, ...]
    histogram_counts: tuple[int, ...]
    examples: tuple[MinedExample, ...]


def label_report(path: Path, examples: int = 3, threshold: float = GOLD_THRESHOLD) -> LabelReport:
    """Recompute the label-level figures of a labels file (`threshold`: the run's gold cut)."""
    n = skipped = patch = mined = weighted = above = gold = only = with_only = patch_mined = 0
    verdicts: Counter[str] = Counter()
    weights: list[float] = []
    found: list[MinedExample] = []
    for row in read_labels(path):
        if isinstance(row, Skip):
            skipped += 1
            continue
        n += 1
        patch += len(row.patch_files)
        mined += len(row.mined)
        gold += len(row.gold)
        instance_only = 0
        for file in row.mined:
            verdicts[file.verdict.value] += 1
            patch_mined += file.in_patch
            if file.weight is None:
                continue
            weighted += 1
            weights.append(file.weight)
            above += file.weight >= threshold
            if file.in_gold and not file.in_patch:
                only += 1
                instance_only += 1
                found.append(
                    MinedExample(
                        row.instance_id,
                        file.path,
                        file.reasoning_tokens,
                        file.weight,
                        tuple(row.patch_files),
                    )
                )
        with_only += instance_only > 0
    top = math.ceil(max(weights)) if weights else 1
    edges = tuple(top * i / HISTOGRAM_BINS for i in range(HISTOGRAM_BINS + 1))
    bins = [0] * HISTOGRAM_BINS
    for w in weights:
        bins[min(int(w / top * HISTOGRAM_BINS), HISTOGRAM_BINS - 1)] += 1
    # The examples most worth a look: long reasoning about a file the fix never touched.
    found.sort(key=lambda e: (-e.reasoning_tokens, e.instance_id, e.path))
    distinct: list[MinedExample] = []
    for example in found:
        if all(example.instance_id != d.instance_id for d in distinct):
            distinct.append(example)
        if len(distinct) == examples:
            break
    return LabelReport(
        labels=n,
        skipped_rows=skipped,
        patch_files=patch,
        mined_files=mined,
        verdicts=dict(verdicts),
        weighted=weighted,
        above_threshold=above,
        gold_files=gold,
        mined_not_in_patch=only,
        instances_with_mined_only_gold=with_only,
        patch_files_mined=patch_mined,
        weight_mean=math.fsum(weights) / len(weights) if weights else 0.0,
        histogram_edges=edges,
        histogram_counts=tuple(bins),
        examples=tuple(distinct),
    )


def plot_histogram(report: LabelReport, out: Path, threshold: float) -> None:
    """Write the weight histogram as a PNG (needs the `plot` extra: matplotlib)."""
    try:
        # Through importlib: matplotlib is an optional extra, absent where type checks run.
        matplotlib = importlib.import_module("matplotlib")
        matplotlib.use("Agg")  # no display on batch machines
        plt = importlib.import_module("matplotlib.pyplot")
    except ImportError as exc:
        raise MissingExtraError(
            "the weight histogram needs matplotlib: pip install 'catm[plot]'"
        ) from exc
    edges = report.histogram_edges
    widths = [b - a for a, b in itertools.pairwise(edges)]
    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    ax.bar(edges[:-1], report.histogram_counts, width=widths, align="edge", edgecolor="black")
    ax.axvline(threshold, color="red", linestyle="--", label=f"gold threshold w = {threshold}")
    ax.set_xlabel("w(f) = w̃(f) / mean(w̃)")
    ax.set_ylabel("mined (instance, file) pairs")
    ax.set_title(f"CATM weights: {report.weighted} pairs, mean w = {report.weight_mean:.3f}")
    ax.legend()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
