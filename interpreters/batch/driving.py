"""Feeding an engine: `drive` runs gradings a few at a time and owns the interrupt rules of
SPEC §14: the first SIGINT (or SIGTERM) starts no new work and waits for the running
gradings, the second kills them.

Interpreter layer, shared by `run_batch` and `verify_tasks`.
"""

from __future__ import annotations

import logging
import signal
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType

from interpreters.batch.engines import Done, Engine, Work

__all__ = ["POLL", "Driven", "drive", "running_gradings"]

_log = logging.getLogger(__name__)

POLL = 0.2
"""Seconds between two looks at the running gradings."""


@dataclass
class _Interrupts:
    count: int = 0

    def __call__(self, _signum: int, _frame: FrameType | None) -> None:
        self.count += 1


@dataclass(frozen=True, slots=True)
class Driven:
    """How a drive ended: interrupted or not, and the keys of the gradings killed."""

    interrupted: bool
    killed: tuple[int, ...] = ()


def running_gradings(count: int) -> str:
    """`1 running grading`, `2 running gradings`."""
    return f"{count} running grading{'' if count == 1 else 's'}"


def drive(
    engine: Engine,
    works: Sequence[Work] | deque[Work],
    on_done: Callable[[Done], Sequence[Work]],
    *,
    tick: Callable[[], None] = lambda: None,
    on_start: Callable[[Work], None] = lambda _work: None,
) -> Driven:
    """Run `works` on `engine`, `engine.capacity` at a time, calling `on_done` for each
    finished one (it may hand back more work) and `on_start` just before one starts.
    SIGINT or SIGTERM: the first starts no new work and waits for the running gradings (a
    warning says so); the second kills them. Never raises KeyboardInterrupt."""
    todo = deque(works)
    interrupts = _Interrupts()
    announced = False
    previous = {sig: signal.signal(sig, interrupts) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            if interrupts.count >= 2:
                return Driven(True, tuple(engine.kill()))
            while todo and not interrupts.count and engine.running() < engine.capacity:
                work = todo.popleft()
                on_start(work)
                engine.start(work)
            if not engine.running():
                if interrupts.count or not todo:
                    return Driven(bool(interrupts.count))
                continue
            for done in engine.poll(POLL):
                todo.extend(on_done(done))
            tick()
            if interrupts.count == 1 and not announced and engine.running():
                announced = True
                _log.warning(
                    "interrupted: waiting for %s (Ctrl-C or SIGTERM again to kill %s)",
                    running_gradings(engine.running()),
                    "it" if engine.running() == 1 else "them",
                )
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
