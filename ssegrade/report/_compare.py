"""Paired comparisons of (model, agent) rows on the tasks both ran: McNemar and Holm.

Pure core: on a whole `Report`, or on the `Outcomes` tallied while a report is folded task by
task (`ssegrade.report._aggregate.Fold`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from returns.result import Failure, Result, Success

from ssegrade.report._model import Comparison, Report, RowKey
from ssegrade.report._stats import holm, mcnemar_exact
from ssegrade.report._summary import ReadError

__all__ = ["Outcomes", "compare", "compare_all", "find_row", "outcomes_of"]


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


class Outcomes:
    """Which rows passed which tasks, tallied one task at a time in two bits per row and task
    (a report of 25,000 tasks keeps a few KiB per row), so that any two rows can be compared
    at the end. A row passes a task when more than half of its kept runs of it passed.

    >>> o = Outcomes()
    >>> o.add({("m", "a"): True, ("m", "b"): False})
    >>> o.add({("m", "a"): True})
    >>> c = o.compare(("m", "a"), ("m", "b"))
    >>> c.tasks, c.only_a, c.p_value
    (1, 1, 1.0)
    """

    __slots__ = ("_passed", "_ran", "_tasks")

    def __init__(self) -> None:
        self._ran: dict[RowKey, bytearray] = {}
        self._passed: dict[RowKey, bytearray] = {}
        self._tasks = 0

    def add(self, passed: Mapping[RowKey, bool]) -> None:
        """Add the next task: whether each row that ran it passed it."""
        index, bit = divmod(self._tasks, 8)
        self._tasks += 1
        for key, ok in passed.items():
            ran = self._ran.get(key)
            if ran is None:
                ran = self._ran[key] = bytearray()
                self._passed[key] = bytearray()
            if len(ran) <= index:
                grow = index + 1 - len(ran)
                ran.extend(bytes(grow))
                self._passed[key].extend(bytes(grow))
            ran[index] |= 1 << bit
            if ok:
                self._passed[key][index] |= 1 << bit

    def _bits(self, key: RowKey) -> tuple[int, int]:
        ran = self._ran.get(key, b"")
        return int.from_bytes(ran, "little"), int.from_bytes(self._passed.get(key, b""), "little")

    def compare(self, a: RowKey, b: RowKey) -> Comparison:
        """Rows `a` and `b` on the tasks both ran (exact McNemar test; alone, its Holm p-value
        is its p-value)."""
        ran_a, pass_a = self._bits(a)
        ran_b, pass_b = self._bits(b)
        shared = ran_a & ran_b
        both = (shared & pass_a & pass_b).bit_count()
        only_a = (shared & pass_a & ~pass_b).bit_count()
        only_b = (shared & pass_b & ~pass_a).bit_count()
        tasks = shared.bit_count()
        p = mcnemar_exact(only_a, only_b)
        return Comparison(
            a=f"{a[0]}/{a[1]}",
            b=f"{b[0]}/{b[1]}",
            tasks=tasks,
            both=both,
            only_a=only_a,
            only_b=only_b,
            neither=tasks - both - only_a - only_b,
            p_value=p,
            p_holm=p,
        )

    def compare_all(self, keys: Sequence[RowKey]) -> tuple[Comparison, ...]:
        """Every pair of `keys`, in their order (A before B), with Holm-adjusted p-values over
        the whole family of pairs."""
        pairs = [
            self.compare(keys[i], keys[j])
            for i in range(len(keys))
            for j in range(i + 1, len(keys))
        ]
        adjusted = holm([c.p_value for c in pairs])
        return tuple(
            c.model_copy(update={"p_holm": p}) for c, p in zip(pairs, adjusted, strict=True)
        )


def outcomes_of(report: Report) -> Outcomes:
    """The outcomes of a whole report's kept runs (`report.tasks`, in task order)."""
    tally: dict[str, dict[RowKey, list[int]]] = {}
    for run in report.tasks:
        counts = tally.setdefault(run.task, {}).setdefault((run.model, run.agent), [0, 0])
        counts[0] += run.status == "passed"
        counts[1] += 1
    outcomes = Outcomes()
    for rows in tally.values():
        outcomes.add({key: 2 * passed > total for key, (passed, total) in rows.items()})
    return outcomes


def compare(report: Report, a: RowKey, b: RowKey) -> Comparison:
    """Paired comparison of rows `a` and `b` on the tasks both ran, with the exact McNemar
    test; alone, its Holm-adjusted p-value is its p-value.

    >>> from ssegrade.report._model import TaskRun
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
    return outcomes_of(report).compare(a, b)


def compare_all(report: Report) -> tuple[Comparison, ...]:
    """Every pair of rows, in row order (A before B), with Holm-adjusted p-values over the
    whole family of pairs."""
    return outcomes_of(report).compare_all([row.key for row in report.rows])
