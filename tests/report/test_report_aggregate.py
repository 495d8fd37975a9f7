"""Rules of the report aggregation (`ssegrade.report`, SPEC §11): properties and examples."""

from __future__ import annotations

import itertools
import json
import random
import re
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ssegrade.internal.result import PatchResult, status_of
from ssegrade.internal.task import Check
from ssegrade.report import (
    ErrorCounts,
    Report,
    RunFolder,
    RunRecord,
    RunsMode,
    Share,
    aggregate,
    compare,
    compare_all,
    find_row,
    parse_run,
    poc_passed,
)
from ssegrade.testing.strategies import CHECKS
from tests.support.reportruns import BASE, MODES, TASKS, patches, records, run_lists


def shares(report: Report) -> list[Share]:
    """Every share the report holds, rows and per-task rows."""
    keys = ("build", "poc", "func", "intent", "passed")
    return [getattr(row, key) for row in (*report.rows, *report.by_task) for key in keys]


def natural(run_id: str) -> tuple[str, int, str]:
    """Run ids of the strategy are a prefix and a number: compare the number as a number."""
    match = re.fullmatch(r"(\D*)(\d+)", run_id)
    assert match is not None
    return (match[1], int(match[2]), run_id)


def newest_first_key(rec: RunRecord) -> tuple[bool, datetime, tuple[str, int, str]]:
    """The selection order, spelled independently of the code under test."""
    return (rec.started_at is not None, rec.started_at or BASE, natural(rec.run_id))


def graded(recs: list[RunRecord], errors_as_failures: bool = False) -> list[RunRecord]:
    """The records that take part in the shares."""
    return [
        r for r in recs if not r.reference and (errors_as_failures or r.patch.status != "error")
    ]


def groups_of(recs: list[RunRecord]) -> dict[tuple[str, str, str], list[RunRecord]]:
    """Every run of each (task, model, agent)."""
    groups: dict[tuple[str, str, str], list[RunRecord]] = defaultdict(list)
    for rec in recs:
        groups[(rec.task, rec.model, rec.agent)].append(rec)
    return groups


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
        assert once.set_aside == 0
    else:
        assert len(kept) + len(left) + once.set_aside == len(recs)


@given(run_lists(config=None), st.randoms(use_true_random=False))
def test_input_order_does_not_matter(recs: list[RunRecord], rnd: random.Random) -> None:
    """Property: the report does not depend on the order the runs were read in."""
    shuffled = list(recs)
    rnd.shuffle(shuffled)
    for mode in MODES:
        assert aggregate(shuffled, mode) == aggregate(recs, mode)


@given(run_lists(config=None), st.booleans())
def test_latest_picks_the_newest_of_all_runs_first(
    recs: list[RunRecord], errors_as_failures: bool
) -> None:
    """Property: `latest` picks the newest run of each (task, model, agent) among all its runs
    (by started_at, then run id compared naturally; no time = the oldest). When that run is
    graded it is kept, numbered as the last trial; when it is a reference run or an `error` run
    the group has no kept run and that run alone is listed as excluded."""
    report = aggregate(recs, "latest", errors_as_failures)
    kept = {(t.task, t.model, t.agent): t for t in report.tasks}
    left = {(x.task, x.model, x.agent): x for x in report.excluded}
    assert len(left) == len(report.excluded)
    for key, group in groups_of(recs).items():
        newest = max(group, key=newest_first_key)
        if graded([newest], errors_as_failures):
            assert key not in left
            assert kept[key].run_id == newest.run_id
            assert kept[key].trial == len(graded(group, errors_as_failures))
        else:
            assert key not in kept
            assert left[key].run_id == newest.run_id
    assert len(kept) + len(left) == len(groups_of(recs))


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


