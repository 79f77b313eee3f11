"""The bins of a precision curve: ranks 1..k, or score bins from quantiles merged by PAV.

Score bins start as quantile blocks of the answered files' scores and are merged by the pool-
adjacent-violators algorithm until precision never falls as the score rises. A `BinSpec` holds
the edges and which bin a file falls in; the counts and intervals are `_calibrate`'s. Pure
functions; no I/O.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

from codegrep_gate._records import Curve
from codegrep_gate._scored import Scored

# --- bins -------------------------------------------------------------------------------------


@dataclass
class Block:
    """A score bin while bins are being made: a run of sorted scores."""

    lo: float
    hi: float
    files: int
    hits: int

    def merge(self, other: Block) -> Block:
        return Block(self.lo, other.hi, self.files + other.files, self.hits + other.hits)


def quantile_blocks(
    entries: Sequence[tuple[float, bool]], n_bins: int, min_files: int
) -> list[Block]:
    """Up to `n_bins` runs of the sorted scores, of near-equal size; equal scores stay together.

    As many bins as leave each at least `min_files` files; a run left smaller than that (ties can
    make one) is merged into its smaller neighbour.
    """
    ordered = sorted(entries, key=lambda e: e[0])
    n = len(ordered)
    k = max(1, min(n_bins, n // min_files))
    cuts = [0]
    for i in range(1, k):
        c = round(i * n / k)
        while 0 < c < n and ordered[c][0] == ordered[c - 1][0]:
            c += 1
        if cuts[-1] < c < n:
            cuts.append(c)
    cuts.append(n)
    blocks = []
    for a, b in pairwise(cuts):
        run = ordered[a:b]
        blocks.append(Block(run[0][0], run[-1][0], len(run), sum(1 for _, hit in run if hit)))
    while len(blocks) > 1:
        small = [i for i, blk in enumerate(blocks) if blk.files < min_files]
        if not small:
            break
        i = small[0]
        if i == 0:
            j = 1
        elif i == len(blocks) - 1:
            j = i - 1
        else:
            j = i - 1 if blocks[i - 1].files <= blocks[i + 1].files else i + 1
        a, b = min(i, j), max(i, j)
        blocks[a : b + 1] = [blocks[a].merge(blocks[b])]
    return blocks


def pool_adjacent_violators(blocks: list[Block]) -> tuple[list[Block], int]:
    """Merge neighbours until precision (hits/files) does not fall as score rises.

    Returns the merged blocks and the number of merges. Precisions are compared by cross
    multiplication, so equal precisions are never merged because of rounding.
    """
    stack: list[Block] = []
    merges = 0
    for blk in blocks:
        stack.append(blk)
        while (
            len(stack) > 1 and stack[-2].hits * stack[-1].files > stack[-1].hits * stack[-2].files
        ):
            top = stack.pop()
            stack[-1] = stack[-1].merge(top)
            merges += 1
    return stack, merges


@dataclass(frozen=True)
class BinSpec:
    """Bins of one curve before intervals: edges, and which bin each file falls in."""

    basis: Literal["rank", "score"]
    method: str
    edges: list[tuple[float, float | None]]  # (lo, hi) per bin
    assign: Callable[[tuple[int, float | None, bool]], int | None]  # file -> bin index


def rank_bin_spec(scored: Sequence[Scored], max_rank: int) -> BinSpec | None:
    deepest = max((len(s.files) for s in scored), default=0)
    if deepest == 0:
        return None
    last = min(deepest, max_rank)
    edges: list[tuple[float, float | None]] = [(float(r), float(r)) for r in range(1, last)]
    edges.append((float(last), None))
    if last == 1:
        method = "every rank pooled"
    else:
        ranks = "rank 1" if last == 2 else f"ranks 1-{last - 1}"
        method = f"one bin for each of {ranks}, rank {last} and beyond pooled"
    method += (
        "; precision in a bin is the share of its files that are gold, over the instances "
        "with a file at that rank"
    )
    return BinSpec("rank", method, edges, lambda f: min(f[0], last) - 1)


def score_bin_spec(scored: Sequence[Scored], score_bins: int, min_bin_files: int) -> BinSpec | None:
    answered = [s for s in scored if s.answered]
    with_scores = [s for s in answered if s.files[0][1] is not None]
    if not with_scores:
        return None
    entries = [(f[1], f[2]) for s in with_scores for f in s.files if f[1] is not None]
    blocks = quantile_blocks(entries, score_bins, min_bin_files)
    merged, merges = pool_adjacent_violators(blocks)
    method = (
        f"{len(blocks)} quantile bin(s) of the {len(entries)} file scores (at most "
        f"{score_bins}, each of >= {min_bin_files} files where possible, equal scores kept "
        f"together), then pool-adjacent-violators: {merges} merge(s) so that precision does not "
        f"fall as the score rises; {len(merged)} bin(s)"
    )
    if len(with_scores) < len(answered):
        method += (
            f"; from the {len(with_scores)} of {len(answered)} answered instances whose "
            "predictions carry scores"
        )
    return score_bin_spec_from_edges([(b.lo, b.hi) for b in merged], method)


def score_bin_spec_from_edges(edges: list[tuple[float, float | None]], method: str) -> BinSpec:
    los = [lo for lo, _ in edges]

    def assign(f: tuple[int, float | None, bool]) -> int | None:
        if f[1] is None:
            return None
        return max(bisect_right(los, f[1]) - 1, 0)

    return BinSpec("score", method, edges, assign)


def bin_spec_from_curve(curve: Curve) -> BinSpec:
    """The bins of an existing curve, to measure them again on other data."""
    edges = [(b.lo, b.hi) for b in curve.bins]
    method = f"the calibration's bins, held fixed ({curve.method})"
    if curve.basis == "score":
        return score_bin_spec_from_edges(edges, method)
    los = [lo for lo, _ in edges]
    return BinSpec("rank", method, edges, lambda f: max(bisect_right(los, float(f[0])) - 1, 0))
