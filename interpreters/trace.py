"""Recording a grading's trace (`ssegrade evaluate --trace FILE`).

Interpreter layer. `TraceRecorder` observes the run loop of the grading program (its effects
are `PrepareGrading`, `Bench`, `Archive`, …) and keeps every effect with its answer, or the
exception thrown into the program in its place; `recording` writes the trace atomically once
grading ends, whether it ended with a grade, an error, a time limit or a signal. The format is
`ssegrade.trace`'s; `ssegrade replay` reads it back.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from interpreters.real import files
from interpreters.setup import BadInput
from ssegrade import (
    Deadline,
    Effect,
    EvaluationResult,
    GradeOptions,
    GradingEffect,
    Interpreter,
    grade,
    run,
)
from ssegrade.trace import Raised, Trace, TraceStep, dump_trace, raised_of

__all__ = ["TraceRecorder", "recording"]


class TraceRecorder:
    """Keeps the steps of one grading: wrap its grading-layer interpreter with `grade`."""

    def __init__(self) -> None:
        self.options: GradeOptions | None = None
        self.steps: list[TraceStep] = []
        self.result: EvaluationResult | None = None
        self.raised: Raised | None = None

    def observe(self, effect: Effect[Any], answer: object, error: BaseException | None) -> None:
        """Keep one step as the program saw it: the answer, or the exception in its place
        (an interrupt that lands after an answer, the time limit the run loop throws)."""
        if not isinstance(effect, GradingEffect):
            return
        if error is None:
            self.steps.append(TraceStep(effect, answer))
        elif isinstance(error, Exception):
            self.steps.append(TraceStep(effect, raised=raised_of(error)))

    def grade(
        self, options: GradeOptions, interpret: Interpreter, deadline: Deadline | None = None
    ) -> EvaluationResult:
        """Run the grading program over `interpret` within `deadline`, recording its options,
        every step and the document it returns (or what escaped it)."""
        self.options = options
        try:
            self.result = run(grade(options), interpret, deadline, self.observe)
        except Exception as exc:
            self.raised = raised_of(exc)
            raise
        return self.result

    def trace(self) -> Trace | None:
        """The trace so far, or None when grading never started."""
        if self.options is None:
            return None
        return Trace(self.options, tuple(self.steps), self.result, self.raised)


def _target(path: Path) -> Path:
    path = path.absolute()
    try:
        parent = os.stat(path.parent)
    except OSError as exc:
        raise BadInput(f"--trace {path}: {path.parent}: {exc.strerror}") from exc
    if not stat.S_ISDIR(parent.st_mode):
        raise BadInput(f"--trace {path}: {path.parent} is not a folder")
    try:
        here = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise BadInput(f"--trace {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(here.st_mode):
        raise BadInput(f"--trace {path}: exists and is not a regular file")
    return path


def _write(path: Path, recorder: TraceRecorder) -> None:
    trace = recorder.trace()
    if trace is not None:
        files.atomic_write(path, dump_trace(trace), mode=0o600)


@contextmanager
def recording(path: Path | None) -> Iterator[TraceRecorder | None]:
    """A recorder whose trace is written to `path` (mode 0600, atomically) when the block
    ends, also when it ends with an exception; nothing is written if grading never started.
    None when `path` is None. `BadInput` up front when `path` cannot be a trace file."""
    if path is None:
        yield None
        return
    target = _target(path)
    recorder = TraceRecorder()
    try:
        yield recorder
    except BaseException:
        try:
            _write(target, recorder)
        except (OSError, ValueError) as exc:
            click.echo(f"ssegrade: warning: trace not written: {exc}", err=True)
        raise
    try:
        _write(target, recorder)
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"trace not written to {target}: {exc}") from exc