@given(run_lists(), records(error=True, reference=False))
def test_an_error_run_changes_no_share_under_all(recs: list[RunRecord], extra: RunRecord) -> None:
    """Property: under `all`, adding an `error` run changes no share and no kept run; its
    row (if it has one) counts it in its own column, by kind; it is listed among the runs
    left out, with its error message."""
    assert extra.patch.status == "error"
    key = (extra.task, extra.model, extra.agent, extra.run_id)
    recs = [r for r in recs if (r.task, r.model, r.agent, r.run_id) != key]
    before = aggregate(recs, "all")
    after = aggregate([*recs, extra], "all")
    assert (after.by_task, after.tasks) == (before.by_task, before.tasks)
    kind = "timeout" if (extra.patch.error_msg or "").startswith("Timeout (") else "grader"
    for old, new in zip(before.rows, after.rows, strict=True):
        errors = old.errors.model_dump()
        if new.key == (extra.model, extra.agent):
            errors = {**errors, "total": errors["total"] + 1, kind: errors[kind] + 1}
            errors["again"] += kind == "grader"
        assert new == old.model_copy(update={"errors": ErrorCounts(**errors)})
    listed = [x for x in after.excluded if (x.task, x.model, x.agent, x.run_id) == key]
    assert len(listed) == 1
    assert listed[0].error_msg == extra.patch.error_msg
    assert listed[0].why.startswith("error")


