"""Writing a trace file: where it may go, atomically, and what happens when it cannot be."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from interpreters.app.setup import InputError, NotWritten
from interpreters.app.trace import TraceRecorder, recording
from ssegrade import (
    EvaluationResult,
    GradeOptions,
    PatchResult,
    Task,
    TimeLimitReached,
    bencher_interpreter,
    grade,
    run,
)
from ssegrade.internal.effects import Bench, Notify, RunScript, Workspace
from ssegrade.testing import FakeWorld
from ssegrade.trace import TimeLimitRaised, TraceStep, parse_trace


def _grade(recorder: TraceRecorder | None) -> None:
    assert recorder is not None
    world = FakeWorld()
    task = Task(id="t1")
    interpret = bencher_interpreter(world.session(task), world)
    options = GradeOptions(task=task, folder="/t")
    recorder.begin(options)
    recorder.end(run(grade(options), interpret, None, recorder.observe))


def _block(
    path: Path, *, grade: bool = True, remove: Path | None = None, fail: bool = False
) -> None:
    """A `recording` block: grade, then optionally remove a folder, then optionally fail."""
    with recording(path) as recorder:
        if grade:
            _grade(recorder)
        if remove is not None:
            shutil.rmtree(remove)
        if fail:
            raise KeyboardInterrupt


def test_the_trace_is_written_when_the_block_ends(tmp_path: Path) -> None:
    target = tmp_path / "t.trace"
    with recording(target) as recorder:
        _grade(recorder)
        assert not target.exists()
    assert target.stat().st_mode & 0o777 == 0o600
    trace = parse_trace(target.read_bytes()).unwrap()
    assert trace.result is not None
    assert trace.result.patch_result.status == "error"  # a task with no checks
    assert [p.name for p in tmp_path.iterdir()] == ["t.trace"]  # no temporary file left


def test_the_trace_is_written_when_grading_raises(tmp_path: Path) -> None:
    target = tmp_path / "t.trace"
    with pytest.raises(KeyboardInterrupt):
        _block(target, fail=True)
    assert parse_trace(target.read_bytes()).unwrap().steps


def test_nothing_is_written_when_grading_never_started(tmp_path: Path) -> None:
    target = tmp_path / "t.trace"
    with pytest.raises(KeyboardInterrupt):
        _block(target, grade=False, fail=True)
    assert not target.exists()
    with recording(None) as nothing:
        assert nothing is None


def test_a_link_in_place_of_the_trace_is_refused_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "t.trace").symlink_to(victim)
    with pytest.raises(InputError, match="exists and is not a regular file"):
        _block(tmp_path / "t.trace")
    assert victim.read_text() == "keep"


def test_a_trace_needs_an_existing_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="No such file or directory"):
        _block(tmp_path / "none" / "t.trace")
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="is not a folder"):
        _block(tmp_path / "file" / "t.trace")


def test_a_trace_that_cannot_be_written_is_said(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="interpreters")
    folder = tmp_path / "gone"
    folder.mkdir()
    with pytest.raises(NotWritten, match="trace not written to"):
        _block(folder / "t.trace", remove=folder)
    folder.mkdir()
    with pytest.raises(KeyboardInterrupt):  # the grading's own ending is kept
        _block(folder / "t.trace", remove=folder, fail=True)
    assert "ssegrade: warning: trace not written:" in caplog.text


def test_the_recorder_keeps_what_the_program_saw() -> None:
    recorder = TraceRecorder()
    recorder.observe(Notify("a"), None, None)
    recorder.observe(Bench("build"), None, TimeLimitReached(3))  # thrown by the run loop
    recorder.observe(Notify("b"), None, KeyboardInterrupt())  # escapes the program whole
    recorder.observe(RunScript("build.sh", (), Workspace("/w"), "build"), None, None)
    assert [(step.effect, step.raised) for step in recorder.steps] == [
        (Notify("a"), None),
        (Bench("build"), TimeLimitRaised(seconds=3)),
    ]


def _wrong_answer(path: Path) -> None:
    with recording(path) as recorder:
        assert recorder is not None
        recorder.options = GradeOptions(task=Task(id="t1"), folder="/t")
        recorder.steps.append(TraceStep(Bench("build"), "not a script result"))
        recorder.result = EvaluationResult(patch_result=PatchResult(status="error"))


def test_an_answer_that_does_not_fit_its_effect_is_said_not_written(tmp_path: Path) -> None:
    with pytest.raises(NotWritten, match=r"trace not written to .*Bench"):
        _wrong_answer(tmp_path / "t.trace")
    assert not (tmp_path / "t.trace").exists()
