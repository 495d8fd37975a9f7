"""The admin socket's answers while the daemon starts: `GET /version` at once, the rest held.

Interpreter layer, standard library only: `bind_early` (`interpreters.daemon.binding`) starts
these answers on the admin socket it binds first thing, so that an entrypoint or an evaluator
that asks whether the daemon runs (SSEBench's SDK asks `GET /version` as it connects) hears so
within milliseconds, while the daemon loads its libraries, probes the containment and records
the baseline. Anything else needs the grading set up: the request is read whole and held, and
once the answers stop (`EarlyAnswers.stop`, before the real server takes the socket) it is
passed to the real server through the same socket, its reply relayed back: a client that asks
early (SSEBench's own SDK test waits a fixed 2 s) waits as it would on a slow daemon, never
sees an error. A request that cannot be held (too large, chunked, the daemon stopped before it
served, more than `HELD_LIMIT` held at once) is answered 503 with SSEBench's error body and
`Retry-After`. A connection not yet accepted waits in the kernel's backlog for the real server.

The agent-facing socket has the same answers from the moment it is bound, once the baseline is
recorded (SPEC §9: an entrypoint starts the agent once that socket exists, so it cannot exist
sooner), while the daemon loads its server; the held requests then meet the server's rules,
the difficulty gate included. Its client is hostile, so no client holds the answers longer
than `READ_SECONDS` (a request dribbled byte by byte is cut off, answered 503), and what is
held is bounded (`HELD_LIMIT` requests of at most `BODY_LIMIT` bytes).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import sys
import threading
import time

__all__ = ["BODY_LIMIT", "HELD_LIMIT", "READ_SECONDS", "STARTING", "EarlyAnswers"]

STARTING = "the daemon is starting: ask again in a moment"
"""The error of a request that cannot be held before the daemon serves."""

_HEAD_LIMIT = 8192
BODY_LIMIT = 1 << 20
"""The largest request body held for the real server (the server takes no larger one:
`interpreters.daemon.app.MAX_BODY`)."""
HELD_LIMIT = 64
"""The most requests held at once on one socket (the server's agent-facing listener holds as
many connections: `interpreters.daemon.server.CONNECTIONS`)."""
READ_SECONDS = 2.0
"""The longest one client may take to send its request (and to be answered): the answers
serve one connection at a time, and the daemon waits for the one in hand before it serves."""
_DRAIN_SECONDS = 0.2
_RELAY_SECONDS = 3600.0
"""How long a held request waits for the real server's reply (a grading action may be long)."""


def _version() -> str:
    """The installed version, as `importlib.metadata.version` gives it: the `Version` of the
    first `ssegrade-*.dist-info` on `sys.path`, read directly (`importlib.metadata` loads
    `email`, `zipfile`, `csv` and more, tens of milliseconds the early answers would wait for
    while the daemon loads its libraries beside them); failing that, by `importlib.metadata`."""
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in sorted(names):
            if name.startswith("ssegrade-") and name.endswith(".dist-info"):
                found = _metadata_version(os.path.join(entry or ".", name, "METADATA"))
                if found:
                    return found
    from importlib import metadata  # noqa: PLC0415

    try:
        return metadata.version("ssegrade")
    except metadata.PackageNotFoundError:
        return "unknown"


def _metadata_version(path: str) -> str | None:
    """The `Version:` header of a METADATA file; None when it has none or cannot be read."""
    try:
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                if not line.strip():
                    return None  # the headers end at the first blank line
                if line.startswith("Version:"):
                    return line.partition(":")[2].strip() or None
    except (OSError, UnicodeDecodeError):
        return None
    return None


