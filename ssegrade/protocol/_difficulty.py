"""Difficulty levels: which bencher actions the agent may call before grading (SPEC §9).

Pure core: each level withholds one more check, as the gate column of the checks table
(`ssegrade.internal.checks`) says; parsing `SSE_DIFFICULTY` is a function of its text.
"""

from __future__ import annotations

from dataclasses import dataclass

from returns.result import Failure, Result, Success

from ssegrade.internal.checks import Action, grading_order

__all__ = ["ACTIONS", "DEFAULT_LEVEL", "LEVELS", "Level", "allowed", "parse_difficulty"]

ACTIONS: tuple[Action, ...] = tuple(check.action for check in grading_order())
"""Every bencher action, in grading order."""


@dataclass(frozen=True, slots=True)
class Level:
    """One difficulty level: its number, name and the actions the agent may call."""

    number: int
    name: str
    actions: frozenset[Action]


_NAMES = ("FULL_ASSISTANCE", "NO_INTENT_TEST", "NO_FUTURE_TEST", "BUILD_ONLY", "NO_BUILD")

LEVELS: tuple[Level, ...] = tuple(
    Level(number, name, frozenset(c.action for c in grading_order() if number <= c.gate))
    for number, name in enumerate(_NAMES)
)
"""The levels 0 to 4: a check is open up to its gate (`CheckSpec.gate`)."""

DEFAULT_LEVEL = LEVELS[2]


def allowed(level: Level, action: Action) -> bool:
    """May the agent call `action` at this level?

    >>> allowed(LEVELS[1], "intent_test"), allowed(LEVELS[1], "run_poc")
    (False, True)
    """
    return action in level.actions


def parse_difficulty(text: str | None) -> Result[Level, str]:
    """`SSE_DIFFICULTY`: unset means level 2; anything but a digit 0–4 is refused.

    >>> parse_difficulty(None).unwrap().name
    'NO_FUTURE_TEST'
    >>> parse_difficulty("0").unwrap().number
    0
    >>> parse_difficulty("2.0").failure()
    "SSE_DIFFICULTY must be one of 0, 1, 2, 3, 4 (got '2.0')"
    """
    if text is None:
        return Success(DEFAULT_LEVEL)
    if text in {"0", "1", "2", "3", "4"}:
        return Success(LEVELS[int(text)])
    return Failure(f"SSE_DIFFICULTY must be one of 0, 1, 2, 3, 4 (got {text!r})")
