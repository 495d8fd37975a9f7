"""The daemon's listeners: Unix sockets with the right modes, optional TCP, uvicorn, signals.

Interpreter layer. The sockets are bound here (not by uvicorn) so that their modes are set
before anyone can connect: the agent-facing socket is made 0666, the admin socket 0600 inside a
folder of mode 0700 that only the daemon's user owns. One uvicorn `Server` per listener runs in
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
import errno
import logging
import os
import signal
import socket
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from fastapi import FastAPI

from interpreters.daemon.accepting import Slot, accept, guarded
from interpreters.daemon.app import create_app
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
    "serve",
]

_log = logging.getLogger(__name__)

_BACKLOG = 64
_GRACE_SECONDS = 30
CONNECTIONS = {"agent": 64, "admin": 16}
"""Connections each listener holds at once, by kind."""
IDLE_SECONDS = 30.0
"""A connection with no request in flight that sends nothing this long is closed."""


class SocketError(Exception):
    """A listener that cannot be set up; the message is one line for stderr."""


@dataclass(frozen=True, slots=True)
class Listening:
    """One bound listener: its socket, who it serves, and its Unix path (None for TCP)."""

    sock: socket.socket
    listener: str
    path: Path | None
    where: str


def check_admin_folder(path: Path) -> None:
    """Make sure the admin socket's folder exists with mode 0700, owned by this user.

    A missing folder is created (mode 0700). An existing one that others can enter, or that
    someone else owns, is refused rather than changed.
    """
    folder = path.parent
    try:
        folder.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass
    except OSError as exc:
        raise SocketError(
            f"cannot create the admin socket folder {folder}: {exc.strerror}"
        ) from exc
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode):
        raise SocketError(f"admin socket folder {folder} is not a folder")
    mode = stat.S_IMODE(info.st_mode)
    if info.st_uid != os.geteuid() or mode & 0o077:
        raise SocketError(
            f"admin socket folder {folder} must be mode 0700 and owned by uid {os.geteuid()}"
            f" (it has mode {mode:04o}, uid {info.st_uid}): {_safe_place(path)}"
        )


SAFE_ADMIN_FOLDER = Path("/run/ssebench-admin")
"""Where the admin socket goes by default: a folder of its own, made with mode 0700."""


def _safe_place(path: Path) -> str:
    """What to do instead of an admin socket in a folder others can enter."""
    if path.parent == SAFE_ADMIN_FOLDER:
        return f"make it so (chmod 0700 {SAFE_ADMIN_FOLDER}), or name a folder of its own"
    return (
        f"give the socket a folder of its own, e.g. --admin-socket {SAFE_ADMIN_FOLDER / path.name}"
        " (made with mode 0700 when missing)"
    )


def _clear_stale(path: Path) -> None:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise SocketError(f"{path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError as exc:
        if exc.errno not in (errno.ECONNREFUSED, errno.ENOENT):
            raise SocketError(f"cannot check the socket {path}: {exc.strerror}") from exc
    else:
        raise SocketError(f"a daemon already listens on {path}")
    finally:
        probe.close()
    path.unlink(missing_ok=True)


def bind_unix(path: Path, mode: int, listener: str) -> Listening:
    """A listening Unix socket at `path` with `mode`; a stale socket file is replaced."""
    if len(os.fsencode(path)) >= 104:
        raise SocketError(f"socket path too long ({len(os.fsencode(path))} bytes): {path}")
    if listener == "agent":
        try:
            path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        except OSError as exc:
            raise SocketError(f"cannot create {path.parent}: {exc.strerror}") from exc
    _clear_stale(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)
    try:
        sock.bind(str(path))
        os.chmod(path, mode)
        sock.listen(_BACKLOG)
    except OSError as exc:
        sock.close()
        raise SocketError(f"cannot listen on {path}: {exc.strerror}") from exc
    finally:
        os.umask(previous)
    sock.setblocking(False)
    return Listening(sock, listener, path, f"unix:{path}")


def bind_tcp(port: int) -> Listening:
    """A listening agent-facing TCP socket on 127.0.0.1:`port`."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(_BACKLOG)
    except OSError as exc:
        sock.close()
        raise SocketError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from exc
    sock.setblocking(False)
    return Listening(sock, "agent", None, f"http://127.0.0.1:{port}")


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


def remove_socket(path: Path | None) -> None:
    """Remove a socket file we created (nothing else)."""
    if path is None:
        return
    with contextlib.suppress(OSError):
        if stat.S_ISSOCK(path.lstat().st_mode):
            path.unlink()


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
