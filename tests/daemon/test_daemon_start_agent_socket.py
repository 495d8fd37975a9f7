"""The agent-facing socket answers from the moment it is bound, and its client cannot use that.

Once the baseline is recorded, the daemon binds the agent-facing socket and answers there at
once, as on the early admin socket (`interpreters.daemon.starting`): `GET /version`, the rest
held for the server, which loads only then. The agent is hostile: a request held early must
meet the server's rules (the difficulty gate's 403s), a client that dribbles its request must
not keep the answers (nor the server's start) waiting, and what is held is bounded. The
daemon's server is held back here by the test (its module's import waits for a file), so the
window between the bind and the serving is as long as the test needs, not a race.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.daemon.console import version
from interpreters.daemon.starting import HELD_LIMIT, READ_SECONDS, STARTING, EarlyAnswers
from tests.support.daemons import TOP, RunningDaemon, daemon_command
from tests.support.realtask import make_task
from tests.support.ssebench_wire import REFERENCE_LOCKED
from tests.support.waiting import wait_until

_GATED = """\
import contextlib, importlib.abc, os, sys, time
class Gate(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "fastapi.applications":
            with contextlib.suppress(FileExistsError):
                open(os.environ["SSE_TEST_GATE"] + ".fastapi", "x").close()
        if name == "interpreters.daemon.serving":
            while not os.path.exists(os.environ["SSE_TEST_GATE"]):
                time.sleep(0.01)
        return None
sys.meta_path.insert(0, Gate())
from interpreters.cli.entry import main; main()
"""
"""`ssegrade daemon` whose serving part loads only once the file `SSE_TEST_GATE` exists, and
that marks when it first imports FastAPI (`SSE_TEST_GATE.fastapi`; its top module is only
looked for by the command line, to name a missing extra)."""


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="sse-start-agent-", dir="/tmp") as folder:
        Path(folder).chmod(0o755)
        yield Path(folder)


def _get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: d\r\nConnection: close\r\n\r\n".encode()


def _send(where: str | tuple[str, int], request: bytes) -> socket.socket:
    family = socket.AF_UNIX if isinstance(where, str) else socket.AF_INET
    conn = socket.socket(family, socket.SOCK_STREAM)
    conn.settimeout(60)
    conn.connect(where)
    conn.sendall(request)
    return conn


def _reply(conn: socket.socket) -> bytes:
    with conn:
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    return reply


def _answered_within(conn: socket.socket, seconds: float) -> bool:
    conn.settimeout(seconds)
    try:
        return conn.recv(1, socket.MSG_PEEK) != b""
    except TimeoutError:
        return False
    finally:
        conn.settimeout(60)


def _body(reply: bytes) -> object:
    return json.loads(reply.partition(b"\r\n\r\n")[2])


@pytest.mark.slow
def test_held_agent_requests_meet_the_difficulty_gate_once_the_server_serves(
    workdir: Path,
) -> None:
    """Also: the server's libraries load only once the agent-facing socket exists, never
    beside the set-up (whose Python would wait for the interpreter lock between its git
    commands)."""
    made = make_task(workdir / "t")
    gate = workdir / "serve-now"
    folder = Path(tempfile.mkdtemp(prefix="sse-", dir="/tmp"))
    folder.chmod(0o755)
    agent, admin, log = folder / "agent.sock", folder / "admin" / "admin.sock", folder / "log"
    command = daemon_command(made.task, made.source, made.results)
    command[2] = _GATED
    command += ["--agent-socket", str(agent), "--admin-socket", str(admin)]
    env = {**os.environ, "SSE_DIFFICULTY": "0", "SSE_TEST_GATE": str(gate)}
    with log.open("wb") as out:
        proc = subprocess.Popen(command, cwd=TOP, env=env, stdout=out, stderr=subprocess.STDOUT)
    running = RunningDaemon(proc, folder, agent, admin, log)
    try:
        wait_until(lambda: agent.exists() or proc.poll() is not None, "the agent socket", 120)
        assert proc.poll() is None, running.output()
        early = _reply(_send(str(agent), _get("/version")))
        assert early.startswith(b"HTTP/1.1 200 "), early
        assert _body(early) == {"version": version()}
        exited = b"POST /admin/agent_exited HTTP/1.1\r\nHost: d\r\nContent-Length: 2\r\n\r\n{}"
        held = [_send(str(agent), exited), _send(str(agent), _get("/reference/patch"))]
        for conn in held:
            assert not _answered_within(conn, 0.5)  # held: the server is not loaded yet
        gate.touch()
        unlock, reference = (_reply(conn) for conn in held)
        assert unlock.startswith(b"HTTP/1.1 403 "), unlock  # the admin's route, refused
        assert reference.startswith(b"HTTP/1.1 403 "), reference
        assert _body(reference) == {"error": REFERENCE_LOCKED}
        again = _reply(_send(str(agent), _get("/reference/patch")))
        assert _body(again) == {"error": REFERENCE_LOCKED}  # the agent phase never ended
        loaded = Path(f"{gate}.fastapi")
        assert loaded.exists()
        assert os.lstat(agent).st_ctime_ns <= os.lstat(loaded).st_ctime_ns
    finally:
        gate.touch()
        running.cleanup()


def _listening_unix(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.listen(HELD_LIMIT * 2)
    sock.setblocking(False)
    return sock


def test_a_client_that_dribbles_its_request_does_not_hold_the_answers(workdir: Path) -> None:
    """The attack: the agent sends its request a byte at a time, forever, to keep the answers
    busy (and the daemon, which waits for them before it serves, from serving)."""
    path = workdir / "agent.sock"
    with _listening_unix(path) as sock:
        answers = EarlyAnswers(sock)
        answers.start()
        done = threading.Event()

        def dribble() -> None:
            with socket.socket(socket.AF_UNIX) as conn:
                conn.connect(str(path))
                with_body = b"POST /x HTTP/1.1\r\nHost: d\r\nContent-Length: 100\r\n\r\n"
                for byte in with_body + b"x" * 100:
                    if done.wait(0.2):
                        return
                    try:
                        conn.sendall(bytes([byte]))
                    except OSError:
                        return

        slow = threading.Thread(target=dribble)
        slow.start()
        try:
            time.sleep(0.3)  # the dribbler is the connection in hand
            started = time.monotonic()
            reply = _reply(_send(str(path), _get("/version")))
            assert reply.startswith(b"HTTP/1.1 200 "), reply
            assert time.monotonic() - started < READ_SECONDS + 1.5
            started = time.monotonic()
            answers.stop()
            assert time.monotonic() - started < READ_SECONDS + 1.5
        finally:
            done.set()
            answers.stop()
            slow.join(30)


def test_no_more_than_the_limit_is_held(workdir: Path) -> None:
    """The attack: the agent opens request after request while the daemon starts, each held
    with its connection and body, to run the daemon out of descriptors or memory."""
    path = workdir / "agent.sock"
    with _listening_unix(path) as sock:
        answers = EarlyAnswers(sock)
        answers.start()
        held: list[socket.socket] = []
        try:
            for _ in range(HELD_LIMIT):
                held.append(_send(str(path), _get("/diff")))
            wait_until(lambda: len(answers._held) == HELD_LIMIT, "the requests held", 60)
            refused = _reply(_send(str(path), _get("/diff")))
            assert refused.startswith(b"HTTP/1.1 503 "), refused
            assert b"\r\nretry-after: 1\r\n" in refused.lower()
            assert _body(refused) == {"error": STARTING}
        finally:
            answers.stop()
            for conn in held:
                conn.close()


def test_a_request_held_on_a_tcp_listener_reaches_its_server(workdir: Path) -> None:
    """`--http-port`: the agent-facing TCP listener holds requests too, and relays them to
    the server on the same address, not to a Unix socket of that name."""
    with socket.socket(socket.AF_INET) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)
        address = sock.getsockname()
        answers = EarlyAnswers(sock)
        answers.start()
        try:
            version_reply = _reply(_send(address, _get("/version")))
            assert version_reply.startswith(b"HTTP/1.1 200 "), version_reply
            asked = _send(address, _get("/diff"))
            wait_until(lambda: len(answers._held) == 1, "the request held", 60)
        finally:
            answers.stop()
        sock.setblocking(True)
        sock.settimeout(30)
        taken, _ = sock.accept()  # the server's turn: the held request comes to it
        with taken:
            request = b""
            while b"\r\n\r\n" not in request:
                request += taken.recv(4096)
            assert request.startswith(b"GET /diff ")
            taken.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\ndiff")
        assert _reply(asked).endswith(b"\r\n\r\ndiff")
