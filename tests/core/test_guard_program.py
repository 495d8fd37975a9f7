"""The patch guard in the grading program: awaited after `result.json` is written, it never
changes the grade; what it observes (fake world), writes and records (traces, replay), and
what the daemon serves for it."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from interpreters.app.trace import TraceRecorder
from ssegrade import (
    Effect,
    EvaluationResult,
    GradeOptions,
    RuntimeResult,
    Task,
    TimeLimitReached,
    bencher_interpreter,
    grade,
    run,
)
from ssegrade.guard import GuardFacts, ObjectScan, PocFile
from ssegrade.internal.effects import (
    ApplyError,
    Archive,
    ArchiveError,
    Bench,
    CaptureError,
    ObserveGuard,
    Prepared,
    PrepareGrading,
    ReadRepoFiles,
    ReadTaskFile,
    ScanObjects,
    ScriptResult,
    Workspace,
    WriteGuard,
    WriteResult,
)
from ssegrade.internal.program import SignalArrived
from ssegrade.internal.run import Interpreter
from ssegrade.internal.task import Files, Scripts
from ssegrade.testing import FakeWorld, Recording, Script
from ssegrade.testing.strategies import Drawn, tasks
from ssegrade.trace import Trace, replay
from tests.support.fakedaemon import make_api
from tests.support.guardkit import Case, Edit, case_patch, make_patch

CHEAT = make_patch(
    [
        Edit("Makefile", (b"CFLAGS += -fsanitize=address",), (b"CFLAGS += -O2",)),
        Edit("src/main.c", (), (b"    signal(SIGSEGV, quiet);",)),
        Edit("tests/test_x.c", (b"assert(ok);",), ()),
        Edit("vendor/z/z.c", (), (b"x",)),
    ]
)
CLEAN = make_patch([Edit("src/x.c", (b"    return n;",), (b"    return n > cap ? -1 : n;",))])

C_TASK = Task(
    id="c-1",
    sanitizer="address",
    scripts=Scripts(build="build.sh", run="run.sh", test="test.sh"),
    files=Files(poc=("pocs/crash.bin",), future_test="diffs/test.diff"),
)


# ---------------------------------------------------------------------------- never the grade

EVERY_FLAG = GuardFacts(
    pocs=(PocFile("pocs/p.bin", b"\x01\x02\x03\x04\x05\x06\x07\x08" * 4),),
    hidden_tests=("src/main.c",),
    objects=ObjectScan(examined=2),
)


def _draws(patch: bytes) -> Callable[[Effect[Any]], st.SearchStrategy[Any] | None]:
    """What the grading effects may answer (an exception: thrown in their place)."""

    def answers(effect: Effect[Any]) -> st.SearchStrategy[Any] | None:
        if isinstance(effect, PrepareGrading):
            return st.sampled_from(
                [
                    Success(Prepared(len(patch), empty=False, patch=patch)),
                    Success(Prepared(0, empty=True)),
                    Failure(ApplyError("error: patch failed")),
                    Failure(CaptureError("does not reproduce")),
                    TimeLimitReached(60),
                    SignalArrived("SIGTERM"),
                ]
            )
        if isinstance(effect, Bench):
            codes = st.sampled_from([0, 0, 1, -1])
            return st.one_of(
                codes.map(lambda code: ScriptResult(code=code, seconds=1.0)),
                st.just(TimeLimitReached(60)),
            )
        if isinstance(effect, Archive):
            return st.sampled_from([Success(None), Failure(ArchiveError("x"))])
        return None

    return answers


def _replaying(recorded: list[object], patch: bytes) -> Interpreter:
    """The answers recorded, in order, another patch prepared in place of the one drawn."""
    answers = iter(recorded)

    def interpret(_effect: Effect[Any]) -> object:
        answer = next(answers)
        prepared = answer.unwrap() if isinstance(answer, Success) else None
        if isinstance(prepared, Prepared) and not prepared.empty:  # the same grade, another patch
            answer = Success(Prepared(len(patch), empty=False, patch=patch))
        if isinstance(answer, BaseException):
            raise answer
        return answer

    return interpret


def _with_guard(guard: object, inner: Interpreter) -> Recording:
    """`inner` below the guard's effects, which `guard` answers: what it observes, or the
    exception each of them raises; everything asked is recorded."""

    def interpret(effect: Effect[Any]) -> object:
        if not isinstance(effect, ObserveGuard | WriteGuard):
            return inner(effect)
        if isinstance(guard, BaseException):
            raise guard
        return guard if isinstance(effect, ObserveGuard) else None

    return Recording(interpret)


def _written(trace: list[Effect[Any]]) -> list[EvaluationResult]:
    return [e.result for e in trace if isinstance(e, WriteResult)]


@given(
    tasks(),
    st.data(),
    st.sampled_from([EVERY_FLAG, GuardFacts(), OSError("disk on fire")]),
    st.sampled_from([GuardFacts(), EVERY_FLAG, SignalArrived("SIGINT"), TimeLimitReached(60)]),
)
def test_the_guard_never_changes_status_or_any_field_of_the_grade(
    task: Task, data: st.DataObject, first: object, second: object
) -> None:
    """Property: the same grading, with whatever the guard observes or however it fails, and a
    cheating patch or a clean one, gives the same document, written once, the same."""
    options = GradeOptions(task=task.model_copy(update={"sanitizer": "address"}), folder="/t")
    drawing = Recording(Drawn(data, _draws(CHEAT)))
    drawn = _with_guard(first, drawing)
    before = run(grade(options), drawn)
    again = _with_guard(second, _replaying(drawing.answers, CLEAN))
    after = run(grade(options), again)
    assert after == before
    assert after.patch_result == before.patch_result
    assert _written(again.trace) == _written(drawn.trace) == [before]
    kinds = [type(e) for e in again.trace]
    assert kinds.index(WriteResult) < kinds.index(WriteGuard) if WriteGuard in kinds else True


# ---------------------------------------------------------------------------- fake world


def _world(**kwargs: Any) -> FakeWorld:
    files = {
        "/task/pocs/crash.bin": b"RLE1\x00\x08\x0aA\x0aB\x0aC\x0aD\x0aE\x0aF\x0aG",
        "/task/diffs/test.diff": make_patch([Edit("tests/test_overflow.c", (), (b"x",), new=True)]),
    }
    return FakeWorld(task_files=files, **kwargs)


def test_the_guard_observes_after_the_verdict_and_writes_guard_json() -> None:
    world = _world(patch=CHEAT, objects=ObjectScan(examined=3))
    result = world.grade(C_TASK)
    assert result.patch_result.status == "passed"  # the fake's scripts pass: flags or not
    kinds = [type(e) for e in world.trace]
    assert kinds.index(WriteResult) < kinds.index(ReadTaskFile) < kinds.index(WriteGuard)
    reads = [e.path for e in world.trace if isinstance(e, ReadTaskFile)]
    assert reads == ["/task/pocs/crash.bin", "/task/diffs/test.diff"]
    (scan,) = [e for e in world.trace if isinstance(e, ScanObjects)]
    assert scan.workspace == Workspace("/scratch/copy-1")  # the build's copy
    assert [r.name for r in scan.runtimes] == ["address"]
    assert set(scan.skip) == {"Makefile", "src/main.c", "tests/test_x.c", "vendor/z/z.c"}
    assert world.guard is not None
    assert world.guard.kinds == ("build-config", "sanitizer", "crash-handler", "tests", "vendored")
    assert world.guard.observed is not None
    assert (world.guard.observed.pocs, world.guard.observed.hidden_tests) == (1, 1)
    assert world.artifacts["guard.json"] == world.guard.to_json()


def test_a_nul_byte_hides_no_catcher_from_the_grading_s_guard(tmp_path: Path) -> None:
    """The attack: one NUL byte in a comment makes git carry `src/main.c` as a binary delta,
    which no line is read from; the guard applies it to the repo's file and reads the code."""
    before = b"#include <signal.h>\n" + b"int pad;\n" * 200 + b"int main(void) { return run(); }\n"
    after = before.replace(b"int pad;\n", b"/* \0 */ static void h(int s) { _exit(0); }\n", 1)
    after = after.replace(b"{ return run(); }", b"{ signal(SIGSEGV, h); return run(); }")
    case = Case("nul", "crash-handler", (), {"src/main.c": before}, {"src/main.c": after})
    patch = case_patch(case, tmp_path / "repo")
    assert b"GIT binary patch" in patch
    world = _world(patch=patch, repo_files={"src/main.c": before})
    world.grade(C_TASK)
    (read,) = [e for e in world.trace if isinstance(e, ReadRepoFiles)]
    assert read.paths == ("src/main.c",)
    assert world.guard is not None
    (flag,) = [f for f in world.guard.flags if f.kind == "crash-handler"]
    assert (flag.confidence, flag.where) == ("pattern", "src/main.c:202")