def _reply(status: str, body: dict[str, str], extra: tuple[str, ...] = ()) -> bytes:
    data = json.dumps(body, separators=(",", ":")).encode()
    head = [f"HTTP/1.1 {status}", "content-type: application/json"]
    head += [f"content-length: {len(data)}", "connection: close", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


def _receive(conn: socket.socket, size: int, until: float) -> bytes:
    """Up to `size` bytes from `conn` before the monotonic time `until`; b"" when the client
    has ended, fails, or is not done by then."""
    left = until - time.monotonic()
    if left <= 0:
        return b""
    conn.settimeout(left)
    try:
        return conn.recv(size)
    except OSError:
        return b""


def _held_request(head: bytes, conn: socket.socket, until: float) -> bytes | None:
    """The whole request `head` starts (its body read from `conn` by `content-length` before
    `until`), with `connection: close` so that the real server ends the reply; None when it
    cannot be held."""
    top, _, rest = head.partition(b"\r\n\r\n")
    lines = top.split(b"\r\n")
    kept, length = [lines[0]], 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        key = name.strip().lower()
        if key == b"transfer-encoding":
            return None
        if key == b"content-length":
            if not value.strip().isdigit() or int(value) > BODY_LIMIT:
                return None
            length = int(value)
        if key not in (b"connection", b"keep-alive"):
            kept.append(line)
    body = rest
    while len(body) < length:
        chunk = _receive(conn, min(65536, length - len(body)), until)
        if not chunk:
            break
        body += chunk
    if len(body) != length:
        return None
    return b"\r\n".join([*kept, b"connection: close"]) + b"\r\n\r\n" + body


def _relay(listening: socket.socket, request: bytes, conn: socket.socket) -> None:
    """Send `request` to the server that takes the `listening` socket (a Unix one or TCP), its
    reply back on `conn`; 503 when no server answers there."""
    with conn:
        try:
            with socket.socket(listening.family, socket.SOCK_STREAM) as server:
                server.settimeout(_RELAY_SECONDS)
                server.connect(listening.getsockname())
                server.sendall(request)
                answered = False
                while chunk := server.recv(65536):
                    answered = True
                    conn.sendall(chunk)
                if answered:
                    return
        except OSError:
            pass
        with contextlib.suppress(OSError):
            conn.sendall(_reply("503 Service Unavailable", {"error": STARTING}, _RETRY))


_RETRY = ("retry-after: 1",)


def _target(head: bytes) -> tuple[str, str]:
    """The method and path (no query) of a request's first line; empty when unreadable."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    if len(parts) != 3:
        return "", ""
    return parts[0], parts[1].split("?", 1)[0]


class EarlyAnswers:
    """A thread answering the requests of one listening socket until `stop`, one at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._wake_read, self._wake_write = os.pipe()
        self._thread = threading.Thread(target=self._loop, name="early-answers", daemon=True)
        self._version = ""
        self._held: list[tuple[socket.socket, bytes]] = []

    def start(self) -> None:
        """Answer from now on, in a thread of its own."""
        self._thread.start()

    def stop(self) -> None:
        """Stop answering (idempotent); once this returns, no connection is accepted here, and
        each held request is on its way to the real server (which takes the socket next)."""
        if self._wake_write >= 0:
            with contextlib.suppress(OSError):
                os.write(self._wake_write, b"x")
        if self._thread.is_alive():
            self._thread.join()
        for fd in (self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._wake_read = self._wake_write = -1
        for conn, request in self._held:
            relay = threading.Thread(
                target=_relay, args=(self._sock, request, conn), name="early-held", daemon=True
            )
            relay.start()
        self._held.clear()

    def _loop(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self._sock.fileno(), self._wake_read], [], [])
            except (OSError, ValueError):
                return  # the socket was closed under us: the daemon stopped
            if self._wake_read in ready:
                return
            try:
                conn, _ = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                return
            if not self._answer(conn):
                conn.close()

    def _answer(self, conn: socket.socket) -> bool:
        """Answer `conn`'s request, or hold it for the real server (True: `conn` is held);
        within `READ_SECONDS` however slowly the client sends."""
        until = time.monotonic() + READ_SECONDS
        head = b""
        while b"\r\n\r\n" not in head and len(head) < _HEAD_LIMIT:
            chunk = _receive(conn, _HEAD_LIMIT, until)
            if not chunk:
                break
            head += chunk
        method, path = _target(head)
        if method == "GET" and path == "/version":
            if not self._version:
                self._version = _version()
            reply = _reply("200 OK", {"version": self._version})
        elif (
            method
            and len(self._held) < HELD_LIMIT
            and (request := _held_request(head, conn, until)) is not None
        ):
            conn.settimeout(None)
            self._held.append((conn, request))
            return True
        else:
            reply = _reply("503 Service Unavailable", {"error": STARTING}, _RETRY)
        with contextlib.suppress(OSError):
            conn.settimeout(READ_SECONDS)
            conn.sendall(reply)
            conn.shutdown(socket.SHUT_WR)
            # let the client's unread body go (not reset the reply), a short while at most
            end = max(until, time.monotonic()) + _DRAIN_SECONDS
            while _receive(conn, 65536, min(end, time.monotonic() + _DRAIN_SECONDS)):
                pass
        return False
