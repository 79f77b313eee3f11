"""The scoring core swe-eval and codegrep-gate both score with: ranked scores and the accounting
of a prediction set against gold sets (the bootstrap is codegrep-records')."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from grpo_rewards import account, answer_status, score_ranked
from hypothesis import given, settings
from hypothesis import strategies as st

PATHS = ["a.py", "b.py", "c.py", "d.py"]
IDS = ["i1", "i2", "i3", "i4"]


@dataclass(frozen=True)
class Row:
    instance_id: str
    files: tuple[str, ...]


def test_a_file_named_twice_is_one_file_at_its_first_rank() -> None:
    s = score_ranked(["a.py", "b.py", "a.py"], {"a.py", "c.py"})
    assert s.files == ("a.py", "b.py")
    assert s.first_index == (0, 1)
    assert s.hits == (True, False)
    assert (s.true_positives, s.precision, s.recall) == (1, 0.5, 0.5)
    assert s.fbeta == pytest.approx(0.5)
    # counted twice, recall would be 2/2 and precision 2/3
    assert score_ranked(["a.py", "a.py"], {"a.py", "c.py"}).recall == 0.5


def test_nothing_to_score_is_an_error_not_a_zero() -> None:
    with pytest.raises(ValueError, match="empty gold"):
        score_ranked(["a.py"], set())
    with pytest.raises(ValueError, match="empty answer"):
        score_ranked([], {"a.py"})
    assert [answer_status(x) for x in (None, (), ("a.py",))] == ["missing", "empty", "ok"]


@settings(max_examples=200, deadline=None)
@given(
    gold=st.dictionaries(st.sampled_from(IDS), st.frozensets(st.sampled_from(PATHS), max_size=3)),
    rows=st.lists(
        st.builds(
            Row,
            st.sampled_from([*IDS, "other"]),
            st.lists(st.sampled_from(PATHS), max_size=5).map(tuple),
        ),
        max_size=8,
    ),
)
def test_account_follows_the_written_rule(gold: dict[str, frozenset[str]], rows: list[Row]) -> None:
    acc = account(gold, rows, key=lambda r: r.instance_id)
    assert acc.no_gold == tuple(sorted(i for i, g in gold.items() if not g))
    assert acc.unknown == tuple(r.instance_id for r in rows if r.instance_id not in gold)
    assert [iid for iid, _, _ in acc.scored] == sorted(i for i, g in gold.items() if g)
    for iid, truth, found in acc.scored:
        assert truth == gold[iid]
        firsts = [r for r in rows if r.instance_id == iid]
        assert found == (firsts[0] if firsts else None)  # the first row of an id counts
        if found is not None and found.files:
            s = score_ranked(found.files, truth)
            unique = set(found.files)
            assert s.precision == len(unique & truth) / len(unique)
            assert s.recall == len(unique & truth) / len(truth)