def test_a_clean_patch_with_its_runtime_is_unflagged() -> None:
    world = _world(patch=CLEAN)
    world.grade(C_TASK)
    assert world.guard is not None
    assert (world.guard.flags, world.guard.checked) == ((), True)


def test_no_scan_without_a_sanitizer_or_a_build() -> None:
    for task in (
        C_TASK.model_copy(update={"sanitizer": None}),
        C_TASK.model_copy(update={"scripts": Scripts(run="run.sh")}),
    ):
        world = _world(patch=CLEAN)
        world.grade(task)
        assert not any(isinstance(e, ScanObjects) for e in world.trace)
        assert world.guard is not None
        assert world.guard.observed is not None
        assert world.guard.observed.objects is None


def test_a_timed_out_grading_examines_the_patch_alone() -> None:
    world = _world(patch=CHEAT, scripts={"function_test": Script(time_limit=True)})
    result = world.grade(C_TASK)
    assert result.patch_result.error_msg == "Timeout (3600s)"
    assert not any(isinstance(e, ObserveGuard | ReadTaskFile) for e in world.trace)
    assert world.guard is not None
    assert world.guard.observed is None
    assert "build-config" in world.guard.kinds


def test_a_patch_that_was_not_prepared_is_not_examined() -> None:
    for world in (_world(capture_error="broken"), _world(patch=CHEAT, apply_error="rejected")):
        world.grade(C_TASK)
        assert world.guard is not None
        assert (world.guard.checked, world.guard.flags) == (False, ())


