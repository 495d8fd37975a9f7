"""Aggregation: from the selected runs to pass shares per (model, agent) and per task.

Pure core. `Fold` makes the report one task at a time: each task's runs give a `TaskPart` (its
per-task row, its kept runs, its runs left out), final at once, while each (model, agent) row
is counted (`ssegrade.report._tally`) and which row passed which task kept in a few bits
(`ssegrade.report._compare.Outcomes`), so a report over 100,000 runs holds one task's runs at a
time. `summarize` folds a whole `Selection` into the `Report`; `aggregate` is the one-call form
over any iterable of run records. The rules of the shares (SPEC §11):

- a check's share is taken over the kept runs whose task has that check (the denominator
  rule); a check the task has that did not run counts as not passed;
- a PoC check passes when every PoC ran and passed;
- the pass share counts the runs whose status is `passed`;
- rows are sorted by pass share.

Under SSEBench's rules (`--rules ssebench`, `ssegrade.report._rules`) every share is over all the
kept runs of its row, a PoC check passes when `pov_total` is set and `pov_passed` equals it,
and rows come in the order SSEBench's report gives them.

Beside the shares, each row carries the patch guard's columns (`ssegrade.report._guard`), each
run its flags and containment mode, and the report how many runs (kept and left out) ran
their scripts in each mode (`full`, `weak`, `unknown`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from ssegrade.internal.checks import grading_order
from ssegrade.internal.result import error_kind_of
from ssegrade.internal.task import Check
from ssegrade.report._compare import Outcomes
from ssegrade.report._guard import flagged_why
from ssegrade.report._model import (
    Containment,
    Excluded,
    Report,
    Row,
    RowKey,
    RunsMode,
    Share,
    TaskRow,
    TaskRun,
)
from ssegrade.report._rules import Rules, is_error
from ssegrade.report._select import Selection, Selector
from ssegrade.report._summary import RunRecord
from ssegrade.report._tally import RowTally, new_counts

__all__ = ["Fold", "TaskPart", "aggregate", "parts_of", "summarize"]


def aggregate(
    records: Iterable[RunRecord],
    runs: RunsMode = "latest",
    errors_as_failures: bool = False,
    rules: Rules = "ssegrade",
) -> Report:
    """The report of the given runs (SPEC §11); see `ssegrade.report._select` for the rules.

    A run appears once whatever the input: records with the same (task, model, agent, run id)
    after the first are ignored. Rows are sorted by pass share (highest first), then (model,
    agent); tasks by (task, model, agent, trial); excluded runs by (task, model, agent, run id).

    >>> from datetime import UTC, datetime
    >>> from ssegrade.internal.result import PatchResult
    >>> def rec(run_id, status, when=None, **fields):
    ...     at = None if when is None else datetime(2025, 1, when, tzinfo=UTC)
    ...     grade = PatchResult(status=status, **fields)
    ...     return RunRecord("t", "m", "a", run_id, grade, started_at=at,
    ...                      checks=frozenset({"build", "poc"}))
    >>> runs = [rec("r1", "passed", 1, build_success=True, pov_passed=1, pov_total=1),
    ...         rec("r2", "failed", 2, build_success=False),
    ...         rec("r3", "error", 3, error_msg="Timeout (3600s)")]
    >>> latest = aggregate(runs)
    >>> latest.rows, latest.excluded[0].why, latest.set_aside
    ((), 'error: Timeout (3600s)', 2)
    >>> row = aggregate(runs, "all").rows[0]
    >>> row.build.share, row.pass_at_k, row.pass_hat_k
    (0.5, {1: 0.5, 2: 1.0}, {1: 0.5, 2: 0.0})
    >>> aggregate(runs, errors_as_failures=True).rows[0].passed.of
    1
    """
    selector = Selector(runs, errors_as_failures, rules)
    seen: set[tuple[str, str, str, str]] = set()
    for rec in records:
        key = (rec.task, rec.model, rec.agent, rec.run_id)
        if key not in seen:
            seen.add(key)
            selector.add(rec)
    return summarize(selector.result())


_SHARE_KEYS = ("build", "poc", "func", "intent", "passed")


def _minutes(rec: RunRecord) -> float | None:
    return None if rec.agent_seconds is None else rec.agent_seconds / 60


_MODES: dict[str | None, Containment] = {"full": "full", "container": "container", "weak": "weak"}
"""The containment modes a run may record; any other value (or none) is `unknown`."""


def _mode(rec: RunRecord) -> Containment:
    return _MODES.get(rec.containment, "unknown")


def _poc(rec: RunRecord) -> str | None:
    patch = rec.patch
    return None if patch.pov_total is None else f"{patch.pov_passed or 0}/{patch.pov_total}"


def _task_run(trial: int, rec: RunRecord, checks: tuple[Check, ...]) -> TaskRun:
    patch = rec.patch
    # The model's validator on a dict: half the cost of the keyword call, 100,000 times over.
    run: TaskRun = _NEW_TASK_RUN(
        {
            "model": rec.model,
            "agent": rec.agent,
            "task": rec.task,
            "trial": trial,
            "status": "failed" if patch.status == "error" else patch.status,
            "build": patch.build_success,
            "poc": _poc(rec),
            "func": patch.func_test_success,
            "intent": patch.intent_test_success,
            "run_id": rec.run_id,
            "checks": checks,
            "folder": rec.folder,
            "spend": rec.spend,
            "minutes": _minutes(rec),
            "started_at": rec.started_at,
            "cached_from": rec.cached_from,
            "error_msg": patch.error_msg,
            "flags": rec.flags,
            "containment": _mode(rec),
            "error_kind": error_kind_of(patch.status, patch.error_msg, rec.error_kind),
        }
    )
    return run


_NEW_TASK_RUN = TaskRun.__pydantic_validator__.validate_python


def _excluded(rec: RunRecord, errors_as_failures: bool, rules: Rules) -> Excluded:
    patch = rec.patch
    if rec.reference:
        why = "reference run"
    elif errors_as_failures or not is_error(rec, rules):
        why = flagged_why(rec.flags or ())  # the selection kept it: exclude_flagged took it out
    else:
        why = f"error: {patch.error_msg}" if patch.error_msg else "error"
    return Excluded(
        task=rec.task,
        model=rec.model,
        agent=rec.agent,
        run_id=rec.run_id,
        why=why,
        error_msg=patch.error_msg,
        status=patch.status,
        reference=rec.reference,
        build=patch.build_success,
        poc=_poc(rec),
        func=patch.func_test_success,
        intent=patch.intent_test_success,
        folder=rec.folder,
        spend=rec.spend,
        minutes=_minutes(rec),
        started_at=rec.started_at,
        flags=rec.flags,
        containment=_mode(rec),
        error_kind=error_kind_of(patch.status, patch.error_msg, rec.error_kind),
    )


@dataclass(frozen=True, slots=True)
class TaskPart:
    """One task's share of the report, final once every run of the task is known: its row in
    the per-task table (None when no run of it was kept), its kept runs by (model, agent,
    trial), and its runs left out of the shares by (model, agent, run id)."""

    task: str
    row: TaskRow | None
    runs: tuple[TaskRun, ...]
    excluded: tuple[Excluded, ...]


class Fold:
    """The report folded one task at a time: `add` a selection holding every run of its tasks
    (tasks after those already added), get each task's `TaskPart` at once, then `report` for
    the rows, sorted. Memory holds the rows' counts, not the runs."""

    __slots__ = (
        "_agents",
        "_containment",
        "_last",
        "_models",
        "_set_aside",
        "_tallies",
        "errors_as_failures",
        "outcomes",
        "rules",
        "runs",
    )

    def __init__(
        self, runs: RunsMode = "latest", errors_as_failures: bool = False, rules: Rules = "ssegrade"
    ) -> None:
        self.runs: RunsMode = runs
        self.errors_as_failures = errors_as_failures
        self.rules: Rules = rules
        self.outcomes = Outcomes()
        self._tallies: dict[RowKey, RowTally] = {}
        self._models: dict[str, int] = {}
        self._agents: dict[str, int] = {}
        self._set_aside = 0
        self._containment: Counter[str] = Counter()
        self._last: str | None = None

    def add(self, selection: Selection) -> list[TaskPart]:
        """Fold in a selection (made with this fold's options) holding every run of its
        tasks; one part per task, in task order. A task already folded in is refused."""
        self._set_aside += selection.set_aside
        runs: dict[str, tuple[list[tuple[int, RunRecord]], list[RunRecord]]] = {}
        for trial, rec in selection.kept:
            runs.setdefault(rec.task, ([], []))[0].append((trial, rec))
        for rec in selection.excluded:
            runs.setdefault(rec.task, ([], []))[1].append(rec)
        parts = []
        for task in sorted(runs):
            if self._last is not None and task <= self._last:
                raise ValueError(f"task {task!r} comes after {self._last!r}: add tasks in order")
            self._last = task
            kept, excluded = runs[task]
            parts.append(self._task(task, kept, excluded, selection.checks.get(task, frozenset())))
        return parts

    def _task(
        self,
        task: str,
        kept: list[tuple[int, RunRecord]],
        excluded: list[RunRecord],
        has: frozenset[Check],
    ) -> TaskPart:
        kept.sort(key=lambda i: (i[1].model, i[1].agent, i[0]))
        modes = self._containment
        for _, rec in kept:
            modes[_mode(rec)] += 1
        for rec in excluded:
            modes[_mode(rec)] += 1
        checks = tuple(check.name for check in grading_order() if check.name in has)
        excluded.sort(key=lambda r: (r.model, r.agent, r.run_id))
        by_row: dict[RowKey, list[RunRecord]] = {}
        for _, rec in kept:
            by_row.setdefault((rec.model, rec.agent), []).append(rec)
        passed: dict[RowKey, bool] = {}
        counts = new_counts()
        for key, recs in by_row.items():
            passed[key] = 2 * self._tally(key).add(recs, has, counts) > len(recs)
            self._models.setdefault(key[0], len(self._models))
            self._agents.setdefault(key[1], len(self._agents))
        # Every error run is counted beside its row's shares, kept (as failed) or not.
        for rec in (*(rec for _, rec in kept), *excluded):
            if not rec.reference and is_error(rec, self.rules):
                self._tally((rec.model, rec.agent)).add_error(rec)
        row = None
        if kept:
            self.outcomes.add(passed)
            build, poc, func, intent, share = (Share.of_counts(*counts[k]) for k in _SHARE_KEYS)
            row = TaskRow(
                task=task,
                runs=len(kept),
                build=build,
                poc=poc,
                func=func,
                intent=intent,
                passed=share,
            )
        return TaskPart(
            task=task,
            row=row,
            runs=tuple(_task_run(trial, rec, checks) for trial, rec in kept),
            excluded=tuple(_excluded(rec, self.errors_as_failures, self.rules) for rec in excluded),
        )

    def _tally(self, key: RowKey) -> RowTally:
        tally = self._tallies.get(key)
        if tally is None:
            tally = self._tallies[key] = RowTally(self.rules)
        return tally

    def _row_order(self, row: Row) -> tuple[object, ...]:
        """ssegrade's rows by pass share (highest first), then (model, agent); SSEBench's by
        the order in which models, then agents, first appear among the kept runs sorted by
        (task, model, agent), as its report lists them."""
        if self.rules == "ssebench":
            return (self._models[row.model], self._agents[row.agent])
        return (-(row.passed.share or 0.0), row.model, row.agent)

    def report(self) -> Report:
        """The report of every task added so far: its rows, sorted, and its counts; the
        per-task rows and the runs are in the parts `add` gave."""
        # A (model, agent) with error runs only has no row (its runs are listed as left out).
        made = (t.row(key) for key, t in self._tallies.items() if t.runs)
        rows = sorted(made, key=self._row_order)
        return Report(
            runs=self.runs,
            rows=tuple(rows),
            excluded=(),
            tasks=(),
            set_aside=self._set_aside,
            errors_as_failures=self.errors_as_failures,
            rules=self.rules,
            containment=dict(sorted(self._containment.items())),
        )


def summarize(selection: Selection) -> Report:
    """The report of a selection: rows, per-task rows, kept runs and excluded runs."""
    fold = Fold(selection.runs, selection.errors_as_failures, selection.rules)
    parts = fold.add(selection)
    return fold.report().model_copy(
        update={
            "tasks": tuple(run for part in parts for run in part.runs),
            "excluded": tuple(ex for part in parts for ex in part.excluded),
            "by_task": tuple(part.row for part in parts if part.row is not None),
        }
    )


def parts_of(report: Report) -> list[TaskPart]:
    """A whole report's per-task rows and runs as parts, in task order (what `Fold.add` gave
    for it)."""
    tasks = {row.task: row for row in report.by_task}
    runs: dict[str, list[TaskRun]] = {}
    for run in report.tasks:
        runs.setdefault(run.task, []).append(run)
    excluded: dict[str, list[Excluded]] = {}
    for ex in report.excluded:
        excluded.setdefault(ex.task, []).append(ex)
    return [
        TaskPart(
            task=task,
            row=tasks.get(task),
            runs=tuple(runs.get(task, ())),
            excluded=tuple(excluded.get(task, ())),
        )
        for task in sorted(tasks.keys() | runs.keys() | excluded.keys())
    ]
