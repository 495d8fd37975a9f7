"""Paired comparisons of (model, agent) rows on the tasks both ran: McNemar and Holm.

Pure core: works on a `Report` only.
"""

from __future__ import annotations

from returns.result import Failure, Result, Success

from ssegrade.report.model import Comparison, Report, RowKey
from ssegrade.report.stats import holm, mcnemar_exact
from ssegrade.report.summary import ReadError

__all__ = ["compare", "compare_all", "find_row"]


def find_row(report: Report, spec: str) -> Result[RowKey, ReadError]:
    """The row named `model/agent` (the model may itself contain `/`).

    >>> rep = Report(runs="latest", rows=(), excluded=(), tasks=())
    >>> find_row(rep, "m/a").failure().message
    "no row 'm/a' (the report has no rows)"
    """
    for row in report.rows:
        if row.label == spec:
            return Success(row.key)
    known = ", ".join(row.label for row in report.rows[:20])
    more = ", …" if len(report.rows) > 20 else ""
    hint = f"rows are {known}{more}" if known else "the report has no rows"
    return Failure(ReadError(f"no row '{spec}' ({hint})"))


def _outcomes(report: Report) -> dict[RowKey, dict[str, bool]]:
    tally: dict[RowKey, dict[str, list[int]]] = {}
    for run in report.tasks:
        counts = tally.setdefault((run.model, run.agent), {}).setdefault(run.task, [0, 0])
        counts[0] += run.status == "passed"
        counts[1] += 1
    return {
        key: {task: 2 * passed > total for task, (passed, total) in tasks.items()}
        for key, tasks in tally.items()
    }


def _compare(left: dict[str, bool], right: dict[str, bool], a: RowKey, b: RowKey) -> Comparison:
    shared = left.keys() & right.keys()
    both = sum(left[t] and right[t] for t in shared)
    only_a = sum(left[t] and not right[t] for t in shared)
    only_b = sum(right[t] and not left[t] for t in shared)
    p = mcnemar_exact(only_a, only_b)
    return Comparison(
        a=f"{a[0]}/{a[1]}",
        b=f"{b[0]}/{b[1]}",
        tasks=len(shared),
        both=both,
        only_a=only_a,
        only_b=only_b,
        neither=len(shared) - both - only_a - only_b,
        p_value=p,
        p_holm=p,
    )


def compare(report: Report, a: RowKey, b: RowKey) -> Comparison:
    """Paired comparison of rows `a` and `b` on the tasks both ran, with the exact McNemar
    test; alone, its Holm-adjusted p-value is its p-value.

    >>> from ssegrade.report.model import TaskRun
    >>> def run(agent, task, status):
    ...     return TaskRun(model="m", agent=agent, task=task, trial=1, status=status,
    ...                    build=None, poc=None, func=None, intent=None, run_id="r", checks=())
    >>> tasks = [run("a", f"t{i}", "passed") for i in range(6)]
    >>> tasks += [run("b", f"t{i}", "failed") for i in range(5)] + [run("b", "t5", "passed")]
    >>> tasks += [run("b", "t9", "passed")]
    >>> c = compare(Report(runs="latest", rows=(), excluded=(), tasks=tuple(tasks)),
    ...             ("m", "a"), ("m", "b"))
    >>> c.tasks, c.both, c.only_a, c.only_b, c.neither, c.p_value
    (6, 1, 5, 0, 0, 0.0625)
    """
    outcomes = _outcomes(report)
    return _compare(outcomes.get(a, {}), outcomes.get(b, {}), a, b)


def compare_all(report: Report) -> tuple[Comparison, ...]:
    """Every pair of rows, in row order (A before B), with Holm-adjusted p-values over the
    whole family of pairs."""
    outcomes = _outcomes(report)
    keys = [row.key for row in report.rows]
    pairs = [
        _compare(outcomes.get(keys[i], {}), outcomes.get(keys[j], {}), keys[i], keys[j])
        for i in range(len(keys))
        for j in range(i + 1, len(keys))
    ]
    adjusted = holm([c.p_value for c in pairs])
    return tuple(c.model_copy(update={"p_holm": p}) for c, p in zip(pairs, adjusted, strict=True))
