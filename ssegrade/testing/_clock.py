"""A clock that moves only when told, for deadlines tests drive without sleeping.

Pure core, part of the testing kit. `Deadline.starting(seconds, clock)` takes it as it takes
`time.monotonic`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Clock"]


@dataclass
class Clock:
    """The time is `now`, in seconds; it changes when a test moves it.

    >>> from ssegrade.internal.run import Deadline
    >>> clock = Clock()
    >>> deadline = Deadline.starting(10, clock)
    >>> clock.advance(9.5)
    >>> deadline.left(), deadline.passed()
    (0.5, False)
    >>> clock.advance(0.5)
    >>> deadline.passed()
    True
    """

    now: float = 0.0

    def __call__(self) -> float:
        """The time now."""
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock on by `seconds`."""
        self.now += seconds
