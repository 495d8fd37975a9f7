"""The guard's pinned-options re-run in the grading program (fake world): only the PoCs that
passed are run again, after `result.json` is written, with the options pinned; a run that
triggers is an `evidence` flag; whatever a re-run answers, the document stays the same; a
refusal or a skip is a note."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from interpreters.app.trace import TraceRecorder
from ssegrade import (
    Deadline,
    Effect,
    GradeOptions,
    RuntimeResult,
    Task,
    bencher_interpreter,
    grade,
    run,
)
from ssegrade.guard._pinning import pins
from ssegrade.internal.effects import (
    CheckFinished,
    RerunPoc,
    RunScript,
    ScriptResult,
    WriteGuard,
    WriteResult,
)
from ssegrade.internal.task import Files, Scripts
from ssegrade.testing import FakeWorld, Script
from ssegrade.trace import Trace, replay

TASK = Task(
    id="c-1",
    sanitizer="address",
    language="c",
    scripts=Scripts(build="build.sh", run="run.sh", test="test.sh"),
    files=Files(poc=("pocs/a.bin", "pocs/b.bin"), future_test="diffs/test.diff"),
)
PATCH = b"--- a/src/x.c\n+++ b/src/x.c\n@@ -1 +1 @@\n-a\n+b\n"
ASAN = "==7==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6020\n"


def _graded(scripts: dict[str, Script], task: Task = TASK) -> FakeWorld:
    world = FakeWorld(patch=PATCH, scripts=scripts)
    world.grade(task)
    return world


def _reruns(world: FakeWorld) -> list[RunScript]:
    return [e for e in world.trace if isinstance(e, RunScript) and e.label.startswith("guard-")]


outputs = st.sampled_from(["", ASAN, "panic: index out of range\n", "runtime error: x\n", "ok"])
answers = st.builds(
    Script,
    code=st.sampled_from([0, 1, 2, -1, 134]),
    stdout=outputs,
    stderr=outputs,
    killed=st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(
    graded=st.fixed_dictionaries({"poc-1": answers, "poc-2": answers, "function_test": answers}),
    rerun=st.dictionaries(st.sampled_from(["guard-poc-1", "guard-poc-2"]), answers),
    language=st.sampled_from(["c", "go", "rust"]),
)
def test_no_rerun_answer_changes_the_document(
    graded: dict[str, Script], rerun: dict[str, Script], language: str
) -> None:
    """Property: the same grading, whatever the re-runs answer, writes the same document,
    once, before any re-run; only PoCs that passed are re-run, in the build's copy."""
    task = TASK.model_copy(update={"language": language})
    plain = _graded(graded, task)
    again = _graded({**graded, **rerun}, task)
    assert plain.result == again.result
    assert plain.artifacts["result.json"] == again.artifacts["result.json"]
    kinds = [type(e) for e in again.trace]
    assert kinds.count(WriteResult) == 1
    reruns = _reruns(again)
    if reruns:
        assert kinds.index(WriteResult) < again.trace.index(reruns[0])
    passed = [
        f"guard-{label}"
        for label in ("poc-1", "poc-2")
        if graded[label].code == 0 and not graded[label].killed
    ]
    assert [e.label for e in reruns] == passed
    builds = [e.workspace for e in again.trace if isinstance(e, RunScript) and e.label == "build"]
    assert all(e.workspace == builds[0] for e in reruns)
    pin = pins(task.sanitizer, language)
    assert pin is not None
    assert all(e.env == pin.env and e.limit is not None for e in reruns)


def test_a_poc_that_triggers_once_pinned_is_an_evidence_flag() -> None:
    world = _graded({"guard-poc-2": Script(code=1, stderr=ASAN)})
    assert world.result is not None
    assert world.result.patch_result.status == "passed"
    assert world.guard is not None
    (flag,) = [f for f in world.guard.flags if f.confidence == "evidence"]
    assert (flag.kind, flag.where) == ("sanitizer", "pocs/b.bin")
    assert "heap-buffer-overflow" in flag.why
    records = [(r.name, r.poc, r.exit_code) for r in world.checks if r.name == "guard"]
    assert records == [("guard", "/task/pocs/a.bin", 0), ("guard", "/task/pocs/b.bin", 1)]
    (env,) = {e.env for e in _reruns(world)}
    assert dict(env)["ASAN_OPTIONS"] == (
        "exitcode=1:halt_on_error=1:abort_on_error=0:log_path=stderr"
    )


