"""How a route reaches the daemon's `Service`: the listener asking, and its threads.

Interpreter layer, shared by the two route sets (`routes_ssebench`, `routes_ssegrade`). The
`Service` blocks, so each handler runs it in a thread of its listener's own, never another
listener's: requests queued on the agent-facing socket never take the threads the admin socket
needs. A read (`call`) runs on the listener's fixed workers (`interpreters.daemon.workers`,
`SSE_DAEMON_WORKERS`); work that waits for its turn, one action at a time (`act`: the tool
calls, the captures, grading), on threads drawn from the listener's own small pool, so that a
long tool call never holds a worker that the reads need.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from anyio import CapacityLimiter
from fastapi import Depends, Request

from interpreters.daemon.service import Service
from interpreters.daemon.workers import Workers
from ssegrade.protocol import ErrorBody, Listener

__all__ = ["THREADS", "Asker", "errors"]

THREADS = {"agent": 4, "admin": 8}
"""Threads per listener for work that waits for its turn: an agent's queued tool calls wait
for these, never the admin's."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Asker:
    service: Service
    listener: Listener
    threads: CapacityLimiter
    workers: Workers

    async def call(self, work: Callable[..., T], *args: Any) -> T:
        """Run `work(*args)`, a read, on one of this listener's fixed workers."""
        return await self.workers.run(functools.partial(work, *args))

    async def act(self, work: Callable[..., T], *args: Any) -> T:
        """Run `work(*args)`, which may wait for its turn, in a thread of this listener's
        pool for such work (never on its workers)."""
        return await anyio.to_thread.run_sync(functools.partial(work, *args), limiter=self.threads)


async def _asker(request: Request) -> _Asker:
    service = request.app.state.service
    listener = request.app.state.listener
    if not isinstance(service, Service) or listener not in ("agent", "admin"):
        raise RuntimeError("the app was created without a service")
    # A limiter belongs to the event loop that uses it (tests run one loop per request).
    pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, CapacityLimiter]
    pools = request.app.state.threads
    loop = asyncio.get_running_loop()
    threads = pools.get(loop)
    if threads is None:
        threads = pools[loop] = CapacityLimiter(THREADS[listener])
    return _Asker(service, listener, threads, request.app.state.workers)


Asker = Annotated[_Asker, Depends(_asker)]
"""A route's handle on the service, as its listener asks."""

_MEANING = {
    400: "The request cannot be taken: malformed body, unknown action, bad PoC.",
    403: "Forbidden on this listener, at this difficulty level, or after the agent phase.",
    404: "The document does not exist (yet).",
    413: "The request body is larger than 1 MiB.",
    500: "The daemon failed, or (SSEBench's wire) the call cannot run; the message says why.",
    503: "The daemon is stopping.",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI description of a route's error replies."""
    return {status: {"model": ErrorBody, "description": _MEANING[status]} for status in statuses}
