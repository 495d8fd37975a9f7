"""Rules of the report aggregation (`ssegrade.report`, SPEC §11): properties and examples."""

from __future__ import annotations

import dataclasses
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ssegrade.report import (
    CHECKS,
    Report,
    RunFolder,
    RunRecord,
    RunsMode,
    Share,
    aggregate,
    compare,
    find_row,
    parse_run,
    poc_passed,
)
from ssegrade.result import PatchResult, status_of
from ssegrade.task import Check

# --------------------------------------------------------------------------- strategies

TASKS: dict[str, tuple[frozenset[Check], int]] = {
    # task: (the checks its config gives, number of PoCs)
    "t-all": (frozenset(CHECKS), 2),
    "t-nointent": (frozenset({"build", "poc", "function_test"}), 1),
    "t-nobuild": (frozenset({"poc", "function_test", "intent_test"}), 3),
    "t-tests": (frozenset({"function_test"}), 0),
}
MODELS = ("m1", "org/m2")
AGENTS = ("a1", "a2")
BASE = datetime(2025, 1, 1, tzinfo=UTC)
MODES: tuple[RunsMode, ...] = ("latest", "all")


@st.composite
def patches(draw: st.DrawFn, task: str, *, error: bool | None = None) -> PatchResult:
    """A patch result consistent with the task's checks (fields of absent checks stay null)."""
    has, pocs = TASKS[task]

    def maybe_bool(check: Check) -> bool | None:
        return draw(st.none() | st.booleans()) if check in has else None

    build = maybe_bool("build")
    total = passed = None
    if "poc" in has and draw(st.booleans()):
        total = pocs
        passed = draw(st.integers(0, pocs))
    func = maybe_bool("function_test")
    intent = maybe_bool("intent_test")
    unfinished = draw(st.booleans()) if error is None else error
    status = status_of(
        build_success=build,
        pov_passed=passed,
        pov_total=total,
        func_test_success=func,
        intent_test_success=intent,
        unfinished=unfinished,
    )
    message = draw(st.sampled_from(["Timeout (3600s)", "Exception: boom", None]))
    return PatchResult(
        status=status,
        build_success=build,
        pov_passed=passed,
        pov_total=total,
        func_test_success=func,
        intent_test_success=intent,
        error_msg=message if status == "error" else None,
    )


@st.composite
def records(
    draw: st.DrawFn,
    *,
    config: bool | None = True,
    reference: bool | None = None,
    error: bool | None = None,
) -> RunRecord:
    """One run record. `config`: True = carries its task's checks, None = either way."""
    task = draw(st.sampled_from(sorted(TASKS)))
    known = draw(st.booleans()) if config is None else config
    when = draw(st.none() | st.integers(0, 5).map(lambda d: BASE + timedelta(days=d)))
    return RunRecord(
        task=task,
        model=draw(st.sampled_from(MODELS)),
        agent=draw(st.sampled_from(AGENTS)),
        run_id=f"r{draw(st.integers(0, 12))}",
        patch=draw(patches(task, error=error)),
        started_at=when,
        reference=draw(st.booleans()) if reference is None else reference,
        spend=draw(st.none() | st.floats(0, 50, allow_nan=False)),
        agent_seconds=draw(st.none() | st.integers(0, 7200).map(float)),
        checks=TASKS[task][0] if known else None,
    )


def run_lists(config: bool | None = True) -> st.SearchStrategy[list[RunRecord]]:
    """Lists of records with distinct (task, model, agent, run id)."""
    return st.lists(
        records(config=config),
        max_size=40,
        unique_by=lambda r: (r.task, r.model, r.agent, r.run_id),
    )


def shares(report: Report) -> list[Share]:
    """Every share the report holds, rows and per-task rows."""
    keys = ("build", "poc", "func", "intent", "passed")
    return [getattr(row, key) for row in (*report.rows, *report.by_task) for key in keys]


def newest_first_key(rec: RunRecord) -> tuple[bool, datetime, str]:
    """The selection order, spelled independently of the code under test."""
    return (rec.started_at is not None, rec.started_at or BASE, rec.run_id)


def graded(recs: list[RunRecord]) -> list[RunRecord]:
    """The records that take part in the shares."""
    return [r for r in recs if not r.reference and r.patch.status != "error"]


# --------------------------------------------------------------------------- properties


