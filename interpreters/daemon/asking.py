"""How a route reaches the daemon's `Service`: the listener asking, and its worker threads.

Interpreter layer, shared by the two route sets (`routes_ssebench`, `routes_ssegrade`). The
`Service` blocks (one action at a time), so each handler runs it in a worker thread drawn from
its listener's own small pool: requests queued on the agent-facing socket never take the
threads the admin socket needs.
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
from ssegrade.protocol import ErrorBody, Listener

__all__ = ["THREADS", "Asker", "errors"]

THREADS = {"agent": 4, "admin": 8}
"""Worker threads per listener: an agent's queued requests wait for these, never the admin's."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Asker:
    service: Service
    listener: Listener
    threads: CapacityLimiter

    async def call(self, work: Callable[..., T], *args: Any) -> T:
        """Run `work(*args)` in one of this listener's worker threads."""
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
    return _Asker(service, listener, threads)


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