@given(run_lists(), records(reference=True))
def test_a_newer_reference_or_error_run_takes_the_group_out_under_latest(
    recs: list[RunRecord], extra: RunRecord
) -> None:
    """Property: under `latest`, a reference run (or an error run) that is not the newest of
    its group changes nothing but the set-aside count; one that is the newest takes its group
    out of the shares and is listed instead."""
    key = (extra.task, extra.model, extra.agent, extra.run_id)
    recs = [r for r in recs if (r.task, r.model, r.agent, r.run_id) != key]
    before = aggregate(recs)
    after = aggregate([*recs, extra])
    group = [r for r in recs if (r.task, r.model, r.agent) == key[:3]]
    listed = [x.why for x in after.excluded if (x.task, x.model, x.agent, x.run_id) == key]
    if group and newest_first_key(extra) < max(newest_first_key(r) for r in group):
        assert (after.rows, after.tasks, after.excluded) == (
            before.rows,
            before.tasks,
            before.excluded,
        )
        assert after.set_aside == before.set_aside + 1
        assert listed == []
    else:
        assert listed == ["reference run"]
        assert [t for t in after.tasks if (t.task, t.model, t.agent) == key[:3]] == []


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
    status = fields.pop("status", None)
    build = fields.get("build_success")
    pov_passed = fields.get("pov_passed")
    pov_total = fields.get("pov_total")
    func = fields.get("func_test_success")
    intent = fields.get("intent_test_success")
    if status is None:
        status = status_of(
            build_success=build,  # type: ignore[arg-type]
            pov_passed=pov_passed,  # type: ignore[arg-type]
            pov_total=pov_total,  # type: ignore[arg-type]
            func_test_success=func,  # type: ignore[arg-type]
            intent_test_success=intent,  # type: ignore[arg-type]
        )
    return RunRecord(
        task=task,
        model=model,
        agent=agent,
        run_id=run_id,
        patch=PatchResult.model_validate({**fields, "status": status}),
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
    ref = ref._replace(reference=True)
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


def test_parse_summary_as_ssebench_writes_it() -> None:
    """summary.json: `task` is the task config, `config` the run config (with keys the report
    ignores); the names they give must be the folder's (else the run is left out), the run id
    is the folder's."""
    doc = (
        b'{"task": {"id": "t1", "project": "p", "language": "go", "source": "/src",'
        b' "scripts": {"build": "b.sh", "run": "r.sh"}, "files": {"poc": ["p"]}},'
        b' "config": {"agent": "codex", "model": "openai/gpt-5", "mode": "sandbox",'
        b' "timeout": 3600, "difficulty": 2, "egress": "restricted", "reference_run": false,'
        b' "plugins": []},'
        b' "patch_result": {"status": "failed", "build_success": true, "pov_passed": 0,'
        b' "pov_total": 1, "error_log": "long"},'
        b' "runtime_result": {"agent_duration": 90, "agent_timeout": false,'
        b' "evaluator_timeout": false}, "spend": 0.5, "run_id": "20250601-100000-abcdef",'
        b' "started_at": "2025-06-01T10:00:00", "plugin_results": []}'
    )
    assert parse_run(doc, FOLDER).failure().left_out == "folder"
    folder = RunFolder("t1", "openai/gpt-5", "codex", "run-9")
    rec = parse_run(doc, folder).unwrap()
    assert (rec.task, rec.model, rec.agent, rec.run_id) == ("t1", "openai/gpt-5", "codex", "run-9")
    assert rec.checks is not None
    assert sorted(rec.checks) == ["build", "poc"]
    assert rec.started_at == datetime(2025, 6, 1, 10, tzinfo=UTC)
    assert (rec.spend, rec.agent_seconds, rec.reference) == (0.5, 90, False)
    assert rec.folder == "t1/openai/gpt-5/codex/run-9"
    assert not poc_passed(rec.patch)


def test_parse_reference_run_from_the_run_config() -> None:
    """`config.reference_run` marks a reference run; it is never the task config."""
    doc = b'{"config": {"agent": "reference", "model": "none", "reference_run": true},'
    doc += b' "patch_result": {"status": "passed", "build_success": true}}'
    rec = parse_run(doc, RunFolder(FOLDER.task, "none", "reference", "run-9")).unwrap()
    assert (rec.model, rec.agent, rec.reference, rec.checks) == ("none", "reference", True, None)
    assert rec.task == FOLDER.task


def test_parse_rewritten_result_json() -> None:
    """A result.json the SSEBench runner rewrote: `config` is the run config; the task comes
    from the folder and the status is derived when missing."""
    doc = b'{"patch_result": {"build_success": true, "pov_passed": 1, "pov_total": 1},'
    doc += b' "runtime_result": {"agent_duration": 30, "agent_timeout": false,'
    doc += b' "evaluator_timeout": false}, "config": {"agent": "x", "model": "org/y",'
    doc += b' "mode": "sidecar", "timeout": 60, "difficulty": 0, "reference_run": false}}'
    rec = parse_run(doc, RunFolder(FOLDER.task, "org/y", "x", "run-9")).unwrap()
    assert (rec.task, rec.model, rec.agent) == (FOLDER.task, "org/y", "x")
    assert rec.patch.status == "passed"
    assert rec.checks is None
    bare = parse_run(b'{"patch_result": {"error_msg": "Timeout (60s)"}}', FOLDER).unwrap()
    assert (bare.task, bare.patch.status, bare.agent_seconds) == (FOLDER.task, "error", None)


def test_parse_batch_summary_with_cache_mark() -> None:
    """A summary `ssegrade batch` wrote for a reused result: an ordinary run, marked."""
    doc = b'{"task": {"id": "t"}, "config": {"agent": "a", "model": "m",'
    doc += b' "reference_run": false}, "patch_result": {"status": "passed",'
    doc += b' "build_success": true}, "digest": "ab12", "cached_from": "t/m/a/r1",'
    doc += b' "spend": 0.1, "run_id": "r2", "started_at": "2026-11-30T10:00:00Z"}'
    rec = parse_run(doc, RunFolder("t", "m", "a", "r2")).unwrap()
    assert (rec.cached_from, rec.patch.status, rec.reference) == ("t/m/a/r1", "passed", False)
    report = aggregate([rec])
    assert report.rows[0].passed.passed == 1
    assert report.tasks[0].cached_from == "t/m/a/r1"


def test_parse_top_level_run_keys_and_reference() -> None:
    """`agent`, `model` and `reference_run` may also sit at the top level."""
    doc = (
        b'{"agent": "x", "model": "y", "reference_run": true, "patch_result": {"status": "passed",'
    )
    doc += b' "build_success": true}}'
    rec = parse_run(doc, RunFolder(FOLDER.task, "y", "x", "run-9")).unwrap()
    assert (rec.model, rec.agent, rec.reference) == ("y", "x", True)


@given(
    st.sampled_from(sorted(TASKS)).flatmap(patches),
    st.sampled_from(["kept", "missing", "null"]),
    st.none() | st.text(max_size=5) | st.integers() | st.lists(st.booleans(), max_size=2),
)
def test_the_grade_is_read_as_patch_result_leniently_without_its_log(
    patch: PatchResult, status: str, log: object
) -> None:
    """Property: a run's grade is its `patch_result` read by `PatchResult.lenient`: a status
    kept as written, a missing or null one derived by the rule; the error log, whatever it
    holds, neither checked nor kept."""
    raw = {**patch.model_dump(), "error_log": log, "other": [1]}
    if status == "missing":
        del raw["status"]
    elif status == "null":
        raw["status"] = None
    rec = parse_run(json.dumps({"patch_result": raw}).encode(), FOLDER).unwrap()
    assert rec.patch == PatchResult.lenient(raw, keep_log=False)
    assert rec.patch.error_log is None
    if status == "kept":
        assert rec.patch == patch.model_copy(update={"other": [1]})


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (b"{", "Invalid JSON"),
        (b"[]", "Input should be an object"),
        (b"{}", "patch_result: Field required"),
        (b'{"patch_result": {"status": "great"}}', "patch_result.status"),
        (b'{"patch_result": {"status": "passed"}, "spend": "lots"}', "spend"),
        (b'{"patch_result": {"pov_total": "x"}}', "pov_total"),
        (b'{"patch_result": {}, "config": {"agent": 3}}', "config.agent"),
    ],
)
def test_parse_rejects_bad_documents_with_one_line(doc: bytes, message: str) -> None:
    """A bad document is a one-line error naming the key."""
    error = parse_run(doc, FOLDER).failure().message
    assert message in error
    assert "\n" not in error


