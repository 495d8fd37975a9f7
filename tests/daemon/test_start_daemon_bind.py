"""The daemon binds its admin socket before it loads anything it does not need to bind it
and answer `GET /version` (SPEC §9: an entrypoint or evaluator asks the version as it
connects, and waits on the daemon's start).

Not timed (the host is shared): a fresh interpreter binds the admin socket as
`interpreters.cli.entry` does for `ssegrade daemon`, and the modules loaded by then are
written out; the socket must then answer the installed version (loaded on that first
question, not before the bind).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.daemon.console import version

NOT_BEFORE_THE_BIND = {
    "importlib.metadata",  # with email, zipfile, csv, tempfile, ...
    "email",
    "zipfile",
    "dataclasses",  # with inspect, ast, dis, tokenize
    "inspect",
    "ast",
    "pydantic",
    "click",
}
"""Modules whose load would only delay the admin socket's bind."""


@pytest.fixture
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="sse-bind-", dir="/tmp") as made:
        yield Path(made)


def test_the_admin_socket_is_bound_before_the_heavy_modules_load(folder: Path) -> None:
    """At the bind, none of `NOT_BEFORE_THE_BIND` is loaded; after it, `GET /version` is
    answered with the installed version."""
    admin = folder / "admin" / "admin.sock"
    modules = folder / "modules.txt"
    code = (
        "import sys\n"
        "from interpreters.daemon.binding import bind_early\n"
        f"bind_early(['--admin-socket', {str(admin)!r}], {{}})\n"
        f"open({str(modules)!r}, 'w').write('\\n'.join(sorted(sys.modules)))\n"
        "print('bound', flush=True)\n"
        "sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        # Unmeasured: coverage's start-up in a measured child loads `dataclasses` and `inspect`
        # itself, before the code under test runs.
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")},
            "PYTHONDONTWRITEBYTECODE": "1",
        },
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"bound\n"
        loaded = set(modules.read_text().split())
        assert sorted(loaded & NOT_BEFORE_THE_BIND) == []
        with socket.socket(socket.AF_UNIX) as conn:
            conn.settimeout(60)
            conn.connect(str(admin))
            conn.sendall(b"GET /version HTTP/1.1\r\nHost: d\r\nConnection: close\r\n\r\n")
            reply = b""
            while chunk := conn.recv(65536):
                reply += chunk
        assert reply.startswith(b"HTTP/1.1 200")
        assert json.loads(reply.partition(b"\r\n\r\n")[2]) == {"version": version()}
    finally:
        proc.communicate(timeout=60)  # closes its stdin (it ends) and its stdout
