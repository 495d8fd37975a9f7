"""The report's statistics (`ssegrade.stats`): Wilson interval and exact McNemar test."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ssegrade.stats import Z95, mcnemar_exact, wilson


@st.composite
def counts(draw: st.DrawFn) -> tuple[int, int]:
    """(passed, of) with 1 ≤ of ≤ 5000."""
    of = draw(st.integers(1, 5000))
    return draw(st.integers(0, of)), of


@given(counts())
def test_wilson_contains_the_share(pair: tuple[int, int]) -> None:
    """Property: the Wilson interval contains passed/of and lies within [0, 1]; it reaches 0
    (1) exactly when nothing (everything) passed."""
    passed, of = pair
    bounds = wilson(passed, of)
    assert bounds is not None
    low, high = bounds
    assert 0.0 <= low <= passed / of <= high <= 1.0
    assert (low == 0.0) == (passed == 0)
    assert (high == 1.0) == (passed == of)


@given(counts())
def test_wilson_is_symmetric(pair: tuple[int, int]) -> None:
    """Property: swapping passes and failures mirrors the interval: (1−high, 1−low)."""
    passed, of = pair
    low, high = wilson(passed, of) or (0.0, 0.0)
    mirror_low, mirror_high = wilson(of - passed, of) or (0.0, 0.0)
    assert mirror_low == pytest.approx(1 - high, abs=1e-12)
    assert mirror_high == pytest.approx(1 - low, abs=1e-12)


@given(counts())
def test_wilson_bounds_solve_the_score_equation(pair: tuple[int, int]) -> None:
    """Property: each bound q inside (0, 1) satisfies |p − q| = z·√(q(1−q)/n), the definition of
    the Wilson interval (inverting the score test)."""
    passed, of = pair
    p = passed / of
    for q in wilson(passed, of) or ():
        if 0.0 < q < 1.0:
            assert abs(p - q) == pytest.approx(Z95 * math.sqrt(q * (1 - q) / of), abs=1e-9)


@pytest.mark.parametrize(
    ("passed", "of", "low", "high"),
    [
        # Published values (e.g. Newcombe 1998, table I, method 3), to four decimals.
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
        (0, 10, 0.0, 0.2775),
    ],
)
def test_wilson_matches_published_values(passed: int, of: int, low: float, high: float) -> None:
    """Known intervals from the literature."""
    got = wilson(passed, of)
    assert got is not None
    assert got == pytest.approx((low, high), abs=5e-5)


def test_wilson_of_nothing_is_none_and_bad_counts_raise() -> None:
    """No runs: no interval. Impossible counts are a programming error."""
    assert wilson(0, 0) is None
    with pytest.raises(ValueError, match="passed <= of"):
        wilson(-1, 3)


def exact_two_sided(only_a: int, only_b: int) -> float:
    """The two-sided binomial p-value summing every outcome as unlikely as the one observed
    (the other usual definition; for p = ½ it equals the doubled tail, capped at 1)."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    observed = math.comb(n, only_a)
    total = sum(math.comb(n, k) for k in range(n + 1) if math.comb(n, k) <= observed)
    return float(Fraction(total, 2**n))


@given(st.integers(0, 300), st.integers(0, 300))
def test_mcnemar_matches_the_binomial_definition(only_a: int, only_b: int) -> None:
    """Property: the exact McNemar p-value equals the two-sided binomial test (p = ½) on the
    discordant pairs, is symmetric in A and B, and lies in (0, 1]."""
    p = mcnemar_exact(only_a, only_b)
    assert p == pytest.approx(exact_two_sided(only_a, only_b), rel=1e-12)
    assert p == mcnemar_exact(only_b, only_a)
    assert 0.0 < p <= 1.0


@given(st.integers(0, 200), st.integers(0, 200))
def test_mcnemar_shrinks_with_imbalance(only_a: int, only_b: int) -> None:
    """Property: one more discordant pair on the larger side never raises the p-value."""
    if only_a >= only_b:
        assert mcnemar_exact(only_a + 1, only_b) <= mcnemar_exact(only_a, only_b)


@pytest.mark.parametrize(
    ("only_a", "only_b", "p"),
    [(0, 0, 1.0), (3, 3, 1.0), (0, 6, 0.03125), (2, 12, 212 / 16384), (1, 9, 0.021484375)],
)
def test_mcnemar_known_values(only_a: int, only_b: int, p: float) -> None:
    """Hand-computed values: 2·Σ C(n, i)/2ⁿ over the smaller tail."""
    assert mcnemar_exact(only_a, only_b) == pytest.approx(p, rel=1e-9)


def test_mcnemar_handles_large_counts() -> None:
    """Large counts neither overflow nor lose the tiny p-value."""
    p = mcnemar_exact(0, 2000)
    assert 0.0 <= p < 1e-300
    assert mcnemar_exact(1000, 1000) == 1.0
