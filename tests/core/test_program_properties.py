"""The whole grading program with hypothesis as the interpreter: every answer is drawn
(`ssegrade.testing.strategies.Drawn`), and recorded."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from ssegrade import Effect, GradeOptions, Task, TimeLimitReached, grade, run
from ssegrade.internal.effects import (
    ApplyError,
    Archive,
    ArchiveError,
    Bench,
    CaptureError,
    CheckFinished,
    Notify,
    ObserveGuard,
    Prepared,
    PrepareGrading,
    ScriptResult,
    WriteGuard,
    WriteResult,
)
from ssegrade.testing import Recording
from ssegrade.testing.strategies import Drawn, tasks


def _interrupted(answer: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`answer`, or (one time in ten each) the time limit or a broken interpreter instead."""
    kinds = st.sampled_from(["none"] * 8 + ["limit", "crash"])
    return kinds.flatmap(
        lambda kind: (
            answer
            if kind == "none"
            else st.builds(TimeLimitReached, st.just(60))
            if kind == "limit"
            else st.builds(OSError, st.just("disk on fire"))
        )
    )


PREPARED = st.sampled_from(
    [
        Success(Prepared(10, empty=False)),
        Success(Prepared(0, empty=True)),
        Failure(ApplyError("error: patch failed: x.c:1")),
        Failure(CaptureError("the captured patch does not reproduce the tree")),
    ]
)


def _answers(effect: Effect[Any]) -> st.SearchStrategy[Any] | None:
    """Every answer of the grading program drawn: preparing and each check may be cut short."""
    if isinstance(effect, PrepareGrading):
        return _interrupted(PREPARED)
    if isinstance(effect, Bench):
        action = effect.action
        return _interrupted(
            st.sampled_from([0, 0, 1, 2, -1]).map(
                lambda code: ScriptResult(
                    code=code, stdout=f"out {action}", stderr="err", seconds=1.0
                )
            )
        )
    if isinstance(effect, Archive):
        return st.sampled_from([Success(None), Failure(ArchiveError("full"))])
    return None


def checks_run(world: Recording) -> list[tuple[Bench, ScriptResult]]:
    """The checks run, each with the result it got."""
    return [
        (e, a) for e, a in world.steps() if isinstance(e, Bench) and isinstance(a, ScriptResult)
    ]


def prepared_answer(world: Recording) -> object:
    """What `PrepareGrading` was answered (the program says its plan before it)."""
    return world.answers[[type(e) for e in world.trace].index(PrepareGrading)]


def limit_hit(world: Recording) -> bool:
    """Whether the time limit was drawn in place of an answer."""
    return any(isinstance(a, TimeLimitReached) for a in world.answers)


def crashed(world: Recording) -> bool:
    """Whether a broken interpreter was drawn in place of an answer."""
    return any(isinstance(a, OSError) for a in world.answers)


def _grade(task: Task, data: st.DataObject) -> tuple[Recording, Any]:
    world = Recording(Drawn(data, _answers))
    result = run(grade(GradeOptions(task=task, folder="/t")), world)
    return world, result


@given(tasks(), st.data())
def test_result_is_written_once_last_after_the_archive(task: Task, data: st.DataObject) -> None:
    """Property: whatever happens, the archive runs once, then result.json is written once,
    last but for the advisory patch guard, and it is the document the program returns."""
    world, result = _grade(task, data)
    kinds = [type(e) for e in world.trace]
    assert kinds.count(WriteResult) == 1
    assert kinds.count(Archive) == 1
    written = kinds.index(WriteResult)
    assert set(kinds[written + 1 :]) <= {ObserveGuard, WriteGuard, Notify}
    assert kinds.index(Archive) < written
    assert world.trace[written] == WriteResult(result)


@given(tasks(), st.data())
def test_checks_follow_the_pipeline(task: Task, data: st.DataObject) -> None:
    """Property: only checks the task has run, in pipeline order, PoCs in config order, and
    nothing after a failed build, an apply failure, a timeout or an exception."""
    world, _ = _grade(task, data)
    benches = checks_run(world)
    has = task.checks
    expected: list[tuple[str, str | None]] = []
    if "build" in has:
        expected.append(("build", None))
    expected += [("run_poc", p) for p in task.files.poc] if "poc" in has else []
    expected += [("function_test", None)] if "function_test" in has else []
    expected += [("intent_test", None)] if "intent_test" in has else []
    actual = [(b.action, b.poc) for b, _ in benches]
    build_failed = bool(benches) and benches[0][0].action == "build" and benches[0][1].code != 0
    interrupted = limit_hit(world) or crashed(world)
    prepared = prepared_answer(world)
    if not isinstance(prepared, Success):
        assert actual == []
        assert not benches
    elif build_failed:
        assert actual == [("build", None)]
    elif interrupted:
        assert actual == expected[: len(actual)]
    else:
        assert actual == expected