# --------------------------------------------------------------------------- statistics of rows


@given(run_lists(config=None), st.sampled_from(MODES), st.booleans())
def test_pass_at_k_and_pass_hat_k_of_rows(
    recs: list[RunRecord], mode: RunsMode, errors_as_failures: bool
) -> None:
    """Property: for every row, pass@k and pass^k are given for k = 1 … the fewest kept runs of
    any of its tasks; pass@1 = pass^1 = the mean of the per-task pass shares, which is the pass
    share whenever every task has as many runs (always so under `latest`); pass@k never falls
    and pass^k never rises as k grows; pass^k ≤ pass@k."""
    report = aggregate(recs, mode, errors_as_failures)
    for row in report.rows:
        per_task: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for t in report.tasks:
            if (t.model, t.agent) == row.key:
                per_task[t.task][0] += 1
                per_task[t.task][1] += t.status == "passed"
        sizes = {n for n, _ in per_task.values()}
        assert row.trials == min(sizes)
        assert list(row.pass_at_k) == list(range(1, row.trials + 1))
        assert list(row.pass_hat_k) == list(range(1, row.trials + 1))
        mean_share = sum(c / n for n, c in per_task.values()) / len(per_task)
        assert row.pass_at_k[1] == pytest.approx(mean_share)
        assert row.pass_hat_k[1] == pytest.approx(mean_share)
        if len(sizes) == 1:
            assert row.pass_at_k[1] == pytest.approx(row.passed.share)
        if mode == "latest":
            assert row.trials == 1
        ks = list(row.pass_at_k)
        for k, nxt in itertools.pairwise(ks):
            assert row.pass_at_k[nxt] >= row.pass_at_k[k] - 1e-12
            assert row.pass_hat_k[nxt] <= row.pass_hat_k[k] + 1e-12
        for k in ks:
            assert 0.0 <= row.pass_hat_k[k] <= row.pass_at_k[k] + 1e-12 <= 1.0 + 1e-12


