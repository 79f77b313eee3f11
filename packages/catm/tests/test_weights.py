"""Stage 3 formulas."""

from __future__ import annotations

import itertools
import math

import pytest
from catm._weights import median_beta, normalized_weights, saturation_weight
from hypothesis import given
from hypothesis import strategies as st


def test_saturation_is_half_at_beta_and_saturates() -> None:
    assert saturation_weight(0, 40.0) == 0.0
    assert saturation_weight(40, 40.0) == pytest.approx(0.5)
    assert saturation_weight(80, 40.0) == pytest.approx(0.75)
    assert saturation_weight(4000, 40.0) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="positive"):
        saturation_weight(1, 0.0)


def test_median_beta() -> None:
    assert median_beta([1, 3, 100]) == 3.0
    assert median_beta([1, 3, 5, 100]) == 4.0
    # Mostly empty reasoning: the median of the non-empty ones sets the scale.
    assert median_beta([0, 0, 0, 10, 30]) == 20.0
    assert median_beta([0, 0]) == 1.0
    assert median_beta([]) == 1.0


@given(st.lists(st.integers(min_value=0, max_value=5000), min_size=1, max_size=200))
def test_normalised_weights_average_one(lengths: list[int]) -> None:
    beta = median_beta(lengths)
    raw = [saturation_weight(n, beta) for n in lengths]
    weights, mean = normalized_weights(raw)
    if mean > 0:
        assert math.fsum(weights) / len(weights) == pytest.approx(1.0)
        # Monotone in l: a longer reasoning never gets a smaller weight.
        pairs = sorted(zip(lengths, weights, strict=True))
        assert all(a[1] <= b[1] + 1e-12 for a, b in itertools.pairwise(pairs))
    else:
        assert all(w == 0 for w in weights)