def test_an_exit_without_a_report_or_a_kill_is_a_note_not_a_flag() -> None:
    world = _graded(
        {"guard-poc-1": Script(code=3, stderr="flaky"), "guard-poc-2": Script(killed=True)}
    )
    assert world.guard is not None
    assert not world.guard.flags
    assert any("pocs/a.bin exited 3 without a report" in n for n in world.guard.notes)
    assert any("pocs/b.bin was killed" in n for n in world.guard.notes)


def test_a_go_panic_swallowed_in_the_grade_is_a_crash_handler_flag() -> None:
    task = TASK.model_copy(update={"sanitizer": None, "language": "go"})
    world = _graded({"guard-poc-1": Script(code=2, stderr="panic: runtime error\n")}, task)
    assert world.guard is not None
    (flag,) = world.guard.flags
    assert (flag.kind, flag.confidence, flag.where) == ("crash-handler", "evidence", "pocs/a.bin")
    assert {e.env for e in _reruns(world)} == {(("GOTRACEBACK", "crash"),)}


def test_no_rerun_without_a_sanitizer_or_a_panicking_language() -> None:
    task = TASK.model_copy(update={"sanitizer": None, "language": "python"})
    assert not _reruns(_graded({}, task))


def test_no_rerun_when_grading_did_not_finish() -> None:
    world = _graded({"function_test": Script(time_limit=True)})
    assert not _reruns(world)


def _refusing(world: FakeWorld, task: Task) -> Any:
    inner = bencher_interpreter(world.session(task), world, Deadline.starting(3600, world.clock))

    def interpret(effect: Effect[Any]) -> object:
        if isinstance(effect, RerunPoc):
            raise TypeError("not an effect the evaluator answers locally")
        return inner(effect)

    return interpret


def test_an_interpreter_that_refuses_the_rerun_leaves_a_note() -> None:
    """The daemon's interpreter does not run it: a note, and the guard still written."""
    world = FakeWorld(patch=PATCH)
    result = run(grade(GradeOptions(task=TASK, folder="/task")), _refusing(world, TASK))
    assert result.patch_result.status == "passed"
    assert world.guard is not None
    assert any("did not run: refused" in n for n in world.guard.notes), world.guard.notes
    assert WriteGuard in [type(e) for e in world.trace]


def test_a_rerun_skipped_for_lack_of_time_leaves_a_note() -> None:
    world = FakeWorld(patch=PATCH)

    def system(effect: Effect[Any]) -> object:
        if isinstance(effect, RunScript) and effect.label.startswith("guard-"):
            return ScriptResult(code=-1, not_started="too little time left (3s of the grading's)")
        return world(effect)

    run(
        grade(GradeOptions(task=TASK, folder="/task")),
        bencher_interpreter(world.session(TASK), system),
    )
    assert world.guard is not None
    assert not world.guard.flags
    assert any("too little time left" in n for n in world.guard.notes), world.guard.notes


def test_a_trace_from_before_the_reruns_replays_to_the_same_grade() -> None:
    """A trace recorded before the re-runs holds no `RerunPoc` step (nor its `guard` line):
    the replay refuses the re-run, the guard notes it, and the grade is the same."""
    world = FakeWorld(patch=PATCH)
    recorder = TraceRecorder()
    options = GradeOptions(task=TASK, folder="/task", runtime=RuntimeResult())
    recorder.begin(options)
    recorder.end(
        run(grade(options), bencher_interpreter(world.session(TASK), world), None, recorder.observe)
    )
    trace = recorder.trace()
    assert trace is not None
    assert any(isinstance(s.effect, RerunPoc) for s in trace.steps)
    old = tuple(
        s
        for s in trace.steps
        if not isinstance(s.effect, RerunPoc)
        and not (isinstance(s.effect, CheckFinished) and s.effect.record.name == "guard")
    )
    replayed = replay(Trace(trace.options, old, trace.result))
    assert replayed.changes == ()
    assert replayed.result == trace.result