@given(tasks(), st.data())
def test_every_check_is_recorded(task: Task, data: st.DataObject) -> None:
    """Property: each finished bencher action is followed by its checks.jsonl record, after
    one `prepare` record when the patch was prepared or refused by git."""
    world, _ = _grade(task, data)
    records = [e.record for e in world.trace if isinstance(e, CheckFinished)]
    records = [r for r in records if r.name != "end"]  # how grading ended: tested below
    prepared = prepared_answer(world)
    recorded = isinstance(prepared, Success) or (
        isinstance(prepared, Failure) and isinstance(prepared.failure(), ApplyError)
    )
    assert [r.name for r in records[:1]] == (["prepare"] if recorded else [])
    assert not any(r.name == "prepare" for r in records[1:])
    records = records[1:] if recorded else records
    benches = checks_run(world)
    assert len(records) == len(benches)
    for (bench, answer), record in zip(benches, records, strict=True):
        assert record.exit_code == answer.code
        assert record.passed == (answer.code == 0)
        assert record.name == ("poc" if bench.action == "run_poc" else bench.action)


@given(tasks(), st.data())
def test_document_matches_what_was_observed(task: Task, data: st.DataObject) -> None:
    """Property: the check fields of result.json are the answers the checks got, a timeout
    keeps them with evaluator_timeout set, and the status follows the rule."""
    world, result = _grade(task, data)
    patch = result.patch_result
    answers = {(b.action, b.poc): a.code == 0 for b, a in checks_run(world)}
    prepared = prepared_answer(world)
    if isinstance(prepared, Failure) and isinstance(prepared.failure(), ApplyError):
        assert (patch.status, patch.error_msg) == ("failed", "Patch apply failed")
        return
    assert patch.build_success == answers.get(("build", None))
    assert patch.func_test_success == answers.get(("function_test", None))
    assert patch.intent_test_success == answers.get(("intent_test", None))
    poc_answers = [answers.get(("run_poc", p)) for p in task.files.poc]
    if "poc" in task.checks and (
        all(a is not None for a in poc_answers) or any(a is False for a in poc_answers)
    ):
        assert patch.pov_total == len(task.files.poc)
        assert patch.pov_passed == sum(bool(a) for a in poc_answers)
    else:
        assert patch.pov_total is None
    assert result.runtime_result.evaluator_timeout == limit_hit(world)
    failed = any(not passed for passed in answers.values())
    if failed:  # a failed check is decisive, whatever ended grading
        assert patch.status == "failed"
        assert result.runtime_result.error_kind is None
    elif limit_hit(world):
        assert (patch.status, patch.error_msg) == ("error", "Timeout (60s)")
        assert result.runtime_result.error_kind == "timeout"
    elif crashed(world):
        assert (patch.status, patch.error_msg) == ("error", "Exception: disk on fire")
        assert result.runtime_result.error_kind == "infrastructure"
    elif isinstance(prepared, Failure):
        assert patch.status == "error"
        assert patch.error_msg is not None
        assert patch.error_msg.startswith("Exception: the captured patch")
        assert result.runtime_result.error_kind == "grader"


@given(tasks(), st.data())
def test_a_failed_check_decides_whatever_ends_grading(task: Task, data: st.DataObject) -> None:
    """Property: once a check finished failed, the grade is `failed` with that check as
    error_msg, whatever comes after it (the time limit, an exception); a grading that did not
    run to its end says how in an `end` record of checks.jsonl and in a note."""
    world, result = _grade(task, data)
    patch = result.patch_result
    finished = checks_run(world)
    first = next((b for b, a in finished if a.code != 0), None)
    if first is not None:
        assert patch.status == "failed"
        if first.action == "run_poc":
            assert patch.error_msg == f"PoC failed: /t/{first.poc}"
        else:
            assert (
                patch.error_msg
                == {
                    "build": "Build failed",
                    "function_test": "Function test failed",
                    "intent_test": "Intent test failed",
                }[first.action]
            )
    ends = [
        e.record for e in world.trace if isinstance(e, CheckFinished) and e.record.name == "end"
    ]
    stopped = limit_hit(world) or crashed(world) or _capture_failed(world)
    assert len(ends) == (1 if stopped else 0)
    if stopped:
        assert ends[0].error_kind == result.runtime_result.error_kind
        assert ends[0].passed is (patch.status == "passed")
        notes = [e.message for e in world.trace if isinstance(e, Notify)]
        assert any(n.startswith(f"grading ended early: {ends[0].ended}") for n in notes)


def _capture_failed(world: Recording) -> bool:
    prepared = prepared_answer(world)
    return isinstance(prepared, Failure) and isinstance(prepared.failure(), CaptureError)


@given(tasks(), st.data())
def test_archive_failure_never_changes_the_grade(task: Task, data: st.DataObject) -> None:
    """Property: a failed archive only adds a note; the grade is the one a good archive gets."""
    world, result = _grade(task, data)
    archived = world.answers[[type(e) for e in world.trace].index(Archive)]
    notes = [e.message for e in world.trace if isinstance(e, Notify)]
    assert isinstance(archived, Success) or any("source.tar.gz" in n for n in notes)
    assert result.patch_result.status in ("passed", "failed", "error")
