"""The report folded one task at a time (`ssegrade.report.Fold`): the same report as the whole
selection at once, rows counted without their runs, comparisons from a few bits per task."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ssegrade.guard import KINDS
from ssegrade.internal.checks import grading_order
from ssegrade.internal.result import PatchResult
from ssegrade.report import (
    ErrorCounts,
    Fold,
    Interval,
    Outcomes,
    Row,
    RowKey,
    Rules,
    RunRecord,
    RunsMode,
    Selection,
    Selector,
    Share,
    aggregate,
    clustered_wilson,
    compare_all,
    exclude_flagged,
    mcnemar_exact,
    mean_pass_at_k,
    mean_pass_hat_k,
    parts_of,
    summarize,
)
from ssegrade.report._rules import counted, is_error
from ssegrade.report._tally import ExactSum
from tests.support.reportruns import MODES, TASKS, run_lists

RULES: tuple[Rules, ...] = ("ssegrade", "ssebench")


def selection(
    recs: list[RunRecord], mode: RunsMode, rules: Rules, errors: bool = False
) -> Selection:
    """The selection of `recs`, all at once."""
    selector = Selector(mode, errors, rules)
    for rec in recs:
        selector.add(rec)
    return selector.result()


def whole_row(key: RowKey, kept: list[RunRecord], rules: Rules) -> Row:
    """The row as counted over the whole list of its kept runs (the rules of SPEC §11 written
    out plainly, the oracle of the fold's counts)."""
    shares: dict[str, list[int]] = {"passed": [0, 0]}
    per_task: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for rec in kept:
        shares["passed"][0] += rec.patch.status == "passed"
        shares["passed"][1] += 1
        per_task[rec.task][0] += 1
        per_task[rec.task][1] += rec.patch.status == "passed"
        has = rec.checks if rec.checks is not None else TASKS[rec.task][0]
        for check in grading_order():
            within, ok = counted(rec, check, has, rules)
            tally = shares.setdefault(check.label, [0, 0])
            tally[1] += within
            tally[0] += within and ok
    counts = [(n, c) for n, c in per_task.values()]
    trials = min(n for n, _ in counts)
    bounds = clustered_wilson(counts) if any(n > 1 for n, _ in counts) else None
    spend = [r.spend for r in kept if r.spend is not None]
    minutes = [r.agent_seconds / 60 for r in kept if r.agent_seconds is not None]
    passes = shares["passed"][0]
    guarded = [r for r in kept if r.flags is not None]
    flagged: dict[str, int] = {}
    for kind in (*KINDS, *sorted({k for r in guarded for k in r.flags or ()} - set(KINDS))):
        n = sum(r.patch.status == "passed" and kind in (r.flags or ()) for r in guarded)
        if n:
            flagged[kind] = n
    clean = sum(r.patch.status == "passed" and r.flags == () for r in kept)
    unguarded_passes = sum(r.patch.status == "passed" and r.flags is None for r in kept)
    return Row(
        model=key[0],
        agent=key[1],
        runs=len(kept),
        spend=math.fsum(spend) / len(spend) if spend else None,
        minutes=math.fsum(minutes) / len(minutes) if minutes else None,
        build=Share.of_counts(*shares.get("build", [0, 0])),
        poc=Share.of_counts(*shares.get("poc", [0, 0])),
        func=Share.of_counts(*shares.get("func", [0, 0])),
        intent=Share.of_counts(*shares.get("intent", [0, 0])),
        passed=Share.of_counts(*shares["passed"]),
        tasks=len(counts),
        trials=trials,
        cost_per_pass=math.fsum(spend) / passes if spend and passes else None,
        pass_at_k={k: mean_pass_at_k(counts, k) for k in range(1, trials + 1)},
        pass_hat_k={k: mean_pass_hat_k(counts, k) for k in range(1, trials + 1)},
        clustered=None if bounds is None else Interval(low=bounds[0], high=bounds[1]),
        unflagged=Share.of_counts(clean, len(kept)) if guarded else None,
        flagged=flagged,
        unguarded=len(kept) - len(guarded),
        flagged_as_failed=Share.of_counts(clean + unguarded_passes, len(kept)) if guarded else None,
    )


@given(run_lists(), st.sampled_from(MODES), st.sampled_from(RULES), st.booleans())
def test_rows_equal_those_counted_over_every_run(
    recs: list[RunRecord], mode: RunsMode, rules: Rules, errors: bool
) -> None:
    """Property: each row the fold counts task by task is the row counted over the whole list
    of its kept runs: shares, exact means of spend and minutes, pass@k, pass^k, the clustered
    interval, the cost per pass and the patch guard's columns."""
    chosen = selection(recs, mode, rules, errors)
    report = aggregate(recs, mode, errors, rules)
    kept: dict[RowKey, list[RunRecord]] = defaultdict(list)
    for _, rec in chosen.kept:
        kept[(rec.model, rec.agent)].append(rec)
    assert {row.key for row in report.rows} == set(kept)
    for row in report.rows:
        runs = [rec for _, rec in chosen.kept] + [*chosen.excluded]
        counted_errors = whole_errors(row.key, runs, rules)
        whole = whole_row(row.key, kept[row.key], rules)
        assert row == whole.model_copy(update={"errors": counted_errors})


def whole_errors(key: RowKey, runs: list[RunRecord], rules: Rules) -> ErrorCounts:
    """A row's error runs, kept (as failed) or left out, counted by kind from their messages
    (the runs drawn here carry no kind): a time limit is `timeout`, an exception `grader`."""
    errors = [
        r for r in runs if (r.model, r.agent) == key and not r.reference and is_error(r, rules)
    ]
    timeouts = sum((r.patch.error_msg or "").startswith("Timeout (") for r in errors)
    grader = len(errors) - timeouts
    return ErrorCounts(total=len(errors), timeout=timeouts, grader=grader, again=grader)


@given(
    run_lists(config=None),
    st.sampled_from(MODES),
    st.sampled_from(RULES),
    st.booleans(),
    st.lists(st.sampled_from(KINDS), max_size=2, unique=True),
)
def test_task_by_task_gives_the_report_of_all_at_once(
    recs: list[RunRecord], mode: RunsMode, rules: Rules, errors: bool, kinds: list[str]
) -> None:
    """Property: selecting and folding each task's runs on their own (as the command streams
    them, `--exclude-flagged` taking its flagged runs out of each) gives the report of the
    whole selection: the same rows in the same order, the same parts, the same runs set aside,
    the same containment counts and the same comparisons."""
    whole = summarize(exclude_flagged(selection(recs, mode, rules, errors), kinds))
    fold = Fold(mode, errors, rules)
    parts = []
    for task in sorted({rec.task for rec in recs}):
        mine = [rec for rec in recs if rec.task == task]
        parts += fold.add(exclude_flagged(selection(mine, mode, rules, errors), kinds))
    streamed = fold.report()
    assert streamed.rows == whole.rows
    assert streamed.set_aside == whole.set_aside
    assert streamed.containment == whole.containment
    assert parts == parts_of(whole)
    keys = [row.key for row in whole.rows]
    assert fold.outcomes.compare_all(keys) == compare_all(whole)


@given(run_lists(config=None), st.sampled_from(MODES), st.sampled_from(RULES), st.booleans())
def test_containment_counts_each_run_considered_by_its_mode(
    recs: list[RunRecord], mode: RunsMode, rules: Rules, errors: bool
) -> None:
    """Property: the containment counts cover every run kept or left out (not those `latest`
    set aside), each by the mode it recorded, any other value or none as `unknown`; each run
    listed says its mode, so the per-run formats add up to the counts."""
    chosen = selection(recs, mode, rules, errors)
    considered = [rec for _, rec in chosen.kept] + list(chosen.excluded)
    expected: dict[str, int] = defaultdict(int)
    for rec in considered:
        expected[rec.containment if rec.containment in ("full", "weak") else "unknown"] += 1
    report = aggregate(recs, mode, errors, rules)
    assert report.containment == dict(sorted(expected.items()))
    assert list(report.containment) == sorted(report.containment)
    each = [run.containment for run in report.tasks] + [ex.containment for ex in report.excluded]
    assert Counter(each) == report.containment
    modes = {(r.task, r.model, r.agent, r.run_id): r.containment for r in considered}
    listed = [(r.task, r.model, r.agent, r.run_id, r.containment) for r in report.tasks]
    listed += [(r.task, r.model, r.agent, r.run_id, r.containment) for r in report.excluded]
    for task, model, agent, run_id, seen in listed:
        recorded = modes[(task, model, agent, run_id)]
        assert seen == (recorded if recorded in ("full", "weak") else "unknown")


@given(st.lists(st.floats(-1e300, 1e300, allow_nan=False), max_size=60))
def test_an_exact_sum_one_value_at_a_time_is_fsum(values: list[float]) -> None:
    """Property: adding values one at a time keeps the sum exact: the total is `math.fsum`'s,
    whatever the order."""
    forward, backward = ExactSum(), ExactSum()
    for value in values:
        forward.add(value)
    for value in reversed(values):
        backward.add(value)
    assert forward.total() == backward.total() == math.fsum(values)
    assert forward.count == len(values)


@given(
    st.lists(
        st.dictionaries(st.sampled_from(["a", "b", "c"]), st.booleans()),
        max_size=70,
    )
)
def test_outcomes_compare_as_the_tasks_both_rows_ran(tasks: list[dict[str, bool]]) -> None:
    """Property: the bits kept per row and task give, for any two rows, the counts of the
    tasks both ran (both, only A, only B, neither) and McNemar's p-value on them."""
    outcomes = Outcomes()
    for passed in tasks:
        outcomes.add({("m", agent): ok for agent, ok in passed.items()})
    for a, b in (("a", "b"), ("b", "c"), ("a", "c")):
        shared = [t for t in tasks if a in t and b in t]
        both = sum(t[a] and t[b] for t in shared)
        only_a = sum(t[a] and not t[b] for t in shared)
        only_b = sum(t[b] and not t[a] for t in shared)
        c = outcomes.compare(("m", a), ("m", b))
        assert (c.tasks, c.both, c.only_a, c.only_b) == (len(shared), both, only_a, only_b)
        assert c.neither == len(shared) - both - only_a - only_b
        assert c.p_value == mcnemar_exact(only_a, only_b)


def test_a_task_added_twice_or_out_of_order_is_refused() -> None:
    """Rows count each task once, whole: a task folded in again (or before one already
    folded in) would split its trials, so it is refused."""

    def run(task: str) -> RunRecord:
        return RunRecord(task, "m", "a", "r1", PatchResult(status="passed"))

    fold = Fold()
    fold.add(selection([run("t2")], "latest", "ssegrade"))
    for task in ("t2", "t1"):
        with pytest.raises(ValueError, match="add tasks in order"):
            fold.add(selection([run(task)], "latest", "ssegrade"))
