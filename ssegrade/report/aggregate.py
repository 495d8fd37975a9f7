"""Aggregation: from the selected runs to pass shares per (model, agent) and per task.

Pure core. `summarize` turns a `Selection` into the `Report`; `aggregate` is the one-call form
over any iterable of run records. The rules of the shares (SPEC §11):

- a check's share is taken over the kept runs whose task has that check (the denominator
  rule); a check the task has that did not run counts as not passed;
- a PoC check passes when every PoC ran and passed;
- the pass share counts the runs whose status is `passed`;
- rows are sorted by pass share.

Under SSEBench's rules (`--rules ssebench`, `ssegrade.report.rules`) every share is over all the
kept runs of its row, a PoC check passes when `pov_passed` equals `pov_total`, and rows come in
the order SSEBench's report gives them.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence

from ssegrade.checks import grading_order
from ssegrade.report.guard import flagged_why, row_guard
from ssegrade.report.model import (
    Excluded,
    Interval,
    Report,
    Row,
    RowKey,
    RunsMode,
    Share,
    TaskRow,
    TaskRun,
)
from ssegrade.report.rules import Rules, counted, is_error
from ssegrade.report.select import Selection, Selector
from ssegrade.report.stats import clustered_wilson, mean_pass_at_k, mean_pass_hat_k
from ssegrade.report.summary import RunRecord
from ssegrade.task import Check

__all__ = ["aggregate", "summarize"]


def aggregate(
    records: Iterable[RunRecord],
    runs: RunsMode = "latest",
    errors_as_failures: bool = False,
    rules: Rules = "ssegrade",
) -> Report:
    """The report of the given runs (SPEC §11); see `ssegrade.report.select` for the rules.

    A run appears once whatever the input: records with the same (task, model, agent, run id)
    after the first are ignored. Rows are sorted by pass share (highest first), then (model,
    agent); tasks by (task, model, agent, trial); excluded runs by (task, model, agent, run id).

    >>> from datetime import UTC, datetime
    >>> from ssegrade.result import PatchResult
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


def _mean(values: Iterable[float | None]) -> float | None:
    """The mean of the known values; `fsum` is exact, so the input order cannot change it."""
    known = [v for v in values if v is not None]
    return math.fsum(known) / len(known) if known else None


def _shares(
    kept: Sequence[RunRecord], has: dict[str, frozenset[Check]], rules: Rules
) -> tuple[Share, Share, Share, Share, Share]:
    """(build, poc, func, intent, passed) over `kept`, each check as `rules` counts it."""
    order = grading_order()
    counts = {check.name: [0, 0] for check in order}
    passed = 0
    for rec in kept:
        passed += rec.patch.status == "passed"
        task_has = has[rec.task]
        for check in order:
            within, ok = counted(rec, check, task_has, rules)
            if within:
                tally = counts[check.name]
                tally[1] += 1
                tally[0] += ok
    b, p, f, i = (Share.of_counts(*counts[check.name]) for check in order)
    return b, p, f, i, Share.of_counts(passed, len(kept))


def _row(
    key: RowKey, kept: Sequence[RunRecord], has: dict[str, frozenset[Check]], rules: Rules
) -> Row:
    build, poc, func, intent, passed = _shares(kept, has, rules)
    per_task: dict[str, list[int]] = {}
    for rec in kept:
        tally = per_task.setdefault(rec.task, [0, 0])
        tally[0] += 1
        tally[1] += rec.patch.status == "passed"
    counts = [(n, c) for n, c in per_task.values()]
    trials = min(n for n, _ in counts)
    repeated = any(n > 1 for n, _ in counts)
    bounds = clustered_wilson(counts) if repeated else None
    spend = [r.spend for r in kept if r.spend is not None]
    guard = row_guard(kept)
    return Row(
        model=key[0],
        agent=key[1],
        runs=len(kept),
        spend=_mean(spend),
        minutes=_mean(None if r.agent_seconds is None else r.agent_seconds / 60 for r in kept),
        build=build,
        poc=poc,
        func=func,
        intent=intent,
        passed=passed,
        tasks=len(counts),
        trials=trials,
        cost_per_pass=math.fsum(spend) / passed.passed if spend and passed.passed else None,
        pass_at_k={k: mean_pass_at_k(counts, k) for k in range(1, trials + 1)},
        pass_hat_k={k: mean_pass_hat_k(counts, k) for k in range(1, trials + 1)},
        clustered=None if bounds is None else Interval(low=bounds[0], high=bounds[1]),
        unflagged=guard.unflagged,
        flagged=guard.flagged,
        unguarded=guard.unguarded,
    )


