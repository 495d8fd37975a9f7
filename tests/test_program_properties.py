"""The whole grading program with hypothesis as the interpreter: every answer is drawn."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from ssegrade import (
    ApplyError,
    Archive,
    ArchiveError,
    Bench,
    CaptureError,
    CheckFinished,
    Effect,
    GradeOptions,
    Notify,
    ObserveGuard,
    Prepared,
    PrepareGrading,
    ScriptResult,
    Task,
    TimeLimitReached,
    WriteGuard,
    WriteResult,
    grade,
    run,
)
from tests.strategies import tasks


@dataclass
class Drawn:
    """An interpreter whose every answer is drawn by hypothesis; it records what it answered."""

    data: st.DataObject
    trace: list[Effect[Any]] = field(default_factory=list)
    answers: list[object] = field(default_factory=list)
    limit_hit: bool = False
    crashed: bool = False

    def __call__(self, effect: Effect[Any]) -> object:
        self.trace.append(effect)
        try:
            answer = self._answer(effect)
        except Exception as exc:
            self.answers.append(exc)
            raise
        self.answers.append(answer)
        return answer

    def _interrupt(self) -> None:
        kind = self.data.draw(st.sampled_from(["none"] * 8 + ["limit", "crash"]))
        if kind == "limit":
            self.limit_hit = True
            raise TimeLimitReached(60)
        if kind == "crash":
            self.crashed = True
            raise OSError("disk on fire")

    def _answer(self, effect: Effect[Any]) -> object:
        if isinstance(effect, PrepareGrading):
            self._interrupt()
            return self.data.draw(
                st.sampled_from(
                    [
                        Success(Prepared(10, empty=False)),
                        Success(Prepared(0, empty=True)),
                        Failure(ApplyError("error: patch failed: x.c:1")),
                        Failure(CaptureError("the captured patch does not reproduce the tree")),
                    ]
                )
            )
        if isinstance(effect, Bench):
            self._interrupt()
            code = self.data.draw(st.sampled_from([0, 0, 1, 2, -1]))
            return ScriptResult(code=code, stdout=f"out {effect.action}", stderr="err", seconds=1.0)
        if isinstance(effect, Archive):
            return self.data.draw(st.sampled_from([Success(None), Failure(ArchiveError("full"))]))
        return None

    def benches(self) -> list[tuple[Bench, ScriptResult]]:
        return [
            (e, a)
            for e, a in zip(self.trace, self.answers, strict=True)
            if isinstance(e, Bench) and isinstance(a, ScriptResult)
        ]


def _grade(task: Task, data: st.DataObject) -> tuple[Drawn, Any]:
    world = Drawn(data)
    result = run(grade(GradeOptions(task=task, folder="/t", timeout=60)), world)
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
    benches = world.benches()
    has = task.checks
    expected: list[tuple[str, str | None]] = []
    if "build" in has:
        expected.append(("build", None))
    expected += [("run_poc", p) for p in task.files.poc] if "poc" in has else []
    expected += [("function_test", None)] if "function_test" in has else []
    expected += [("intent_test", None)] if "intent_test" in has else []
    actual = [(b.action, b.poc) for b, _ in benches]
    build_failed = bool(benches) and benches[0][0].action == "build" and benches[0][1].code != 0
    interrupted = world.limit_hit or world.crashed
    prepared = world.answers[0]
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
    prepared = world.answers[0]
    recorded = isinstance(prepared, Success) or (
        isinstance(prepared, Failure) and isinstance(prepared.failure(), ApplyError)
    )
    assert [r.name for r in records[:1]] == (["prepare"] if recorded else [])
    assert not any(r.name == "prepare" for r in records[1:])
    records = records[1:] if recorded else records
    benches = world.benches()
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
    answers = {(b.action, b.poc): a.code == 0 for b, a in world.benches()}
    prepared = world.answers[0]
    if isinstance(prepared, Failure) and isinstance(prepared.failure(), ApplyError):
        assert (patch.status, patch.error_msg) == ("failed", "Patch apply failed")
        return
    assert patch.build_success == answers.get(("build", None))
    assert patch.func_test_success == answers.get(("function_test", None))
    assert patch.intent_test_success == answers.get(("intent_test", None))
    poc_answers = [answers.get(("run_poc", p)) for p in task.files.poc]
    if "poc" in task.checks and all(a is not None for a in poc_answers):
        assert patch.pov_total == len(task.files.poc)
        assert patch.pov_passed == sum(bool(a) for a in poc_answers)
    else:
        assert patch.pov_total is None
    assert result.runtime_result.evaluator_timeout == world.limit_hit
    if world.limit_hit:
        assert (patch.status, patch.error_msg) == ("error", "Timeout (60s)")
    elif world.crashed:
        assert (patch.status, patch.error_msg) == ("error", "Exception: disk on fire")
    elif isinstance(prepared, Failure):
        assert patch.status == "error"
        assert patch.error_msg is not None
        assert patch.error_msg.startswith("Exception: the captured patch")


@given(tasks(), st.data())
def test_archive_failure_never_changes_the_grade(task: Task, data: st.DataObject) -> None:
    """Property: a failed archive only adds a note; the grade is the one a good archive gets."""
    world, result = _grade(task, data)
    archived = world.answers[[type(e) for e in world.trace].index(Archive)]
    notes = [e.message for e in world.trace if isinstance(e, Notify)]
    assert isinstance(archived, Success) or any("source.tar.gz" in n for n in notes)
    assert result.patch_result.status in ("passed", "failed", "error")
