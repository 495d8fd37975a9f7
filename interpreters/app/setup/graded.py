"""A grading whose result is written whatever happens: an interrupt, a crash, a time limit.

Application layer. `graded` runs a grading with SIGTERM and SIGINT turned into
`SignalArrived` where it is, and writes an `error` result itself when something escapes
the grading program.
"""

from __future__ import annotations

import errno
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from interpreters.app.setup.errors import Interrupted, NotWritten
from interpreters.real.resultsfolder import holding, write_result
from interpreters.real.unraisable import signal_again, unraisable_here
from ssegrade import EvaluationResult, RuntimeResult
from ssegrade.internal import verdict
from ssegrade.internal.program import Seen, SignalArrived, crashed

__all__ = ["graded", "interrupts_raise", "verdict_line"]


@dataclass(slots=True)
class _Signals:
    first: int | None = None


@contextmanager
def interrupts_raise() -> Iterator[_Signals]:
    """The first SIGTERM or SIGINT raises `SignalArrived` where grading is; later ones
    are only noted, so that the result (and the clean-up) is written whole."""
    state = _Signals()

    def interrupt(signum: int, frame: FrameType | None) -> None:
        if state.first is not None:
            return
        if unraisable_here(frame):  # raised there, it would be lost: signalled again later
            signal_again(signum)
            return
        state.first = signum
        raise SignalArrived(signal.Signals(signum).name)

    previous: dict[signal.Signals, Any] = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, interrupt)
        yield state
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def graded(
    results: Path,
    runtime: RuntimeResult,
    grade: Callable[[], EvaluationResult],
    seen: Seen | None = None,
    free: Callable[[], object] | None = None,
) -> EvaluationResult:
    """Run `grade`; SIGTERM/SIGINT become `SignalArrived`, which the grading program
    turns into an ending of its grade, and whatever escapes it still leaves a result.json
    behind (`NotWritten` when even that cannot be written): an `error`, unless a check the
    grading saw finish (`seen`, which `grade` fills) had failed, which decides the grade.
    When the disk is full (the patch's code may have filled it), `free` is called (it
    removes what the grading made in its scratch folder) and the write tried once more.
    After an interrupt, raises `Interrupted` (exit 130 or 143) once the result is written."""
    with interrupts_raise() as signals:
        try:
            result = grade()
        except Exception as exc:  # noqa: BLE001 - the grade must still be written
            if isinstance(exc, SignalArrived):
                ending: verdict.Crashed | verdict.Signalled = verdict.Signalled(exc.signal)
            else:
                ending = crashed(exc)
            outcomes = seen.outcomes(ending) if seen is not None else None
            result = verdict.not_graded(ending, runtime, outcomes)
            try:
                _write_freeing(results, result.to_json(), free)
            except OSError as write_error:
                raise NotWritten(f"result.json not written: {write_error}") from exc
        holding.unmark_finished(results)
    if signals.first is not None:
        raise Interrupted(signals.first)
    return result


def _write_freeing(results: Path, text: bytes, free: Callable[[], object] | None) -> None:
    """Write `result.json` of `results`; on a full disk, call `free` and try once more."""
    try:
        write_result(results, text)
    except OSError as exc:
        if exc.errno != errno.ENOSPC or free is None:
            raise
        free()
        write_result(results, text)


def verdict_line(result: EvaluationResult) -> str:
    """What `evaluate` prints on stdout: the status, and the first failure if any."""
    patch = result.patch_result
    return patch.status if patch.error_msg is None else f"{patch.status}: {patch.error_msg}"