def test_an_unreadable_poc_is_left_out() -> None:
    world = FakeWorld(patch=CLEAN)
    world.grade(C_TASK)
    assert world.guard is not None
    assert world.guard.observed is not None
    assert (world.guard.observed.pocs, world.guard.observed.hidden_tests) == (0, 0)


# ---------------------------------------------------------------------------- traces


def _recorded(world: FakeWorld) -> Trace:
    recorder = TraceRecorder()
    options = GradeOptions(task=C_TASK, folder="/task", runtime=RuntimeResult())
    recorder.begin(options)
    interpret = bencher_interpreter(world.session(C_TASK), world)
    recorder.end(run(grade(options), interpret, None, recorder.observe))
    trace = recorder.trace()
    assert trace is not None
    return trace


def test_a_trace_holds_the_guard_and_replays_to_the_same_grade() -> None:
    trace = _recorded(_world(patch=CHEAT, objects=ObjectScan(examined=3)))
    kinds = [type(s.effect) for s in trace.steps]
    assert kinds[-2:] == [ObserveGuard, WriteGuard]
    observed = trace.steps[-2].answer
    assert isinstance(observed, GuardFacts)
    assert observed.pocs[0].data.startswith(b"RLE1\x00")  # bytes survive the record
    assert replay(trace).changes == ()


def test_a_trace_from_before_the_guard_replays_to_the_same_grade() -> None:
    trace = _recorded(_world(patch=CHEAT))
    old = tuple(s for s in trace.steps if not isinstance(s.effect, ObserveGuard | WriteGuard))
    assert len(old) == len(trace.steps) - 2
    replayed = replay(Trace(trace.options, old, trace.result))
    assert replayed.changes == ()
    assert replayed.result == trace.result


# ---------------------------------------------------------------------------- the daemon


def test_the_daemon_serves_the_facts_on_the_admin_socket_only() -> None:
    made = make_api()
    pocs = {"/ssebench/pocs/a.bin": b"\xff\x00poc", "/ssebench/pocs/b.bin": b"second"}
    made.backend.graded.task_files.update(pocs)
    assert made.admin.post("/guard/observe").status_code == 404  # not prepared
    assert made.admin.post("/prepare_grading").status_code == 200
    refused = made.agent.post("/guard/observe")
    assert (refused.status_code, list(refused.json())) == (403, ["error"])
    reply = made.admin.post("/guard/observe")
    assert reply.status_code == 200
    body = reply.json()
    assert set(body) == {"pocs", "hidden_tests", "objects", "sources"}
    assert [(p["path"], base64.urlsafe_b64decode(p["data"])) for p in body["pocs"]] == [
        ("pocs/a.bin", b"\xff\x00poc"),
        ("pocs/b.bin", b"second"),
    ]
