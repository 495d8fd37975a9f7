"""Accepting the connections of one listener, for a client that may be hostile.

Interpreter layer, for `interpreters.daemon.server`. Connections are accepted here, not by
asyncio's server: a listener holds at most a given number of connections at once (the next
ones wait in the kernel's backlog), so a client can neither use up the daemon's file
descriptors nor take another listener's places; a connection with no request in flight that
sends nothing for `idle` seconds is closed (`guarded`); a failing accept is logged at most
once a second.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RETRY_SECONDS", "Slot", "accept", "guarded"]

_log = logging.getLogger(__name__)

RETRY_SECONDS = 0.05
"""Pause after a failed accept (out of descriptors, say), so that the loop does not spin."""


@dataclass
class Slot:
    """One connection's place on its listener: given back once, when the connection ends."""

    free: Callable[[], None]
    done: bool = False

    def release(self) -> None:
        """Give the place back (once)."""
        if not self.done:
            self.done = True
            self.free()


_GUARDED: dict[type[Any], type[Any]] = {}


def guarded(base: type[Any]) -> type[Any]:
    """`base` (uvicorn's HTTP protocol) with an idle guard and its place given back at the end."""
    if base in _GUARDED:
        return _GUARDED[base]

    class Guarded(base):  # type: ignore[misc]  # uvicorn's class is chosen at run time
        _sse_heard = False
        _sse_timer: asyncio.TimerHandle | None = None
        _sse_transport: asyncio.BaseTransport | None = None

        def __init__(self, slot: Slot, idle: float, **options: Any) -> None:
            super().__init__(**options)
            self._sse_slot = slot
            self._sse_idle = idle

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self._sse_transport = transport
            super().connection_made(transport)
            self._sse_arm()

        def data_received(self, data: bytes) -> None:
            self._sse_heard = True
            super().data_received(data)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._sse_timer is not None:
                self._sse_timer.cancel()
            try:
                super().connection_lost(exc)
            finally:
                self._sse_slot.release()

        def _sse_arm(self) -> None:
            loop = asyncio.get_running_loop()
            self._sse_timer = loop.call_later(self._sse_idle, self._sse_check)

        def _sse_check(self) -> None:
            cycle = getattr(self, "cycle", None)
            busy = cycle is not None and not cycle.response_complete
            if busy or self._sse_heard:
                self._sse_heard = False
                self._sse_arm()
            elif self._sse_transport is not None:
                self._sse_transport.close()

    _GUARDED[base] = Guarded
    return Guarded


@dataclass
class _Throttled:
    """Logs a warning at most once per `every` seconds; counts the lines it kept back."""

    every: float = 1.0
    clock: Callable[[], float] = time.monotonic
    last: float = field(default=float("-inf"))
    held: int = 0

    def __call__(self, line: str) -> None:
        now = self.clock()
        if now - self.last < self.every:
            self.held += 1
            return
        more = f" ({self.held} more like it not shown)" if self.held else ""
        _log.warning(line + more)
        self.last, self.held = now, 0


async def accept(
    sock: socket.socket,
    where: str,
    ready: asyncio.Event,
    protocol: Callable[[Slot, float], asyncio.Protocol],
    limit: int,
    idle: float,
) -> None:
    """Accept the connections of the listening `sock` (`where` names it), at most `limit` at
    once, once `ready` is set; `protocol` serves each."""
    loop = asyncio.get_running_loop()
    places = asyncio.Semaphore(limit)
    complain = _Throttled()
    await ready.wait()
    while True:
        await places.acquire()
        slot = Slot(places.release)
        try:
            conn, _address = await loop.sock_accept(sock)
        except OSError as exc:
            slot.release()
            complain(f"cannot accept a connection on {where}: {exc.strerror or exc}")
            await asyncio.sleep(RETRY_SECONDS)
            continue
        try:
            await loop.connect_accepted_socket(functools.partial(protocol, slot, idle), conn)
        except OSError as exc:
            conn.close()
            slot.release()
            complain(f"cannot serve a connection on {where}: {exc.strerror or exc}")
