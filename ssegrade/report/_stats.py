"""Small statistics for the report: intervals, pass@k and pass^k, paired tests, Holm.

Pure core: plain arithmetic on counts, no I/O and no third-party numerics. The report uses
`wilson` for every share it prints, `clustered_wilson` for the pass share when a task has several
runs, `pass_at_k`/`pass_hat_k` over repeated trials, and `mcnemar_exact` with `holm` to compare
(model, agent) rows on the tasks both ran.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

__all__ = [
    "CLUSTERED_NAME",
    "INTERVAL_NAME",
    "TEST_NAME",
    "Z95",
    "clustered_wilson",
    "holm",
    "mcnemar_exact",
    "mean_pass_at_k",
    "mean_pass_hat_k",
    "pass_at_k",
    "pass_hat_k",
    "wilson",
    "wilson_of_share",
]

Z95 = 1.959963984540054
"""The two-sided 95 % quantile of the standard normal distribution."""

INTERVAL_NAME = "Wilson score interval, 95 %"
"""How the report names the interval it gives for every share."""

TEST_NAME = "exact McNemar test (two-sided binomial test on the discordant tasks)"
"""How the report names the test of a paired comparison."""

CLUSTERED_NAME = "task-clustered Wilson interval, 95 % (design effect from the clustered variance)"
"""How the report names the interval it gives the pass share when a task has several runs."""


def wilson(passed: int, of: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval for `passed` successes out of `of` trials; None when `of` is 0.

    With p = passed/of and n = of, the interval is
    (p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n), clipped to [0, 1] against rounding.
    Unlike the normal approximation it never leaves [0, 1] and stays useful at 0 % and 100 %.

    >>> low, high = wilson(12, 12)
    >>> round(low, 3), high
    (0.758, 1.0)
    >>> [round(x, 3) for x in wilson(4, 12)]
    [0.138, 0.609]
    >>> wilson(0, 0) is None
    True
    >>> wilson(3, 2)
    Traceback (most recent call last):
    ...
    ValueError: need 0 <= passed <= of, got 3 of 2
    """
    if not 0 <= passed <= of:
        raise ValueError(f"need 0 <= passed <= of, got {passed} of {of}")
    if of == 0:
        return None
    return wilson_of_share(passed / of, float(of), z)


