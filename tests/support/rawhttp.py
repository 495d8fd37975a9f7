"""HTTP by hand on a Unix socket, for tests that must see when the daemon has read a request.

A request is sent on a connection of its own (`send_request`); `wait_until_read` waits until the
other end has read all of it, as the kernel counts it; `reply_to` reads the reply.
"""

from __future__ import annotations

import array
import fcntl
import http.client
import json
import socket
import termios
from pathlib import Path

from tests.support.waiting import wait_until


def send_request(path: Path, method: str, target: str, body: object = None) -> socket.socket:
    """Send one request on a new connection to a Unix socket; read the reply with `reply_to`."""
    data = b"" if body is None else json.dumps(body).encode()
    head = f"{method} {target} HTTP/1.1\r\nhost: daemon\r\ncontent-length: {len(data)}\r\n"
    if body is not None:
        head += "content-type: application/json\r\n"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(60)
    sock.connect(str(path))
    sock.sendall(head.encode() + b"\r\n" + data)
    return sock


def wait_until_read(sock: socket.socket, seconds: float = 60) -> None:
    """Wait until the other end has read all that was sent on `sock`: the kernel's count of
    bytes sent and not yet read (TIOCOUTQ) falls to 0."""
    unread = array.array("i", [0])

    def read() -> bool:
        fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, unread)
        return unread[0] == 0

    wait_until(
        read, "the peer to read what was sent", seconds, detail=lambda: f"{unread[0]} unread"
    )


def reply_to(sock: socket.socket) -> tuple[int, object]:
    """The status and JSON body of the reply on `sock`, which is closed then."""
    with sock:
        reply = http.client.HTTPResponse(sock)
        reply.begin()
        with reply:
            return reply.status, json.loads(reply.read())
