"""Replaying a recorded trace: the grading program against the answers it got then.

Pure core: `Replay`, an interpreter that touches nothing, answers each grading effect with
the recorded answer (or throws the recorded exception) and stops with `Diverged` when the
program asks for an effect the trace does not hold at that step. The patch guard's effects, which a
trace recorded before the guard existed does not hold, are answered as if nothing was
observed. `replay` re-grades a trace with the current rules and compares the document with the
recorded one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ssegrade.guard._facts import GuardFacts
from ssegrade.internal.effects import Effect, MayRunAhead, ObserveGuard, RerunPoc, WriteGuard
from ssegrade.internal.program import Seen, crashed, grade
from ssegrade.internal.result import EvaluationResult, RuntimeResult
from ssegrade.internal.run import run
from ssegrade.internal.verdict import Crashed, Signalled, not_graded
from ssegrade.trace._changes import verdict_changes
from ssegrade.trace._codec import answer_type
from ssegrade.trace._document import Trace
from ssegrade.trace._raised import InterruptRaised, Raised, exception_of, raised_of

__all__ = ["Diverged", "Replay", "Replayed", "replay"]


class Diverged(BaseException):
    """The grading program asked for an effect the trace does not hold at that step: the
    rules changed in a way that needs a new grading. A `BaseException`, so that the grading
    program, which turns any `Exception` into an `error` grade, cannot swallow it."""


def _asks_for_input(effect: Effect[Any]) -> bool:
    return answer_type(type(effect)) is not type(None)


def _describe(effect: Effect[Any]) -> str:
    return repr(effect) if _asks_for_input(effect) else type(effect).__name__


def _matches(asked: Effect[Any], recorded: Effect[Any]) -> bool:
    """The same kind of effect; for effects whose answer carries information, also the same
    arguments. What the program only reports (a check record, a note, the document) may
    change with the rules."""
    if type(asked) is not type(recorded):
        return False
    return not _asks_for_input(asked) or asked == recorded


@dataclass(slots=True)
class Replay:
    """The interpreter of a recorded trace: step by step, the recorded answers."""

    trace: Trace
    position: int = field(default=0)

    def __call__(self, effect: Effect[Any]) -> object:
        """Answer the next step, or raise `Diverged`."""
        steps = self.trace.steps
        recorded = steps[self.position].effect if self.position < len(steps) else None
        if isinstance(effect, MayRunAhead) and not isinstance(recorded, MayRunAhead):
            return None  # a trace from before the plan was said: nothing ran ahead by it
        if isinstance(effect, ObserveGuard | WriteGuard) and type(recorded) is not type(effect):
            # A trace from before the patch guard: the guard observes nothing, writes nothing.
            return GuardFacts() if isinstance(effect, ObserveGuard) else None
        if isinstance(effect, RerunPoc) and type(recorded) is not RerunPoc:
            # A trace from before the guard's re-runs: the guard notes it was not run.
            raise LookupError("the trace holds no re-run")
        if self.position >= len(steps):
            raise Diverged(
                f"step {self.position}: the grading program asks for {_describe(effect)}, "
                "past the end of the trace"
            )
        step = steps[self.position]
        if not _matches(effect, step.effect):
            raise Diverged(
                f"step {self.position}: the grading program asks for {_describe(effect)}, "
                f"the trace holds {_describe(step.effect)}"
            )
        self.position += 1
        if step.raised is not None:
            raise exception_of(step.raised)
        return step.answer

    def done(self) -> None:
        """Raise `Diverged` when the program ended before the trace did."""
        if self.position != len(self.trace.steps):
            left = len(self.trace.steps) - self.position
            raise Diverged(
                f"step {self.position}: the grading program ended, the trace holds {left} "
                "more steps"
            )


def escaped_result(
    raised: Raised, runtime: RuntimeResult, seen: Seen | None = None
) -> EvaluationResult:
    """The document the evaluator writes itself when an exception escapes the grading
    program (as `interpreters.app.setup.graded` does: decided by a failed check among those
    `seen` to finish, else an `error`), without the traceback the trace does not keep."""
    ending: Signalled | Crashed
    if isinstance(raised, InterruptRaised):
        ending = Signalled(raised.signal)
    else:
        ending = replace(crashed(exception_of(raised)), detail=None)
    return not_graded(ending, runtime, None if seen is None else seen.outcomes(ending))


@dataclass(frozen=True, slots=True)
class Replayed:
    """What the current rules derive from a trace (`result`), what was recorded, and the
    fields that differ (empty when the verdict is the same)."""

    result: EvaluationResult
    recorded: EvaluationResult
    changes: tuple[str, ...]


def _document(
    result: EvaluationResult | None, raised: Raised | None, trace: Trace, seen: Seen
) -> Any:
    if result is not None:
        return result
    if raised is None:
        raise ValueError("the trace holds neither a document nor an exception")
    return escaped_result(raised, trace.options.runtime, seen)


def replay(trace: Trace) -> Replayed:
    """Re-grade `trace` with the current rules, offline; raises `Diverged` when the program
    asks for an effect the trace does not hold at that step."""
    interpreter = Replay(trace)
    result: EvaluationResult | None = None
    raised: Raised | None = None
    seen = Seen()  # the same steps as the recorded run: what it saw, it sees
    try:
        result = run(grade(trace.options, seen), interpreter)
    except Exception as exc:  # noqa: BLE001 - escaped the program, as in the recorded run
        raised = raised_of(exc)
    interpreter.done()
    now = _document(result, raised, trace, seen)
    before = _document(trace.result, trace.raised, trace, seen)
    return Replayed(now, before, verdict_changes(before, now))