@given(run_lists(config=None), st.sampled_from(MODES))
def test_shares_lie_in_unit_interval(recs: list[RunRecord], mode: RunsMode) -> None:
    """Property: every share lies in [0, 1], `passed` ≤ `of`, and `share` is null exactly when
    `of` is 0."""
    for share in shares(aggregate(recs, mode)):
        assert 0 <= share.passed <= share.of
        if share.of == 0:
            assert share.share is None
            assert share.low is None
        else:
            assert share.share is not None
            assert 0.0 <= share.share <= 1.0
            assert share.share == share.passed / share.of


@given(run_lists(config=None), st.sampled_from(MODES))
def test_intervals_contain_the_share(recs: list[RunRecord], mode: RunsMode) -> None:
    """Property: every Wilson interval contains its share and lies within [0, 1]."""
    for share in shares(aggregate(recs, mode)):
        if share.share is not None:
            assert share.low is not None
            assert share.high is not None
            assert 0.0 <= share.low <= share.share <= share.high <= 1.0


@given(run_lists(config=None), st.sampled_from(MODES), st.randoms(use_true_random=False))
def test_a_run_is_never_counted_twice(
    recs: list[RunRecord], mode: RunsMode, rnd: random.Random
) -> None:
    """Property: a run never counts twice: reading some runs twice (in any order) changes
    nothing, each kept run appears once in the per-task table, no run is both kept and left out,
    and the row run counts add up to the per-task table."""
    doubled = recs + rnd.sample(recs, k=len(recs) // 2)
    rnd.shuffle(doubled)
    once = aggregate(recs, mode)
    assert aggregate(doubled, mode) == once
    kept = [(t.task, t.model, t.agent, t.run_id) for t in once.tasks]
    left = [(x.task, x.model, x.agent, x.run_id) for x in once.excluded]
    assert len(kept) == len(set(kept))
    assert not set(kept) & set(left)
    assert sum(row.runs for row in once.rows) == len(kept)
    assert sum(task.runs for task in once.by_task) == len(kept)
    if mode == "all":
        assert len(kept) == len(graded(recs))
        assert len(kept) + len(left) == len(recs)


@given(run_lists(config=None), st.randoms(use_true_random=False))
def test_input_order_does_not_matter(recs: list[RunRecord], rnd: random.Random) -> None:
    """Property: the report does not depend on the order the runs were read in."""
    shuffled = list(recs)
    rnd.shuffle(shuffled)
    for mode in MODES:
        assert aggregate(shuffled, mode) == aggregate(recs, mode)


@given(run_lists(config=None))
def test_latest_keeps_the_newest_run_of_each_group(recs: list[RunRecord]) -> None:
    """Property: `latest` keeps exactly one run per (task, model, agent) that has a graded run,
    and it is the newest by (started_at, run id), a missing time being the oldest."""
    groups: dict[tuple[str, str, str], list[RunRecord]] = defaultdict(list)
    for rec in graded(recs):
        groups[(rec.task, rec.model, rec.agent)].append(rec)
    kept = aggregate(recs, "latest").tasks
    assert sorted((t.task, t.model, t.agent) for t in kept) == sorted(groups)
    for run in kept:
        group = groups[(run.task, run.model, run.agent)]
        assert run.run_id == max(group, key=newest_first_key).run_id
        assert run.trial == len(group)


@given(run_lists(config=None))
def test_all_numbers_trials_in_order(recs: list[RunRecord]) -> None:
    """Property: `all` keeps every graded run, numbered 1…n per (task, model, agent) from the
    oldest to the newest."""
    by_id = {(r.task, r.model, r.agent, r.run_id): r for r in recs}
    trials: dict[tuple[str, str, str], list[tuple[int, RunRecord]]] = defaultdict(list)
    for run in aggregate(recs, "all").tasks:
        trials[(run.task, run.model, run.agent)].append(
            (run.trial, by_id[(run.task, run.model, run.agent, run.run_id)])
        )
    for numbered in trials.values():
        numbered.sort(key=lambda item: item[0])
        assert [n for n, _ in numbered] == list(range(1, len(numbered) + 1))
        runs = [rec for _, rec in numbered]
        assert runs == sorted(runs, key=newest_first_key)


@given(run_lists(), records(error=True, reference=False), st.sampled_from(MODES))
def test_an_error_run_changes_no_share(
    recs: list[RunRecord], extra: RunRecord, mode: RunsMode
) -> None:
    """Property: adding an `error` run changes no row, no share and no kept run; it is listed
    among the runs left out, with its error message."""
    assert extra.patch.status == "error"
    key = (extra.task, extra.model, extra.agent, extra.run_id)
    recs = [r for r in recs if (r.task, r.model, r.agent, r.run_id) != key]
    before = aggregate(recs, mode)
    after = aggregate([*recs, extra], mode)
    assert after.rows == before.rows
    assert after.by_task == before.by_task
    assert after.tasks == before.tasks
    listed = [x for x in after.excluded if (x.task, x.model, x.agent, x.run_id) == key]
    assert len(listed) == 1
    assert listed[0].error_msg == extra.patch.error_msg
    assert listed[0].why.startswith("error")


@given(run_lists(), records(reference=True), st.sampled_from(MODES))
def test_a_reference_run_changes_no_share(
    recs: list[RunRecord], extra: RunRecord, mode: RunsMode
) -> None:
    """Property: adding a reference run, whatever its status, changes no share; it is listed
    as a reference run."""
    key = (extra.task, extra.model, extra.agent, extra.run_id)
    recs = [r for r in recs if (r.task, r.model, r.agent, r.run_id) != key]
    before = aggregate(recs, mode)
    after = aggregate([*recs, extra], mode)
    assert (after.rows, after.by_task, after.tasks) == (before.rows, before.by_task, before.tasks)
    listed = [x.why for x in after.excluded if (x.task, x.model, x.agent, x.run_id) == key]
    assert listed == ["reference run"]


@given(run_lists(), st.sampled_from(MODES))
def test_denominator_is_the_runs_whose_task_has_the_check(
    recs: list[RunRecord], mode: RunsMode
) -> None:
    """Property: a check's share is over the kept runs whose task has that check, and a PoC
    check passes only when every PoC ran and passed (one that did not run is not passed)."""
    report = aggregate(recs, mode)
    by_id = {(r.task, r.model, r.agent, r.run_id): r for r in recs}
    for row in report.rows:
        kept = [
            by_id[(t.task, t.model, t.agent, t.run_id)]
            for t in report.tasks
            if (t.model, t.agent) == row.key
        ]
        for check, share in (
            ("build", row.build),
            ("poc", row.poc),
            ("function_test", row.func),
            ("intent_test", row.intent),
        ):
            having = [r for r in kept if check in TASKS[r.task][0]]
            assert share.of == len(having)
        pocs = [r for r in kept if "poc" in TASKS[r.task][0]]
        assert row.poc.passed == sum(
            r.patch.pov_total is not None and r.patch.pov_passed == r.patch.pov_total for r in pocs
        )
        assert row.passed.passed == sum(r.patch.status == "passed" for r in kept)


@given(run_lists(), st.sampled_from(MODES))
def test_comparison_counts_partition_shared_tasks(recs: list[RunRecord], mode: RunsMode) -> None:
    """Property: a paired comparison's four counts add up to the tasks both rows ran, swapping
    A and B swaps `only_a` and `only_b` and keeps the p-value, which lies in (0, 1]."""
    report = aggregate(recs, mode)
    for a in report.rows:
        for b in report.rows:
            ab = compare(report, a.key, b.key)
            ba = compare(report, b.key, a.key)
            assert ab.both + ab.only_a + ab.only_b + ab.neither == ab.tasks
            assert (ab.only_a, ab.only_b, ab.p_value) == (ba.only_b, ba.only_a, ba.p_value)
            assert 0.0 < ab.p_value <= 1.0
            if a.key == b.key:
                assert ab.only_a == ab.only_b == 0


# --------------------------------------------------------------------------- examples


def run(
    run_id: str,
    *,
    task: str = "t",
    model: str = "m",
    agent: str = "a",
    day: int | None = None,
    checks: frozenset[Check] | None = None,
    **fields: object,
) -> RunRecord:
    """A record with a status derived from the fields given."""
    patch = PatchResult.model_validate({"status": "error", **fields})
    status = patch.status if "status" in fields else None
    if status is None:
        status = status_of(
            build_success=patch.build_success,
            pov_passed=patch.pov_passed,
            pov_total=patch.pov_total,
            func_test_success=patch.func_test_success,
            intent_test_success=patch.intent_test_success,
        )
    return RunRecord(
        task=task,
        model=model,
        agent=agent,
        run_id=run_id,
        patch=patch.model_copy(update={"status": status}),
        started_at=None if day is None else BASE + timedelta(days=day),
        checks=checks,
    )


def test_missing_time_counts_as_oldest() -> None:
    """A run with a start time beats one without, whatever the run ids say."""
    report = aggregate([run("zzz", build_success=False), run("aaa", day=0, build_success=True)])
    assert [t.run_id for t in report.tasks] == ["aaa"]


def test_equal_times_are_broken_by_run_id() -> None:
    """Same start time: the larger run id is the newer."""
    report = aggregate([run("r2", day=1, build_success=True), run("r1", day=1, build_success=True)])
    assert [(t.run_id, t.trial) for t in report.tasks] == [("r2", 2)]


def test_naive_and_aware_times_mix() -> None:
    """A time without a zone reads as UTC and compares with zoned times."""
    naive = RunRecord(
        "t", "m", "a", "r-naive", run("x", build_success=True).patch, datetime(2025, 1, 3)
    )
    aware = run("r-aware", day=1, build_success=True)
    assert [t.run_id for t in aggregate([naive, aware]).tasks] == ["r-naive"]


def test_unrun_poc_counts_as_not_passed_when_another_run_shows_the_task_has_pocs() -> None:
    """Without a config, a reference run that ran the PoCs shows the task has them: the agent's
    run that stopped at the build counts as not passing the PoCs."""
    ref = run("ref", model="ref", agent="ref", build_success=True, pov_passed=1, pov_total=1)
    ref = dataclasses.replace(ref, reference=True)
    agent = run("r1", build_success=False)
    row = aggregate([ref, agent]).rows[0]
    assert (row.build.passed, row.build.of) == (0, 1)
    assert (row.poc.passed, row.poc.of) == (0, 1)
    assert row.func.of == 0


def test_config_decides_which_checks_a_task_has() -> None:
    """With a config, a check the config names is counted even if no run ran it."""
    has: frozenset[Check] = frozenset(CHECKS)
    row = aggregate([run("r1", checks=has, build_success=False)]).rows[0]
    assert [s.of for s in (row.build, row.poc, row.func, row.intent)] == [1, 1, 1, 1]
    assert row.passed.passed == 0


def test_means_skip_unknown_values() -> None:
    """Mean spend and minutes are over the runs that report them; null when none does."""
    a = RunRecord("t1", "m", "a", "r", run("x", build_success=True).patch, spend=1.0)
    b = RunRecord("t2", "m", "a", "r", a.patch, spend=3.0, agent_seconds=600.0)
    row = aggregate([a, b]).rows[0]
    assert (row.spend, row.minutes) == (2.0, 10.0)
    assert aggregate([run("r", build_success=True)]).rows[0].spend is None


def test_mean_spend_does_not_depend_on_order() -> None:
    """Float sums depend on their order ((0.1 + 0.2) + 0.3 != (0.3 + 0.2) + 0.1); the means
    must not."""
    patch = run("x", build_success=True).patch
    recs = [
        RunRecord(f"t{i}", "m", "a", "r", patch, spend=cost)
        for i, cost in enumerate((0.1, 0.2, 0.3))
    ]
    assert aggregate(recs).rows[0].spend == aggregate(recs[::-1]).rows[0].spend


def test_report_json_keys_follow_the_spec() -> None:
    """The report model dumps with the keys of SPEC §11 (more keys are allowed)."""
    doc = aggregate(
        [
            run(
                "r",
                checks=frozenset({"build", "poc"}),
                build_success=True,
                pov_passed=1,
                pov_total=2,
            )
        ]
    ).model_dump(mode="json")
    assert list(doc)[:4] == ["runs", "rows", "excluded", "tasks"]
    row = doc["rows"][0]
    assert list(row)[:9] == [
        "model",
        "agent",
        "runs",
        "spend",
        "minutes",
        "build",
        "poc",
        "func",
        "intent",
    ]
    assert list(row["build"]) == ["passed", "of", "share", "low", "high"]
    assert list(doc["tasks"][0])[:9] == [
        "model",
        "agent",
        "task",
        "trial",
        "status",
        "build",
        "poc",
        "func",
        "intent",
    ]
    assert doc["tasks"][0]["poc"] == "1/2"
    assert doc["rows"][0]["poc"]["passed"] == 0


def test_compare_uses_majority_of_trials() -> None:
    """With several trials, a row passes a task when more than half of its runs passed."""
    runs = [
        run("1", agent="a", task="t1", day=1, build_success=True),
        run("2", agent="a", task="t1", day=2, build_success=True),
        run("3", agent="a", task="t1", day=3, build_success=False),
        run("1", agent="b", task="t1", day=1, build_success=True),
        run("2", agent="b", task="t1", day=2, build_success=False),
    ]
    c = compare(aggregate(runs, "all"), ("m", "a"), ("m", "b"))
    assert (c.tasks, c.only_a, c.only_b, c.p_value) == (1, 1, 0, 1.0)
    assert "McNemar" in c.test


def test_find_row_names_the_rows() -> None:
    """An unknown `model/agent` is an error listing the rows; a model with `/` is found."""
    report = aggregate([run("r", model="org/m", agent="a", build_success=True)])
    assert find_row(report, "org/m/a").unwrap() == ("org/m", "a")
    assert find_row(report, "m/a").failure().message == "no row 'm/a' (rows are org/m/a)"


FOLDER = RunFolder("task-from-folder", "model/from/folder", "agent-from-folder", "run-9")


def test_parse_summary_prefers_its_own_names() -> None:
    """summary.json names the task, model and agent; the run id is the folder's."""
    doc = (
        b'{"task": {"id": "t1", "scripts": {"build": "b.sh", "run": "r.sh"},'
        b' "files": {"poc": ["p"]}, "language": "go"},'
        b' "run": {"agent": "codex", "model": "openai/gpt-5", "reference_run": false},'
        b' "patch_result": {"status": "failed", "build_success": true, "pov_passed": 0,'
        b' "pov_total": 1, "error_log": "long"}, "runtime_result": {"agent_duration": 90},'
        b' "spend": 0.5, "started_at": "2025-06-01T10:00:00", "unknown": [1]}'
    )
    rec = parse_run(doc, FOLDER).unwrap()
    assert (rec.task, rec.model, rec.agent, rec.run_id) == ("t1", "openai/gpt-5", "codex", "run-9")
    assert rec.checks is not None
    assert sorted(rec.checks) == ["build", "poc"]
    assert rec.started_at == datetime(2025, 6, 1, 10, tzinfo=UTC)
    assert (rec.spend, rec.agent_seconds, rec.reference) == (0.5, 90, False)
    assert not poc_passed(rec.patch)


def test_parse_bare_result_uses_folder_names_and_derives_status() -> None:
    """A result.json: names from the folder, status derived, the `config` key read as the task
    config."""
    doc = b'{"patch_result": {"build_success": true, "pov_passed": 1, "pov_total": 1},'
    doc += b' "config": {"id": "cfg-id", "scripts": {"test": "t.sh"}}}'
    rec = parse_run(doc, FOLDER).unwrap()
    assert (rec.task, rec.model, rec.agent) == ("cfg-id", "model/from/folder", "agent-from-folder")
    assert rec.patch.status == "passed"
    assert rec.checks is not None
    assert sorted(rec.checks) == ["function_test"]
    bare = parse_run(b'{"patch_result": {"error_msg": "Timeout (60s)"}}', FOLDER).unwrap()
    assert (bare.task, bare.patch.status, bare.agent_seconds) == (FOLDER.task, "error", None)


def test_parse_top_level_run_keys_and_reference() -> None:
    """`agent`, `model` and `reference_run` may also sit at the top level."""
    doc = (
        b'{"agent": "x", "model": "y", "reference_run": true, "patch_result": {"status": "passed",'
    )
    doc += b' "build_success": true}}'
    rec = parse_run(doc, FOLDER).unwrap()
    assert (rec.model, rec.agent, rec.reference) == ("y", "x", True)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (b"{", "Invalid JSON"),
        (b"[]", "Input should be an object"),
        (b"{}", "patch_result: Field required"),
        (b'{"patch_result": {"status": "great"}}', "patch_result.status"),
        (b'{"patch_result": {"status": "passed"}, "spend": "lots"}', "spend"),
        (b'{"patch_result": {"pov_total": "x"}}', "pov_total"),
    ],
)
def test_parse_rejects_bad_documents_with_one_line(doc: bytes, message: str) -> None:
    """A bad document is a one-line error naming the key."""
    error = parse_run(doc, FOLDER).failure().message
    assert message in error
    assert "\n" not in error
