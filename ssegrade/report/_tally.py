"""A (model, agent) row of the report, counted task by task without keeping its runs.

Pure core, under `ssegrade.report._aggregate`: a report over 100,000 runs must not hold them, so
each row keeps counts only. `RowTally.add` takes the row's kept runs of one task (every run of
that task at once); `RowTally.row` gives the `Row`, equal to what the whole list of runs would
give: the shares count runs as `ssegrade.report._rules.counted` says, the means of spend and
minutes are exact sums (`ExactSum`, rounded as `math.fsum` rounds), and pass@k, pass^k and the
clustered interval come from how many tasks had each (runs, passes) pair, each pair's
estimate computed once; the patch guard's columns are counted as they come
(`ssegrade.report._guard.GuardTally`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction

from ssegrade.batch._attempts import next_attempt
from ssegrade.internal.checks import grading_order
from ssegrade.internal.result import error_kind_of
from ssegrade.internal.task import Check
from ssegrade.report._guard import GuardTally
from ssegrade.report._model import ErrorCounts, Interval, Row, RowKey, Share
from ssegrade.report._rules import Rules, counted
from ssegrade.report._stats import clustered_wilson, pass_at_k, pass_hat_k
from ssegrade.report._summary import RunRecord

__all__ = ["CheckCounts", "ExactSum", "RowTally", "count_checks", "new_counts"]

CheckCounts = dict[str, list[int]]
"""Per share of a row, by its `Row` field (`build`, `poc`, `func`, `intent`, `passed`):
[passed, of]."""


def count_checks(
    kept: Iterable[RunRecord],
    has: frozenset[Check],
    rules: Rules,
    into: CheckCounts | None = None,
    also: CheckCounts | None = None,
) -> CheckCounts:
    """Add the runs of one task (whose checks are `has`) to the counts of every check and of
    the pass share, as `rules` count them: to `into` (new counts when not given), and to
    `also` too, if given."""
    order = grading_order()
    counts = into if into is not None else new_counts()
    targets = (counts,) if also is None else (counts, also)
    for rec in kept:
        passed = rec.patch.status == "passed"
        for target in targets:
            target["passed"][0] += passed
            target["passed"][1] += 1
        for check in order:
            within, ok = counted(rec, check, has, rules)
            if within:
                for target in targets:
                    tally = target[check.label]
                    tally[1] += 1
                    tally[0] += ok
    return counts


def new_counts() -> CheckCounts:
    """Counts of nothing yet."""
    return {key: [0, 0] for key in (*_LABELS, "passed")}


_LABELS = tuple(check.label for check in grading_order())


class ExactSum:
    """A sum of floats kept exact (as an integer count of 2⁻¹⁰⁷⁴, the smallest step of a
    double), so that adding values one at a time and dividing at the end gives the correctly
    rounded sum `math.fsum` gives.

    >>> s = ExactSum()
    >>> for x in (1e100, 1.0, -1e100, 0.1):
    ...     s.add(x)
    >>> import math
    >>> s.total() == math.fsum([1e100, 1.0, -1e100, 0.1]), s.count
    (True, 4)
    """

    __slots__ = ("_scaled", "count")

    def __init__(self) -> None:
        self._scaled = 0
        self.count = 0

    def add(self, value: float) -> None:
        """Add one finite value."""
        numerator, denominator = float(value).as_integer_ratio()
        self._scaled += numerator << (_SCALE - denominator.bit_length() + 1)
        self.count += 1

    def total(self) -> float:
        """The correctly rounded sum (integer division rounds correctly)."""
        return self._scaled / _ONE

    def mean(self) -> float | None:
        """The mean of the values added (their correctly rounded sum, divided); None when
        there is none."""
        return self.total() / self.count if self.count else None


_SCALE = 1074
_ONE = 1 << _SCALE


class RowTally:
    """What a `Row` needs, counted task by task (see the module's docstring)."""

    __slots__ = (
        "_checks",
        "_errors",
        "_guard",
        "_minutes",
        "_rules",
        "_spend",
        "_tasks",
        "runs",
    )

    def __init__(self, rules: Rules) -> None:
        self._rules: Rules = rules
        self._checks: CheckCounts | None = None
        self._spend = ExactSum()
        self._minutes = ExactSum()
        self._tasks: Counter[tuple[int, int]] = Counter()
        self._guard = GuardTally()
        self._errors: Counter[str] = Counter()
        self.runs = 0

    def add_error(self, rec: RunRecord) -> None:
        """Count one `error` run of the row, by its kind, and whether a resume grades it
        again (`ssegrade.batch.summary.next_attempt`, with its defaults)."""
        patch = rec.patch
        kind = error_kind_of("error", patch.error_msg, rec.error_kind) or "grader"
        self._errors[kind] += 1
        again = next_attempt(
            "error", rec.attempts, force=False, retry=True, max_attempts=2, kind=kind
        )
        self._errors["again"] += again is not None

    def add(
        self, kept: Sequence[RunRecord], has: frozenset[Check], task: CheckCounts | None = None
    ) -> int:
        """Add the row's kept runs of one task, whose checks are `has` (not again later), and
        count them in the task's counts `task` too, if given; return how many passed."""
        if not kept:
            return 0
        if self._checks is None:
            self._checks = new_counts()
        before = self._checks["passed"][0]
        count_checks(kept, has, self._rules, self._checks, task)
        passes = self._checks["passed"][0] - before
        for rec in kept:
            if rec.spend is not None:
                self._spend.add(rec.spend)
            if rec.agent_seconds is not None:
                self._minutes.add(rec.agent_seconds / 60)
        self._guard.add(kept)
        self.runs += len(kept)
        self._tasks[(len(kept), passes)] += 1
        return passes

    def row(self, key: RowKey) -> Row:
        """The row, once every task was added."""
        checks = self._checks or new_counts()
        shares = {name: Share.of_counts(*counts) for name, counts in checks.items()}
        pairs = self._tasks
        tasks = sum(pairs.values())
        trials = min((n for n, _ in pairs), default=0)
        bounds = None
        if any(n > 1 for n, _ in pairs):
            bounds = clustered_wilson([pair for pair, times in pairs.items() for _ in range(times)])
        spent = self._spend
        passes = shares["passed"].passed
        guard = self._guard.result()
        return Row(
            model=key[0],
            agent=key[1],
            runs=self.runs,
            spend=spent.mean(),
            minutes=self._minutes.mean(),
            build=shares["build"],
            poc=shares["poc"],
            func=shares["func"],
            intent=shares["intent"],
            passed=shares["passed"],
            tasks=tasks,
            trials=trials,
            cost_per_pass=spent.total() / passes if spent.count and passes else None,
            pass_at_k={k: _mean(pairs, tasks, pass_at_k, k) for k in range(1, trials + 1)},
            pass_hat_k={k: _mean(pairs, tasks, pass_hat_k, k) for k in range(1, trials + 1)},
            clustered=None if bounds is None else Interval(low=bounds[0], high=bounds[1]),
            unflagged=guard.unflagged,
            flagged=guard.flagged,
            unguarded=guard.unguarded,
            flagged_as_failed=guard.flagged_as_failed,
            errors=self._error_counts(),
            listed=guard.listed,
        )

    def _error_counts(self) -> ErrorCounts:
        errors = self._errors
        if not errors:
            return _NO_ERRORS
        total = sum(n for kind, n in errors.items() if kind != "again")
        return ErrorCounts(total=total, **errors)


_NO_ERRORS = ErrorCounts()


def _mean(
    pairs: Counter[tuple[int, int]],
    tasks: int,
    estimate: Callable[[int, int, int], float],
    k: int,
) -> float:
    """The mean over tasks of `estimate(n, c, k)`, each distinct (n, c) computed once: its
    exact sum, correctly rounded, over the number of tasks (what `math.fsum` over every
    task's value, divided, gives)."""
    total = sum(Fraction(estimate(n, c, k)) * times for (n, c), times in pairs.items())
    return float(total) / tasks
