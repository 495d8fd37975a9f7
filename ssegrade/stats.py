"""Small exact statistics for the report: the Wilson score interval and the exact McNemar test.

Pure core: plain arithmetic on counts, no I/O and no third-party numerics. The report uses
`wilson` for every share it prints and `mcnemar_exact` to compare two (model, agent) rows on the
tasks both ran.
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = [
    "INTERVAL_NAME",
    "TEST_NAME",
    "Z95",
    "mcnemar_exact",
    "wilson",
]

Z95 = 1.959963984540054
"""The two-sided 95 % quantile of the standard normal distribution."""

INTERVAL_NAME = "Wilson score interval, 95 %"
"""How the report names the interval it gives for every share."""

TEST_NAME = "exact McNemar test (two-sided binomial test on the discordant tasks)"
"""How the report names the test of a paired comparison."""


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
    n = float(of)
    p = passed / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denominator
    half = (z / denominator) * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    low = 0.0 if passed == 0 else max(0.0, min(p, centre - half))
    high = 1.0 if passed == of else min(1.0, max(p, centre + half))
    return low, high


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts of a paired comparison.

    `only_a` counts the pairs where only A succeeded, `only_b` those where only B did. Under the
    null hypothesis each discordant pair is a fair coin toss, so with n = only_a + only_b and
    k = min(only_a, only_b) the p-value is min(1, 2 · Σ_{i≤k} C(n, i) / 2ⁿ), computed exactly
    with integers. Concordant pairs carry no information and do not enter.

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
    tail = sum(math.comb(n, i) for i in range(k + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))
