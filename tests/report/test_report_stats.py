"""The report's statistics (`ssegrade.report._stats`): intervals, pass@k, pass^k, McNemar, Holm."""

from __future__ import annotations

import itertools
import math
import time
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ssegrade.report import (
    Z95,
    clustered_wilson,
    holm,
    mcnemar_exact,
    mean_pass_at_k,
    mean_pass_hat_k,
    pass_at_k,
    pass_hat_k,
    wilson,
)


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


@settings(max_examples=30, deadline=None)
@given(st.integers(1025, 3000), st.integers(0, 1500))
def test_mcnemar_beyond_the_exact_sums_keeps_double_precision(n: int, smaller: int) -> None:
    """Property: beyond the counts summed in integers, the p-value is the exact one to about
    twelve digits (where it is not too small for a double to say)."""
    smaller = min(smaller, n // 2)
    exact = float(Fraction(2 * sum(math.comb(n, i) for i in range(smaller + 1)), 2**n))
    p = mcnemar_exact(smaller, n - smaller)
    assert p == pytest.approx(min(1.0, exact), rel=1e-11, abs=1e-300)


def test_mcnemar_over_many_tasks_is_quick() -> None:
    """A million discordant tasks (a report of that many tasks) take milliseconds, not the
    minutes a sum of a million binomials did; the value is that of the normal tail."""
    start = time.perf_counter()
    p = mcnemar_exact(499_000, 501_000)
    assert time.perf_counter() - start < 2.0
    normal = math.erfc(1000 / math.sqrt(1_000_000 / 4) / math.sqrt(2))
    assert p == pytest.approx(normal, rel=0.01)


# --------------------------------------------------------------------------- pass@k, pass^k


@st.composite
def trials(draw: st.DrawFn, most: int = 40) -> tuple[int, int]:
    """(n runs, c passed) with 1 ≤ n ≤ `most`."""
    n = draw(st.integers(1, most))
    return n, draw(st.integers(0, n))


@given(trials())
def test_pass_at_1_is_the_share(nc: tuple[int, int]) -> None:
    """Property: pass@1 = pass^1 = c/n."""
    n, c = nc
    assert pass_at_k(n, c, 1) == pytest.approx(c / n)
    assert pass_hat_k(n, c, 1) == pytest.approx(c / n)


@given(trials())
def test_pass_at_k_rises_and_pass_hat_k_falls_with_k(nc: tuple[int, int]) -> None:
    """Property: pass@k is non-decreasing and pass^k non-increasing in k, both in [0, 1], and
    pass^k ≤ pass@k."""
    n, c = nc
    at = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    hat = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    assert all(x <= y + 1e-12 for x, y in itertools.pairwise(at))
    assert all(x >= y - 1e-12 for x, y in itertools.pairwise(hat))
    assert all(0.0 <= h <= a + 1e-12 <= 1.0 + 1e-12 for a, h in zip(at, hat, strict=True))


@given(trials(most=9), st.data())
def test_pass_at_k_and_pass_hat_k_count_subsets(nc: tuple[int, int], data: st.DataObject) -> None:
    """Property: the estimators are the share of the k-subsets of the n runs in which at least
    one run (pass@k), or every run (pass^k), passed — their definition, counted by brute force."""
    n, c = nc
    k = data.draw(st.integers(1, n))
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(outcomes, k))
    assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))
    assert pass_hat_k(n, c, k) == pytest.approx(sum(all(s) for s in subsets) / len(subsets))


@given(st.lists(trials(most=12), min_size=1, max_size=20))
def test_means_over_tasks(counts: list[tuple[int, int]]) -> None:
    """Property: over tasks, pass@1 is the mean per-task share, which is the pooled share when
    every task has as many runs; the means keep the monotony in k."""
    shares = sum(c / n for n, c in counts) / len(counts)
    assert mean_pass_at_k(counts, 1) == pytest.approx(shares)
    if len({n for n, _ in counts}) == 1:
        pooled = sum(c for _, c in counts) / sum(n for n, _ in counts)
        assert mean_pass_at_k(counts, 1) == pytest.approx(pooled)
    top = min(n for n, _ in counts)
    at = [mean_pass_at_k(counts, k) for k in range(1, top + 1)]
    hat = [mean_pass_hat_k(counts, k) for k in range(1, top + 1)]
    assert all(x <= y + 1e-12 for x, y in itertools.pairwise(at))
    assert all(x >= y - 1e-12 for x, y in itertools.pairwise(hat))


def test_pass_at_k_rejects_impossible_counts() -> None:
    """k beyond the runs, or more passes than runs, is a programming error."""
    with pytest.raises(ValueError, match="k <= n"):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError, match="c <= n"):
        pass_hat_k(3, 4, 1)


# --------------------------------------------------------------------------- clustered interval


@given(st.lists(trials(most=10), min_size=2, max_size=30))
def test_clustered_interval_contains_the_pooled_share(counts: list[tuple[int, int]]) -> None:
    """Property: the clustered interval lies in [0, 1], contains the pooled share, and is never
    narrower than the Wilson interval that treats every run as independent."""
    bounds = clustered_wilson(counts)
    assert bounds is not None
    low, high = bounds
    passed = sum(c for _, c in counts)
    runs = sum(n for n, _ in counts)
    assert 0.0 <= low <= passed / runs <= high <= 1.0
    plain = wilson(passed, runs)
    assert plain is not None
    assert low <= plain[0] + 1e-9
    assert high >= plain[1] - 1e-9


def test_clustered_interval_widens_with_correlated_trials() -> None:
    """Tasks that are all-or-nothing carry the information of one run each: the interval is
    wider than for the same share spread within tasks."""
    correlated = clustered_wilson([(4, 4), (4, 0)] * 5)
    spread = clustered_wilson([(4, 2)] * 10)
    assert correlated is not None
    assert spread is not None
    assert correlated[1] - correlated[0] > spread[1] - spread[0]
    assert clustered_wilson([(3, 1)]) is None


# --------------------------------------------------------------------------- Holm


@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), max_size=30))
def test_holm_keeps_order_and_never_lowers(ps: list[float]) -> None:
    """Property: each Holm p-value is ≥ its raw p-value and ≤ 1; Holm keeps the order of the
    raw p-values; the smallest becomes m·p (capped at 1), as Bonferroni would."""
    adjusted = holm(ps)
    assert len(adjusted) == len(ps)
    for p, q in zip(ps, adjusted, strict=True):
        assert p <= q <= 1.0
    for i, j in itertools.product(range(len(ps)), repeat=2):
        if ps[i] < ps[j]:
            assert adjusted[i] <= adjusted[j]
    if ps:
        smallest = min(range(len(ps)), key=lambda i: ps[i])
        assert adjusted[smallest] == pytest.approx(min(1.0, len(ps) * ps[smallest]))