def wilson_of_share(p: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a share `p` observed on a (possibly effective, non-integer)
    sample size `n` > 0; it always contains `p` and lies within [0, 1].

    >>> [round(x, 3) for x in wilson_of_share(0.5, 4.0)]
    [0.15, 0.85]
    """
    if not (0.0 <= p <= 1.0 and n > 0.0):
        raise ValueError(f"need 0 <= p <= 1 and n > 0, got p={p}, n={n}")
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denominator
    half = (z / denominator) * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    low = 0.0 if p == 0.0 else max(0.0, min(p, centre - half))
    high = 1.0 if p == 1.0 else min(1.0, max(p, centre + half))
    return low, high


def clustered_wilson(
    counts: Sequence[tuple[int, int]], z: float = Z95
) -> tuple[float, float] | None:
    """A 95 % interval for the pooled share Σc/Σn of runs grouped in tasks, `counts` holding
    (runs n, passed c) per task; None with fewer than two tasks.

    Runs of one task are not independent (an easy task is passed by every trial), so the
    binomial interval is too narrow. The clustered (sandwich) variance of the pooled share,
    v = T/(T−1) · Σ (c − p·n)² / N² over the T tasks (N runs), gives a design effect, hence an
    effective sample size n_eff = p(1−p)/v, at most N and at least 1 (T when p is 0 or 1); the
    interval is the Wilson interval on n_eff.

    >>> low, high = clustered_wilson([(3, 3), (3, 0), (3, 3), (3, 0)])
    >>> round(low, 3), round(high, 3)
    (0.125, 0.875)
    >>> clustered_wilson([(5, 2)]) is None
    True
    """
    tasks = len(counts)
    if tasks < 2:
        return None
    runs = sum(n for n, _ in counts)
    if runs == 0:
        return None
    p = sum(c for _, c in counts) / runs
    spread = math.fsum((c - p * n) ** 2 for n, c in counts)
    variance = tasks / (tasks - 1) * spread / (runs * runs)
    if p in (0.0, 1.0):
        effective = float(tasks)
    elif variance <= 0.0:
        effective = float(runs)
    else:
        effective = min(float(runs), max(1.0, p * (1.0 - p) / variance))
    return wilson_of_share(p, effective, z)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k (Chen et al., 2021) from `c` passing runs out of `n`:
    the chance that at least one of `k` runs drawn without replacement passes,
    1 − C(n−c, k)/C(n, k).

    >>> pass_at_k(10, 3, 1), round(pass_at_k(10, 3, 5), 4), pass_at_k(4, 2, 3)
    (0.3, 0.9167, 1.0)
    """
    _check_k(n, c, k)
    if n - c < k:
        return 1.0
    return float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass^k (Yao et al., 2024) from `c` passing runs out of `n`: the
    chance that all of `k` runs drawn without replacement pass, C(c, k)/C(n, k).

    >>> pass_hat_k(10, 3, 1), round(pass_hat_k(10, 3, 2), 4), pass_hat_k(4, 2, 3)
    (0.3, 0.0667, 0.0)
    """
    _check_k(n, c, k)
    return float(Fraction(math.comb(c, k), math.comb(n, k)))


def _check_k(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def mean_pass_at_k(counts: Sequence[tuple[int, int]], k: int) -> float:
    """pass@k over tasks: the mean of `pass_at_k` over the (n, c) of each task, every task
    weighing the same; every task needs at least `k` runs.

    >>> mean_pass_at_k([(2, 1), (2, 0)], 2)
    0.5
    """
    if not counts:
        raise ValueError("no tasks")
    return math.fsum(pass_at_k(n, c, k) for n, c in counts) / len(counts)


def mean_pass_hat_k(counts: Sequence[tuple[int, int]], k: int) -> float:
    """pass^k over tasks: the mean of `pass_hat_k` over the (n, c) of each task.

    >>> mean_pass_hat_k([(2, 2), (2, 1)], 2)
    0.5
    """
    if not counts:
        raise ValueError("no tasks")
    return math.fsum(pass_hat_k(n, c, k) for n, c in counts) / len(counts)


def holm(p_values: Sequence[float]) -> tuple[float, ...]:
    """Holm's step-down adjustment of a family of p-values, in the order given: the i-th
    smallest p becomes max over j ≤ i of min(1, (m − j + 1)·p₍ⱼ₎). It controls the chance of
    any false rejection in the family, without assuming the tests independent.

    >>> holm([0.01, 0.04, 0.03])
    (0.03, 0.06, 0.06)
    >>> holm([])
    ()
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return tuple(adjusted)


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts of a paired comparison.

    `only_a` counts the pairs where only A succeeded, `only_b` those where only B did. Under the
    null hypothesis each discordant pair is a fair coin toss, so with n = only_a + only_b and
    k = min(only_a, only_b) the p-value is min(1, 2 · Σ_{i≤k} C(n, i) / 2ⁿ), computed exactly
    with integers up to 1,024 discordant pairs, to double precision beyond. Concordant pairs
    carry no information and do not enter.

    >>> mcnemar_exact(0, 0)
    1.0
    >>> mcnemar_exact(5, 0)
    0.0625
    >>> mcnemar_exact(1, 9) == mcnemar_exact(9, 1) == 22 / 1024
    True
    >>> mcnemar_exact(-1, 2)
    Traceback (most recent call last):
    ...
    ValueError: counts must not be negative, got -1 and 2
    """
    if only_a < 0 or only_b < 0:
        raise ValueError(f"counts must not be negative, got {only_a} and {only_b}")
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    if n > _EXACT_UP_TO:
        return _binomial_tail_large(n, k)
    term = tail = 1  # C(n, 0); each next term from the last, so the sum costs k steps
    for i in range(1, k + 1):
        term = term * (n - i + 1) // i
        tail += term
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


_EXACT_UP_TO = 1024
"""Up to this many discordant pairs the McNemar p-value is summed in exact integers."""


def _binomial_tail_large(n: int, k: int) -> float:
    """2 · Σ_{i≤k} C(n, i) / 2ⁿ for large n, k ≤ n/2, to double precision: the largest term
    C(n, k) in logarithms, the others as ratios to it, summed until they no longer count
    (about √n terms), so thousands of tasks cost milliseconds.

    >>> exact = mcnemar_exact(500, 540)
    >>> abs(_binomial_tail_large(1040, 500) - exact) < 1e-12 * exact
    True
    """
    log_head = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
    log_head -= (n - 1) * math.log(2.0)
    ratio = total = 1.0
    for i in range(k, 0, -1):
        ratio *= i / (n - i + 1)
        total += ratio
        if ratio < total * 2.0**-60:
            break
    return min(1.0, math.exp(log_head + math.log(total)))
