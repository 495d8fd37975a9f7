"""The run loop: drives a program (a coroutine awaiting effects) with an interpreter.

Pure core. An interpreter is a function from an effect to its answer; an exception it raises
(any `BaseException`, a `KeyboardInterrupt` too) is thrown into the program at the `await`
that asked, so programs handle failures where they happen and their `finally` clean-ups still
await effects.

The loop also owns the one time limit of a run (`Deadline`). Once the deadline has passed, the
next effect is not interpreted, and an effect answered after it is not answered: in either case
`TimeLimitReached` is thrown into the program instead, once; the effects the program awaits
after that (its clean-up, writing the grade) are interpreted as usual. Interpreters only bound
their blocking work (a script, a copy, a git command) by the same deadline.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ssegrade.internal.effects import Effect, TimeLimitReached

__all__ = ["RESERVE", "Deadline", "Interpreter", "Observer", "run", "script_limit"]

T = TypeVar("T")

Interpreter = Callable[[Effect[Any]], object]


class Observer(Protocol):
    """Told each effect and what the program got for it: an answer, or the exception thrown
    into it in its place (a trace recorder is one)."""

    def __call__(self, effect: Effect[Any], answer: object, error: BaseException | None) -> None:
        """Take one step as the program saw it."""


@dataclass(frozen=True, slots=True)
class Deadline:
    """A time limit of `seconds`, spent at `at` on `clock` (e.g. `time.monotonic`).

    >>> now = [100.0]
    >>> deadline = Deadline.starting(10, lambda: now[0])
    >>> deadline.left(), deadline.passed()
    (10.0, False)
    >>> now[0] = 110.0
    >>> deadline.left(), deadline.passed()
    (0.0, True)
    """

    seconds: int
    clock: Callable[[], float]
    at: float

    @classmethod
    def starting(cls, seconds: int, clock: Callable[[], float]) -> Deadline:
        """The deadline `seconds` from now on `clock`."""
        return cls(seconds, clock, clock() + seconds)

    def left(self) -> float:
        """The seconds left, never below zero."""
        return max(self.at - self.clock(), 0.0)

    def passed(self) -> bool:
        """Whether the limit is spent."""
        return self.clock() >= self.at

    def check(self) -> None:
        """Raise `TimeLimitReached` when the limit is spent (for work that stops itself)."""
        if self.passed():
            raise TimeLimitReached(self.seconds)


RESERVE = 0.1
"""The share of the whole time limit a script's default limit keeps for each script after it."""


def script_limit(left: float, seconds: float, later: int, given: float | None = None) -> float:
    """The time limit of a script with `left` seconds of the grading's `seconds` left and
    `later` scripts to run after it: `given` (`--script-timeout`) if shorter than the time
    left; by default the time left but for a reserve kept for the later scripts (`RESERVE`
    of the whole limit each, at most half the time left), so that a script that hangs is a
    failed check (killed at its limit) and the checks after it still run.

    >>> script_limit(3600, 3600, 0), script_limit(3600, 3600, 3), script_limit(100, 3600, 3)
    (3600.0, 2520.0, 50.0)
    >>> script_limit(3600, 3600, 3, given=60)
    60
    """
    if given is not None:
        return min(left, given)
    return left - min(later * RESERVE * seconds, left / 2)


def run(
    program: Coroutine[Any, Any, T],
    interpret: Interpreter,
    deadline: Deadline | None = None,
    observe: Observer | None = None,
) -> T:
    """Run `program` to its end, answering each effect it awaits with `interpret`, within
    `deadline` if one is given; `observe` sees every step as the program saw it.

    >>> from ssegrade.internal.effects import Notify
    >>> async def hello() -> str:
    ...     await Notify("hi")
    ...     return "done"
    >>> seen = []
    >>> run(hello(), seen.append), seen
    ('done', [Notify(message='hi')])
    """
    told = deadline is None
    answer: object = None
    error: BaseException | None = None
    try:
        while True:
            try:
                effect = program.send(answer) if error is None else program.throw(error)
            except StopIteration as stop:
                result: T = stop.value
                return result
            if not isinstance(effect, Effect):
                raise TypeError(f"a program awaited {effect!r}, which is not an effect")
            if not told and deadline is not None and deadline.passed():
                answer, error = None, TimeLimitReached(deadline.seconds)
            else:
                try:
                    answer, error = interpret(effect), None
                except BaseException as exc:  # noqa: BLE001 - handed to the program that asked
                    answer, error = None, exc
                late = isinstance(error, Exception | None)  # an interrupt is not overruled
                if not told and deadline is not None and late and deadline.passed():
                    answer, error = None, TimeLimitReached(deadline.seconds)
            # Told once; and a program unwinding from an interrupt has its clean-ups run whole.
            unwinding = not isinstance(error, Exception | None)
            told = told or unwinding or isinstance(error, TimeLimitReached)
            if observe is not None:
                observe(effect, answer, error)
    finally:
        program.close()
