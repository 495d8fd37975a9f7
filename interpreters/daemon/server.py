"""The daemon's listeners served: uvicorn over the bound sockets, signals.

Interpreter layer. The sockets are bound by `interpreters.daemon.binding` (not by uvicorn) so
that their modes are set before anyone can connect: the agent-facing socket is made 0666, the
admin socket 0600 inside a folder of mode 0700 that only the daemon's user owns. One uvicorn
`Server` per listener runs in
one asyncio loop; SIGTERM and SIGINT stop them all: the running action is aborted (its scripts
killed), a queued one is refused with 503, both sockets are removed, and `serve` returns.

The agent-facing listeners face a hostile client, so connections are accepted by
`interpreters.daemon.accepting`, not by asyncio's server: each listener holds at most
`CONNECTIONS[kind]` connections at once, so the agent can neither use up the daemon's file
descriptors nor take the admin socket's places, and an idle connection is closed. What it says
(listening, stopping) are `logging` records.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import Iterator

import uvicorn
from fastapi import FastAPI

from interpreters.daemon.accepting import Slot, accept, guarded
from interpreters.daemon.app import create_app
from interpreters.daemon.binding import (
    Listening,
    SocketError,
    bind_tcp,
    bind_unix,
    check_admin_folder,
    remove_socket,
)
from interpreters.daemon.service import Service
from interpreters.daemon.workers import DEFAULT_WORKERS

__all__ = [
    "CONNECTIONS",
    "IDLE_SECONDS",
    "Listening",
    "SocketError",
    "bind_tcp",
    "bind_unix",
    "check_admin_folder",
    "remove_socket",
    "serve",
]

_log = logging.getLogger(__name__)

_GRACE_SECONDS = 30
CONNECTIONS = {"agent": 64, "admin": 16}
"""Connections each listener holds at once, by kind."""
IDLE_SECONDS = 30.0
"""A connection with no request in flight that sends nothing this long is closed."""


class _Server(uvicorn.Server):
    """A uvicorn server that leaves signals to `serve` (several servers share one loop) and
    connections to `accept`."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start serving with no listener of its own: `accept` hands it the connections."""
        self.servers = []
        self.started = True
        self.ready.set()

    def protocol(self, slot: Slot, idle: float) -> asyncio.Protocol:
        """A uvicorn protocol for one accepted connection, `guarded`."""
        made: asyncio.Protocol = guarded(self.config.http_protocol_class)(
            slot,
            idle,
            config=self.config,
            server_state=self.server_state,
            app_state=self.lifespan.state,
        )
        return made


def _server(app: FastAPI) -> _Server:
    config = uvicorn.Config(
        app,
        lifespan="off",
        http="h11",
        ws="none",
        log_config=None,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=_GRACE_SECONDS,
    )
    config.load()
    return _Server(config)


async def _serve(service: Service, listening: list[Listening], idle: float, workers: int) -> None:
    apps = [
        create_app(service, "admin" if item.listener == "admin" else "agent", workers)
        for item in listening
    ]
    for app in apps:
        app.state.workers.start()
    servers = [_server(app) for app in apps]
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    received: list[str] = []

    def on_signal(signum: int) -> None:
        received.append(signal.Signals(signum).name)
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)
    tasks = [asyncio.create_task(server.serve()) for server in servers]
    acceptors = [
        asyncio.create_task(
            accept(
                item.sock,
                item.where,
                server.ready,
                server.protocol,
                CONNECTIONS.get(item.listener, CONNECTIONS["agent"]),
                idle,
            )
        )
        for server, item in zip(servers, listening, strict=True)
    ]
    for item in listening:
        _log.info("listening (%s) on %s", item.listener, item.where)
    stopper = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait([stopper, *tasks, *acceptors], return_when=asyncio.FIRST_COMPLETED)
        _log.info("stopping (%s)", ", ".join(received) or "a listener ended")
        service.stop()
        for acceptor in acceptors:
            acceptor.cancel()
        for item in listening:
            with contextlib.suppress(OSError):
                item.sock.close()
        for server in servers:
            server.should_exit = True
        await asyncio.gather(*tasks, *acceptors, return_exceptions=True)
    finally:
        for app in apps:
            app.state.workers.close()
        stopper.cancel()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)


def serve(
    service: Service,
    listening: list[Listening],
    *,
    idle: float = IDLE_SECONDS,
    workers: int = DEFAULT_WORKERS,
) -> None:
    """Serve the API on every listener until SIGTERM or SIGINT; then remove the sockets.

    Each listener has `workers` threads for its reads. The action running when the signal
    comes is aborted, and this returns once it has ended (or after a grace period). A
    connection idle for `idle` seconds is closed.
    """
    try:
        asyncio.run(_serve(service, listening, idle, workers))
    finally:
        if not service.wait_idle(_GRACE_SECONDS):
            _log.warning("an action was still running at exit")
        for item in listening:
            with contextlib.suppress(OSError):
                item.sock.close()
            remove_socket(item.path)
