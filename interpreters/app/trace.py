"""Recording a grading's trace (`ssegrade evaluate --trace FILE`).

Application layer. `TraceRecorder` is a plain observer of the run loop of the grading program
(`run(…, observe=recorder.observe)`; its effects are `PrepareGrading`, `Bench`, `Archive`, …):
whoever runs the program tells it the options (`begin`) and how the program ended (`end`), and
it keeps every effect with its answer, or the exception thrown into the program in its place.
`recording` writes the trace atomically once grading ends, whether it ended with a grade, an
error, a time limit or a signal. The format is `ssegrade.trace`'s; `ssegrade replay` reads it
back.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from interpreters.app.setup.errors import InputError, NotWritten
from interpreters.real import files
from ssegrade import Effect, EvaluationResult, GradeOptions, GradingEffect
from ssegrade.trace import Raised, Trace, TraceStep, dump_trace, raised_of

__all__ = ["TraceRecorder", "recording"]

_log = logging.getLogger(__name__)


class TraceRecorder:
    """Keeps the steps of one grading: told its options, observing its run loop, told its
    end; it never runs the program itself."""

    def __init__(self) -> None:
        self.options: GradeOptions | None = None
        self.steps: list[TraceStep] = []
        self.result: EvaluationResult | None = None
        self.raised: Raised | None = None

    def begin(self, options: GradeOptions) -> None:
        """The grading program starts with `options`."""
        self.options = options

    def observe(self, effect: Effect[Any], answer: object, error: BaseException | None) -> None:
        """Keep one step as the program saw it: the answer, or the exception in its place
        (an interrupt that lands after an answer, the time limit the run loop throws)."""
        if not isinstance(effect, GradingEffect):
            return
        if error is None:
            self.steps.append(TraceStep(effect, answer))
        elif isinstance(error, Exception):
            self.steps.append(TraceStep(effect, raised=raised_of(error)))

    def end(self, result: EvaluationResult | None = None, error: Exception | None = None) -> None:
        """The program returned `result`, or `error` escaped it."""
        self.result = result
        self.raised = None if error is None else raised_of(error)

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
        raise InputError(f"--trace {path}: {path.parent}: {exc.strerror}") from exc
    if not stat.S_ISDIR(parent.st_mode):
        raise InputError(f"--trace {path}: {path.parent} is not a folder")
    try:
        here = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise InputError(f"--trace {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(here.st_mode):
        raise InputError(f"--trace {path}: exists and is not a regular file")
    return path


def _write(path: Path, recorder: TraceRecorder) -> None:
    trace = recorder.trace()
    if trace is not None:
        files.atomic_write(path, dump_trace(trace), mode=0o600)


@contextmanager
def recording(path: Path | None) -> Iterator[TraceRecorder | None]:
    """A recorder whose trace is written to `path` (mode 0600, atomically) when the block
        ends, also when it ends with an exception; nothing is written if grading never started.
        None when `path` is None. `InputError` up front when `path` cannot be a trace file,
    `NotWritten` when the trace cannot be written once grading ended well."""
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
            _log.warning("ssegrade: warning: trace not written: %s", exc)
        raise
    try:
        _write(target, recorder)
    except (OSError, ValueError) as exc:
        raise NotWritten(f"trace not written to {target}: {exc}") from exc
