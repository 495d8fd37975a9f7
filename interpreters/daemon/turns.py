"""One action at a time in the daemon, the admin socket first.

Interpreter layer, for `interpreters.daemon.service`. Every request that does work takes its
turn; the HTTP layer calls the service from worker threads. A request waiting for its turn is
refused as soon as it may no longer run (the service's `may_run` raises), and checked again
when the turn comes; an agent's queued requests never delay the admin socket's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

from ssegrade.protocol import Listener

__all__ = ["Session", "Turns"]

Session = Literal["agent", "grading"]


@dataclass
class Turns:
    """Whose turn it is, and which session's action runs (`running`)."""

    _turn: threading.Condition = field(default_factory=threading.Condition)
    _busy: bool = False
    _admins_waiting: int = 0
    running: Session | None = None

    @contextmanager
    def take(
        self, listener: Listener, session: Session | None, may_run: Callable[[], None]
    ) -> Iterator[None]:
        """Wait for this request's turn, then hold it; `may_run` is asked before waiting,
        each time the turns change, and when the turn comes (what it raises ends the wait)."""
        with self._turn:
            may_run()
            waiting = listener == "admin"
            self._admins_waiting += waiting
            try:
                while self._busy or (listener == "agent" and self._admins_waiting):
                    self._turn.wait()
                    may_run()
            finally:
                self._admins_waiting -= waiting
            self._busy = True
            self.running = session
        try:
            yield
        finally:
            with self._turn:
                self._busy = False
                self.running = None
                self._turn.notify_all()

    def change(self, change: Callable[[], None]) -> Session | None:
        """Change what `may_run` answers (`change`, under the turns' lock), so that requests
        waiting for their turn see it at once; the session whose action runs now."""
        with self._turn:
            change()
            self._turn.notify_all()
            return self.running

    def wait_idle(self, seconds: float) -> bool:
        """Wait until no action runs (at most `seconds`); whether it is idle now."""
        with self._turn:
            return self._turn.wait_for(lambda: not self._busy, timeout=seconds)
