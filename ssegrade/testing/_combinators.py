"""Interpreter combinators: small wrappers that tests compose around any interpreter.

Pure core, part of the testing kit. Each takes an interpreter (a function from an effect to
its answer) and is one, so they nest: `Recording(Checked(Throwing(world, {3: exc})))` records
what a world answered, checks every answer's type and throws `exc` into the program at the
fourth effect. None of them imports hypothesis; `ssegrade.testing.strategies.Drawn` is the one
that draws its answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import ValidationError

from ssegrade.internal.effects import Effect
from ssegrade.internal.run import Interpreter
from ssegrade.testing._clock import Clock
from ssegrade.trace._codec import check_answer

__all__ = [
    "Checked",
    "Recording",
    "Scripted",
    "Throwing",
    "Timed",
    "matching",
]

E = TypeVar("E", bound=Effect[Any])


def matching(*kinds: type[Effect[Any]], **fields: object) -> Callable[[Effect[Any]], bool]:
    """A test of effects: of one of `kinds` (any kind when none is given), with each field
    named in `fields` equal to the value given.

    >>> from ssegrade.internal.effects import Bench, Notify
    >>> builds = matching(Bench, action="build")
    >>> builds(Bench("build")), builds(Bench("run_poc", "pocs/a")), builds(Notify("x"))
    (True, False, False)
    """

    def test(effect: Effect[Any]) -> bool:
        if kinds and not isinstance(effect, kinds):
            return False
        missing = object()
        return all(getattr(effect, name, missing) == value for name, value in fields.items())

    return test


@dataclass
class Recording:
    """Passes every effect on to `inner` and remembers it, with what came back: `trace` holds
    the effects in order, `answers` beside them the answer given or the exception raised in
    its place (raised again, unchanged)."""

    inner: Interpreter
    trace: list[Effect[Any]] = field(default_factory=list)
    answers: list[object] = field(default_factory=list)

    def __call__(self, effect: Effect[Any]) -> object:
        """Answer with `inner`, and remember the effect and its answer."""
        self.trace.append(effect)
        try:
            answer = self.inner(effect)
        except BaseException as exc:
            self.answers.append(exc)
            raise
        self.answers.append(answer)
        return answer

    def of(self, kind: type[E]) -> list[E]:
        """The effects of one kind that were asked for, in order."""
        return [effect for effect in self.trace if isinstance(effect, kind)]

    def steps(self) -> list[tuple[Effect[Any], object]]:
        """Each effect with its answer (or the exception raised in its place)."""
        return list(zip(self.trace, self.answers, strict=False))


@dataclass
class Checked:
    """Checks every answer `inner` gives against the answer type its effect declares
    (`Effect[A]`): what does not fit is kept in `wrong`, one line each, and given to the
    program all the same (throwing it there would only turn into an `error` grade)."""

    inner: Interpreter
    answered: int = 0
    wrong: list[str] = field(default_factory=list)

    def __call__(self, effect: Effect[Any]) -> object:
        """Answer with `inner`, and check the answer's type."""
        answer = self.inner(effect)
        self.answered += 1
        try:
            check_answer(effect, answer)
        except ValidationError as exc:
            self.wrong.append(f"{type(effect).__name__}: {exc.errors()[0]}")
        return answer


def _every(_effect: Effect[Any]) -> bool:
    return True


@dataclass
class Throwing:
    """Throws exceptions into the program in place of answers: `at` maps the position of an
    effect among those `counts` selects (0 for the first) to the exception thrown there; every
    other effect goes on to `inner`. `thrown` keeps each effect that got an exception, with it.

    A signal landing at the first PoC run, for instance:
    `Throwing(world, {0: SignalArrived("SIGTERM")}, matching(RunScript, label="poc-1"))`.
    """

    inner: Interpreter
    at: Mapping[int, BaseException]
    counts: Callable[[Effect[Any]], bool] = _every
    seen: int = 0
    thrown: list[tuple[Effect[Any], BaseException]] = field(default_factory=list)

    def __call__(self, effect: Effect[Any]) -> object:
        """Throw the exception due at this effect, or answer with `inner`."""
        if self.counts(effect):
            position = self.seen
            self.seen += 1
            if position in self.at:
                self.thrown.append((effect, self.at[position]))
                raise self.at[position]
        return self.inner(effect)


def _unexpected(effect: Effect[Any]) -> object:
    raise LookupError(f"no answer for {effect!r}")


@dataclass
class Scripted:
    """Answers from a table: the answer given for an effect equal to one of its keys (an
    exception given there is raised); any other effect goes to `otherwise`, which by default
    raises `LookupError`."""

    answers: Mapping[Effect[Any], object]
    otherwise: Interpreter = _unexpected

    def __call__(self, effect: Effect[Any]) -> object:
        """The table's answer for `effect`, or `otherwise`'s."""
        if effect not in self.answers:
            return self.otherwise(effect)
        answer = self.answers[effect]
        if isinstance(answer, BaseException):
            raise answer
        return answer


@dataclass
class Timed:
    """Effects that take time: each moves `clock` on by the seconds `cost` gives it, once
    `inner` has answered it (or raised), so a deadline on that clock passes while it runs."""

    inner: Interpreter
    clock: Clock
    cost: Callable[[Effect[Any]], float]

    def __call__(self, effect: Effect[Any]) -> object:
        """Answer with `inner`; the clock moves by the effect's cost."""
        try:
            return self.inner(effect)
        finally:
            self.clock.advance(self.cost(effect))
