"""The run loop: drives a program (a coroutine awaiting effects) with an interpreter.

Pure core. An interpreter is a function from an effect to its answer; an exception it raises
is thrown into the program at the `await` that asked, so programs handle failures where they
happen (e.g. `TimeLimitReached`).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from ssegrade.effects import Effect

__all__ = ["Interpreter", "run"]

T = TypeVar("T")

Interpreter = Callable[[Effect[Any]], object]


def run(program: Coroutine[Any, Any, T], interpret: Interpreter) -> T:
    """Run `program` to its end, answering each effect it awaits with `interpret`.

    >>> from ssegrade.effects import Notify
    >>> async def hello() -> str:
    ...     await Notify("hi")
    ...     return "done"
    >>> seen = []
    >>> run(hello(), seen.append), seen
    ('done', [Notify(message='hi')])
    """
    answer: object = None
    error: Exception | None = None
    try:
        while True:
            try:
                effect = program.send(answer) if error is None else program.throw(error)
            except StopIteration as stop:
                result: T = stop.value
                return result
            if not isinstance(effect, Effect):
                raise TypeError(f"a program awaited {effect!r}, which is not an effect")
            try:
                answer, error = interpret(effect), None
            except Exception as exc:  # noqa: BLE001 - handed to the program that asked
                answer, error = None, exc
    finally:
        program.close()
