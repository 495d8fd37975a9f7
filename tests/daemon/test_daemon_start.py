"""The daemon's start: the admin socket first, the agent-facing one once the baseline is in.

`ssegrade daemon` binds its admin socket before it loads its libraries, checks its input or
records the baseline (`interpreters.daemon.binding.bind_early`), so that an entrypoint or a
harness can connect at once; a request sent then waits and is answered once the daemon is
ready. The agent-facing socket is bound only once the baseline is recorded (SPEC §9): an
entrypoint starts the agent when that socket exists. The order is read from the kernel's
change times of the sockets and of the baseline's files (never from a stopwatch). Input the
daemon refuses removes the early socket again.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.daemon import binding
from tests.support.daemons import TOP, daemon_command, start_daemon
from tests.support.realtask import make_task
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ssegrade-start-test-") as folder:
        Path(folder).chmod(0o755)
        yield Path(folder)


def _changed(path: Path) -> int:
    return os.lstat(path).st_ctime_ns


def test_the_admin_socket_comes_before_the_baseline_and_the_agent_socket_after(
    workdir: Path,
) -> None:
    made = make_task(workdir / "t")
    base = workdir / "base"
    running = start_daemon(made.task, made.source, made.results, "--baseline", str(base))
    try:
        recorded = [
            _changed(Path(here) / name)
            for here, folders, names in os.walk(base / "repo")
            for name in (*folders, *names)
        ]
        assert recorded
        assert _changed(running.admin) <= min(recorded)
        assert max(recorded) <= _changed(running.agent)
    finally:
        running.cleanup()


def test_a_request_on_the_early_admin_socket_is_held_until_the_daemon_is_ready(
    workdir: Path,
) -> None:
    made = make_task(workdir / "t")
    running = start_daemon(made.task, made.source, made.results, wait=False)
    try:
        conn = socket.socket(socket.AF_UNIX)

        def connected() -> bool:
            try:
                conn.connect(str(running.admin))
            except OSError:
                assert running.proc.poll() is None, running.output()
                return False
            return True

        wait_until(connected, "a connection to the early admin socket", 60, 0.002)
        conn.sendall(b"GET /version HTTP/1.1\r\nHost: d\r\nConnection: close\r\n\r\n")
        conn.settimeout(60)
        reply = b""
        while chunk := conn.recv(4096):
            reply += chunk
        conn.close()
        assert reply.startswith(b"HTTP/1.1 200"), reply
    finally:
        running.cleanup()


def test_refused_input_removes_the_early_admin_socket(workdir: Path) -> None:
    made = make_task(workdir / "t")
    folder = Path(tempfile.mkdtemp(prefix="sse-", dir="/tmp"))
    try:
        admin = folder / "admin" / "admin.sock"
        command = daemon_command(made.task, made.source, made.results)
        command += ["--agent-socket", str(folder / "agent.sock"), "--admin-socket", str(admin)]
        env = {**os.environ, "SSE_DIFFICULTY": "9"}
        done = subprocess.run(
            command, cwd=TOP, env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 2
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert not admin.parent.exists()  # made for the early socket, removed with it
        assert not (folder / "agent.sock").exists()
    finally:
        subprocess.run(["rm", "-rf", "--", str(folder)], check=False)


@pytest.mark.parametrize(
    ("argv", "environ", "expected"),
    [
        (["--admin-socket", "/x/a.sock"], {"SSE_ADMIN_SOCKET": "/y/b.sock"}, "/x/a.sock"),
        (["--admin-socket=/x/a.sock", "--admin-socket", "/z/c.sock"], {}, "/z/c.sock"),
        ([], {"SSE_ADMIN_SOCKET": "/y/b.sock"}, "/y/b.sock"),
        ([], {}, binding.DEFAULT_ADMIN_SOCKET),
        (["--admin-socket", "/x/a.sock", "--help"], {}, None),
        (["--openapi"], {}, None),
    ],
)
def test_the_early_socket_is_the_one_the_command_line_names(
    argv: list[str], environ: dict[str, str], expected: str | None
) -> None:
    found = binding._admin_path(argv, environ)
    assert found == (None if expected is None else Path(expected))