def _minutes(rec: RunRecord) -> float | None:
    return None if rec.agent_seconds is None else rec.agent_seconds / 60


def _poc(rec: RunRecord) -> str | None:
    patch = rec.patch
    return None if patch.pov_total is None else f"{patch.pov_passed or 0}/{patch.pov_total}"


def _task_run(trial: int, rec: RunRecord, has: frozenset[Check]) -> TaskRun:
    patch = rec.patch
    return TaskRun(
        model=rec.model,
        agent=rec.agent,
        task=rec.task,
        trial=trial,
        status="failed" if patch.status == "error" else patch.status,
        build=patch.build_success,
        poc=_poc(rec),
        func=patch.func_test_success,
        intent=patch.intent_test_success,
        run_id=rec.run_id,
        checks=tuple(check.name for check in grading_order() if check.name in has),
        folder=rec.folder,
        spend=rec.spend,
        minutes=_minutes(rec),
        started_at=rec.started_at,
        cached_from=rec.cached_from,
        error_msg=patch.error_msg,
        flags=rec.flags,
    )


def _excluded(rec: RunRecord, selection: Selection) -> Excluded:
    patch = rec.patch
    if rec.reference:
        why = "reference run"
    elif selection.errors_as_failures or not is_error(rec, selection.rules):
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
    )


def _row_order(selection: Selection) -> Callable[[Row], tuple[object, ...]]:
    """ssegrade's rows by pass share (highest first), then (model, agent); SSEBench's by the
    order in which models, then agents, first appear among the kept runs sorted by (task,
    model, agent), as its report lists them."""
    if selection.rules != "ssebench":
        return lambda row: (-(row.passed.share or 0.0), row.model, row.agent)
    models: dict[str, int] = {}
    agents: dict[str, int] = {}
    for _, rec in sorted(selection.kept, key=lambda i: (i[1].task, i[1].model, i[1].agent)):
        models.setdefault(rec.model, len(models))
        agents.setdefault(rec.agent, len(agents))
    return lambda row: (models[row.model], agents[row.agent])


def summarize(selection: Selection) -> Report:
    """The report of a selection: rows, per-task rows, kept runs and excluded runs."""
    has = selection.checks
    rules = selection.rules
    by_row: dict[RowKey, list[RunRecord]] = defaultdict(list)
    by_task: dict[str, list[RunRecord]] = defaultdict(list)
    for _, rec in selection.kept:
        by_row[(rec.model, rec.agent)].append(rec)
        by_task[rec.task].append(rec)
    rows = sorted(
        (_row(key, recs, has, rules) for key, recs in by_row.items()),
        key=_row_order(selection),
    )
    task_rows = []
    for task, recs in sorted(by_task.items()):
        build, poc, func, intent, passed = _shares(recs, has, rules)
        task_rows.append(
            TaskRow(
                task=task,
                runs=len(recs),
                build=build,
                poc=poc,
                func=func,
                intent=intent,
                passed=passed,
            )
        )
    kept = sorted(selection.kept, key=lambda i: (i[1].task, i[1].model, i[1].agent, i[0]))
    excluded = sorted(selection.excluded, key=lambda r: (r.task, r.model, r.agent, r.run_id))
    return Report(
        runs=selection.runs,
        rows=tuple(rows),
        excluded=tuple(_excluded(r, selection) for r in excluded),
        tasks=tuple(_task_run(trial, rec, has[rec.task]) for trial, rec in kept),
        by_task=tuple(task_rows),
        set_aside=selection.set_aside,
        errors_as_failures=selection.errors_as_failures,
        rules=rules,
        containment=dict(
            sorted(
                Counter(
                    rec.containment if rec.containment in ("full", "weak") else "unknown"
                    for rec in (*(rec for _, rec in selection.kept), *selection.excluded)
                ).items()
            )
        ),
    )
