"""Traces: recorded against the fake world, written, read back and replayed with the rules."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.pipeline import is_successful
from returns.result import Success

from interpreters.app.setup import graded
from interpreters.app.trace import TraceRecorder
from ssegrade import (
    EvaluationResult,
    GradeOptions,
    RuntimeResult,
    Task,
    TimeLimitReached,
    bencher_interpreter,
    grade,
    run,
)
from ssegrade.internal.effects import (
    Bench,
    CheckFinished,
    Notify,
    ScriptNotStarted,
    ScriptResult,
    WriteResult,
)
from ssegrade.internal.program import SignalArrived
from ssegrade.internal.task import Files, Scripts
from ssegrade.testing import FakeWorld, Throwing
from ssegrade.testing.strategies import tasks, worlds
from ssegrade.trace import (
    Diverged,
    ErrorRaised,
    InterruptRaised,
    RecordedError,
    Replay,
    Trace,
    dump_trace,
    exception_of,
    parse_trace,
    raised_of,
    replay,
    verdict_changes,
)
from ssegrade.trace._replay import escaped_result

FULL = Task(
    id="demo-1",
    scripts=Scripts(build="scripts/build.sh", run="scripts/run.sh", test="scripts/test.sh"),
    files=Files(poc=("pocs/a.bin", "pocs/b.bin"), future_test="tests/future.diff"),
)
PATCH = b"diff --git a/x.c b/x.c\n--- a/x.c\n+++ b/x.c\n@@ -1 +1 @@\n-a\n+\xff\n"


def _record(world: FakeWorld, task: Task, interpret: Any = None) -> tuple[TraceRecorder, Any]:
    recorder = TraceRecorder()
    options = GradeOptions(task=task, folder="/task", runtime=RuntimeResult(agent_duration=7))
    inner = interpret or bencher_interpreter(world.session(task), world)
    recorder.begin(options)
    try:
        result = run(grade(options), inner, None, recorder.observe)
    except Exception as exc:  # noqa: BLE001 - an escaped exception is what some runs record
        recorder.end(error=exc)
        return recorder, exc
    recorder.end(result)
    return recorder, result


def _trace(recorder: TraceRecorder) -> Trace:
    trace = recorder.trace()
    assert trace is not None
    return trace


def _round_trip(trace: Trace) -> Trace:
    parsed = parse_trace(dump_trace(trace))
    assert is_successful(parsed), parsed
    return parsed.unwrap()


@given(tasks(), worlds())
def test_a_replayed_trace_gives_the_same_document(task: Task, world: FakeWorld) -> None:
    """Property: serialise → parse → replay gives the document the grading returned."""
    recorder, result = _record(world, task)
    trace = _trace(recorder)
    parsed = _round_trip(trace)
    assert parsed == trace
    replayed = replay(parsed)
    assert replayed.result == result
    assert replayed.recorded == result
    assert replayed.changes == ()


@given(tasks(), worlds(crashes=True))
def test_a_crashed_interpreter_replays_to_the_same_verdict(task: Task, world: FakeWorld) -> None:
    """Property: an interpreter that broke is replayed as the same error; only the
    traceback in error_log (code lines) may read differently."""
    recorder, result = _record(world, task)
    replayed = replay(_round_trip(_trace(recorder)))
    assert replayed.changes == ()
    assert replayed.result.model_copy(
        update={"patch_result": replayed.result.patch_result.model_copy(update={"error_log": 0})}
    ) == result.model_copy(
        update={"patch_result": result.patch_result.model_copy(update={"error_log": 0})}
    )


exceptions = st.one_of(
    st.builds(TimeLimitReached, st.integers(1, 100)),
    st.builds(SignalArrived, st.sampled_from(["SIGINT", "SIGTERM"])),
    st.builds(ScriptNotStarted, st.text(max_size=10), st.text(max_size=10)),
    st.builds(OSError, st.text(max_size=10)),
    st.builds(KeyError),
)


@given(tasks(), worlds(), st.dictionaries(st.integers(0, 25), exceptions, max_size=3))
def test_exceptions_thrown_into_the_program_are_replayed(
    task: Task, world: FakeWorld, at: dict[int, Exception]
) -> None:
    """Property: time limits, signals, broken tasks and interpreter errors at any step (even
    ones that escape the program) are recorded and replayed to the same verdict."""
    throwing = Throwing(bencher_interpreter(world.session(task), world), at)
    recorder, outcome = _record(world, task, throwing)
    trace = _round_trip(_trace(recorder))
    raised = [step.raised for step in trace.steps if step.raised is not None]
    thrown = [exc for _, exc in throwing.thrown]  # the world may raise others too
    assert all(isinstance(exc, Exception) and raised_of(exc) in raised for exc in thrown)
    replayed = replay(trace)
    assert replayed.changes == ()
    if isinstance(outcome, EvaluationResult):
        assert trace.raised is None
        assert replayed.result.patch_result.status == outcome.patch_result.status
    else:
        assert trace.result is None
        assert trace.raised == raised_of(outcome)
        # `error`, unless a check seen to finish had failed: that decides the grade.
        assert replayed.result.patch_result.status in ("error", "failed")


def test_a_changed_answer_changes_the_verdict() -> None:
    world = FakeWorld(patch=PATCH)
    recorder, result = _record(world, FULL)
    assert result.patch_result.status == "passed"
    trace = _trace(recorder)
    steps = list(trace.steps)
    index = next(i for i, s in enumerate(steps) if s.effect == Bench("run_poc", "pocs/b.bin"))
    answer = steps[index].answer
    steps[index] = type(steps[index])(steps[index].effect, _with_code(answer, 1))
    edited = Trace(trace.options, tuple(steps), trace.result)
    replayed = replay(_round_trip(edited))
    assert replayed.result.patch_result.status == "failed"
    assert replayed.result.patch_result.pov_passed == 1
    assert replayed.result.patch_result.error_msg == "PoC failed: /task/pocs/b.bin"
    assert "patch_result.pov_passed: 2 → 1" in replayed.changes
    assert replayed.recorded == result


def _with_code(answer: object, code: int) -> object:
    assert isinstance(answer, ScriptResult)
    return replace(answer, code=code)


def test_a_program_asking_for_another_effect_diverges() -> None:
    world = FakeWorld(patch=PATCH)
    recorder, _ = _record(world, FULL)
    trace = _trace(recorder)
    more = FULL.model_copy(
        update={"files": FULL.files.model_copy(update={"poc": ("pocs/a.bin", "pocs/c.bin")})}
    )
    changed = Trace(GradeOptions(task=more, folder="/task"), trace.steps, trace.result)
    with pytest.raises(Diverged, match=r"asks for Bench\(action='run_poc', poc='pocs/c.bin'\)"):
        replay(changed)


def test_a_program_ending_early_or_late_diverges() -> None:
    world = FakeWorld(patch=PATCH)
    recorder, _ = _record(world, FULL)
    trace = _trace(recorder)
    written = next(i for i, s in enumerate(trace.steps) if isinstance(s.effect, WriteResult))
    short = Trace(trace.options, trace.steps[:written], trace.result)
    with pytest.raises(Diverged, match="asks for WriteResult, past the end of the trace"):
        replay(short)
    longer = Trace(trace.options, (*trace.steps, trace.steps[-1]), trace.result)
    with pytest.raises(Diverged, match="the grading program ended, the trace holds 1 more"):
        replay(longer)


def test_reports_are_not_matched_but_questions_are() -> None:
    interpreter = Replay(_trace(_record(FakeWorld(patch=PATCH), FULL)[0]))
    plan, first, second = interpreter.trace.steps[:3]
    assert interpreter(plan.effect) is None
    assert isinstance(second.effect, CheckFinished)
    assert interpreter(first.effect) is first.answer
    other = replace(second.effect.record, exit_code=5, passed=False)
    assert interpreter(CheckFinished(other)) is None  # what the program reports may change
    with pytest.raises(Diverged, match=r"step 3: .* asks for Notify, the trace holds CheckStarted"):
        interpreter(Notify("x"))
    with pytest.raises(Diverged, match=r"asks for Bench\(action='build', poc=None\)"):
        Replay(interpreter.trace)(Bench("build"))


def test_the_replay_interpreter_cannot_be_caught_by_the_program() -> None:
    async def swallow() -> str:
        try:
            await Notify("x")
        except Exception:  # noqa: BLE001 - the program under test catches everything
            return "swallowed"
        return "answered"

    empty = Trace(GradeOptions(task=FULL, folder="/t"), ())
    with pytest.raises(Diverged):
        run(swallow(), Replay(empty))


def test_an_escaped_exception_becomes_the_evaluators_error_document() -> None:
    runtime = RuntimeResult(agent_duration=3)
    interrupted = escaped_result(InterruptRaised(signal="SIGTERM"), runtime)
    assert interrupted.patch_result.error_msg == "Interrupted (SIGTERM)"
    assert interrupted.runtime_result == runtime.model_copy(update={"error_kind": "infrastructure"})
    crashed = escaped_result(ErrorRaised(type="OSError", message="disk full"), runtime)
    assert (crashed.patch_result.status, crashed.patch_result.error_msg) == (
        "error",
        "Exception: disk full",
    )
    assert crashed.runtime_result.error_kind == "infrastructure"  # as the evaluator wrote it
    bug = escaped_result(ErrorRaised(type="KeyError", message="'x'"), runtime)
    assert bug.runtime_result.error_kind == "grader"
    limit = escaped_result(raised_of(TimeLimitReached(9)), runtime)
    assert limit.patch_result.error_msg == "Exception: the time limit of 9s is spent"


def test_the_evaluator_and_the_replay_write_the_same_escaped_document(tmp_path: Path) -> None:
    """An exception escaping the grading program: the document the evaluator writes and the one
    a replay of its trace derives are the same, but for the traceback the trace does not keep."""
    runtime = RuntimeResult(agent_duration=3)
    broken = OSError("disk full")

    def crash() -> EvaluationResult:
        raise broken

    written = graded(tmp_path, runtime, crash)
    assert written == EvaluationResult.model_validate_json((tmp_path / "result.json").read_text())
    assert written.patch_result.error_msg == "Exception: disk full"
    assert "OSError: disk full" in (written.patch_result.error_log or "")
    derived = escaped_result(raised_of(broken), runtime)
    assert derived.patch_result.error_log is None
    assert (
        written.model_copy(
            update={"patch_result": written.patch_result.model_copy(update={"error_log": None})}
        )
        == derived
    )


@given(exceptions)
def test_exceptions_are_recorded_and_raised_again(exc: Exception) -> None:
    """Property: the exception rebuilt from a record is recorded the same, with the message
    the grading program would have read."""
    again = exception_of(raised_of(exc))
    assert raised_of(again) == raised_of(exc)
    assert (str(again) or type(again).__name__) == (str(exc) or type(exc).__name__)
    if isinstance(again, RecordedError):
        assert again.type == type(exc).__name__


def test_verdict_changes_ignore_only_tracebacks_of_crashes() -> None:
    def doc(msg: str | None, log: str | None) -> EvaluationResult:
        return EvaluationResult.model_validate(
            {"patch_result": {"status": "error", "error_msg": msg, "error_log": log}}
        )

    assert verdict_changes(doc("Exception: x", "line 1"), doc("Exception: x", "line 2")) == ()
    assert verdict_changes(doc("Timeout (5s)", "a"), doc("Timeout (5s)", "b")) == (
        "patch_result.error_log: 'a' → 'b'",
    )
    extra = EvaluationResult.model_validate({"patch_result": {"status": "passed"}, "k": 1})
    plain = EvaluationResult.model_validate({"patch_result": {"status": "passed"}})
    assert verdict_changes(plain, extra) == ("k: None → 1",)


# ---------------------------------------------------------------------------- reading


def _good() -> bytes:
    recorder, _ = _record(FakeWorld(patch=PATCH, archive_error="full"), FULL)
    return dump_trace(_trace(recorder))


def _error(data: bytes) -> str:
    parsed = parse_trace(data)
    assert not is_successful(parsed)
    message = parsed.failure().message
    assert "\n" not in message
    return message


def test_the_format_is_json_lines_with_a_versioned_header() -> None:
    lines = _good().decode().splitlines()
    records = [json.loads(line) for line in lines]
    assert records[0]["kind"] == "header"
    assert (records[0]["format"], records[0]["version"]) == ("ssegrade-trace", 1)
    assert records[-1]["kind"] == "end"
    assert [r["step"] for r in records[1:-1]] == list(range(len(records) - 2))
    assert records[1]["kind"] == "MayRunAhead"
    assert records[2]["kind"] == "PrepareGrading"
    assert set(records[2]["answer"]) == {"ok"}
    archive = next(r for r in records if r["kind"] == "Archive")
    assert archive["answer"] == {"error": {"message": "full"}}


def test_every_truncation_is_one_clear_error() -> None:
    data = _good()
    for cut in range(len(data) - 1):
        message = _error(data[:cut])
        assert message.startswith("trace"), message
    assert "truncated after line" in _error(data[: data.rindex(b"\n", 0, -1) + 1])


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda r: r[:1] + r[2:], "trace line 2: step 0 expected, found 1"),
        (lambda r: [*r[:1], r[0], *r[1:]], "trace line 2: a second header"),
        (lambda r: [*r, r[1]], "records after the end record"),
        (lambda r: [r[1], *r[1:]], "trace line 1: not an ssegrade trace"),
        (lambda r: [{**r[0], "version": 2}, *r[1:]], "format version 2; this ssegrade reads 1"),
        (lambda r: [r[0], {**r[1], "kind": "Launch"}, *r[2:]], "trace line 2: Input tag 'Launch'"),
        (lambda r: [*r[:2], {**r[2], "answer": 3}, *r[3:]], "trace line 3: PrepareGrading.answer"),
        (
            lambda r: [r[0], {**r[1], "raised": {"exception": "TimeLimitReached", "seconds": 1}}],
            "either an answer or a raised exception",
        ),
        (lambda r: [*r[:-1], {**r[-1], "steps": 1}], "the end record counts 1 steps"),
        (lambda r: [*r[:-1], {**r[-1], "result": None}], "either the result or the exception"),
    ],
)
def test_a_malformed_trace_is_one_clear_error(edit: Any, expected: str) -> None:
    records = [json.loads(line) for line in _good().splitlines()]
    data = "".join(json.dumps(r) + "\n" for r in edit(records)).encode()
    assert expected.replace("reads 1", "reads version 1") in _error(data)


def test_a_step_answer_is_checked_against_its_effect() -> None:
    records = [json.loads(line) for line in _good().splitlines()]
    bench = next(i for i, r in enumerate(records) if r["kind"] == "Bench")
    records[bench]["answer"]["code"] = "zero"
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    assert (
        _error(data)
        == f"trace line {bench + 1}: Bench.answer.code: Input should be a valid integer"
    )


def test_patch_bytes_survive_the_trace() -> None:
    trace = _round_trip(_trace(_record(FakeWorld(patch=PATCH), FULL)[0]))
    prepared = trace.steps[1].answer
    assert isinstance(prepared, Success)
    assert prepared.unwrap().patch == PATCH


def test_a_recorder_that_never_graded_has_no_trace() -> None:
    assert TraceRecorder().trace() is None