@given(run_lists(config=None), st.sampled_from(MODES))
def test_clustered_interval_contains_the_pass_share(recs: list[RunRecord], mode: RunsMode) -> None:
    """Property: the task-clustered interval is given exactly when a task has several kept
    runs of the row (and the row has two tasks or more), lies in [0, 1] and contains the pass
    share."""
    report = aggregate(recs, mode)
    for row in report.rows:
        runs_of: dict[str, int] = defaultdict(int)
        for t in report.tasks:
            if (t.model, t.agent) == row.key:
                runs_of[t.task] += 1
        repeated = any(n > 1 for n in runs_of.values()) and len(runs_of) > 1
        assert (row.clustered is not None) == repeated
        if row.clustered is not None:
            assert row.passed.share is not None
            assert 0.0 <= row.clustered.low <= row.passed.share <= row.clustered.high <= 1.0


@given(run_lists(config=None), st.sampled_from(MODES))
def test_rows_are_sorted_by_pass_share(recs: list[RunRecord], mode: RunsMode) -> None:
    """Property: rows come highest pass share first, ties by (model, agent)."""
    rows = aggregate(recs, mode).rows
    keys = [(-(r.passed.share or 0.0), r.model, r.agent) for r in rows]
    assert keys == sorted(keys)


@given(run_lists(config=None), st.sampled_from(MODES))
def test_holm_adjusted_comparisons(recs: list[RunRecord], mode: RunsMode) -> None:
    """Property: over every pair of rows, each Holm p-value is at least its raw p-value and at
    most 1, and Holm keeps the order of the raw p-values."""
    pairs = compare_all(aggregate(recs, mode))
    for c in pairs:
        assert c.p_value <= c.p_holm <= 1.0
    for x in pairs:
        for y in pairs:
            if x.p_value < y.p_value:
                assert x.p_holm <= y.p_holm


@given(run_lists(), st.sampled_from(MODES))
def test_errors_as_failures_counts_error_runs_as_failed(
    recs: list[RunRecord], mode: RunsMode
) -> None:
    """Property: with `errors_as_failures`, no error run is left out (only reference runs are),
    an error run never passes, and under `all` the kept runs are every non-reference run."""
    report = aggregate(recs, mode, errors_as_failures=True)
    assert all(x.why == "reference run" for x in report.excluded)
    by_id = {(r.task, r.model, r.agent, r.run_id): r for r in recs}
    for t in report.tasks:
        original = by_id[(t.task, t.model, t.agent, t.run_id)]
        if original.patch.status == "error":
            assert t.status == "failed"
    if mode == "all":
        assert len(report.tasks) == sum(not r.reference for r in recs)


def test_cost_per_passed_run() -> None:
    """Cost per pass: the spend of the kept runs over the runs that passed; none without a
    pass or without any spend."""
    ok = run("x", build_success=True).patch
    bad = run("y", build_success=False).patch
    recs = [
        RunRecord("t1", "m", "a", "r", ok, spend=1.0),
        RunRecord("t2", "m", "a", "r", bad, spend=2.0),
        RunRecord("t3", "m", "a", "r", ok, spend=None),
    ]
    assert aggregate(recs).rows[0].cost_per_pass == 1.5
    assert aggregate(recs[1:2]).rows[0].cost_per_pass is None
    assert aggregate([recs[2]]).rows[0].cost_per_pass is None


def test_run_ids_compare_naturally_without_a_time() -> None:
    """Without `started_at`, `run-10` is newer than `run-9`."""
    report = aggregate([run("run-10", build_success=True), run("run-9", build_success=False)])
    assert [(t.run_id, t.trial) for t in report.tasks] == [("run-10", 2)]
    trials = aggregate(
        [run("run-10", build_success=True), run("run-9", build_success=False)], "all"
    )
    assert [t.run_id for t in trials.tasks] == ["run-9", "run-10"]
