"""The daemon answers on its admin socket from its first milliseconds, and the agent reaches
it only once the baseline is recorded.

While the daemon loads its libraries, probes the containment and records the baseline, its
admin socket (bound first thing) answers `GET /version`, as SSEBench's SDK asks on connecting,
and holds anything that needs the grading set up until the real server answers it
(`interpreters.daemon.starting`). The agent-facing socket is bound only once the baseline is
recorded: an agent that changes the tree the instant it can reach the daemon still has that
change graded. Real daemons, real sockets; the order is read from the kernel's clocks.
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
from interpreters.daemon.starting import STARTING, EarlyAnswers
from tests.support.daemons import start_daemon
from tests.support.realtask import make_task
from tests.support.waiting import wait_until

FILES = 3000
"""Files in the source tree of the daemon tests: enough that the baseline takes a while."""


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="sse-early-", dir="/tmp") as folder:
        Path(folder).chmod(0o755)
        yield Path(folder)


def _ask(path: Path, request: bytes, timeout: float = 60) -> bytes:
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(timeout)
        conn.connect(str(path))
        conn.sendall(request)
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    return reply


def _get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: d\r\nConnection: close\r\n\r\n".encode()


def _body(reply: bytes) -> object:
    return json.loads(reply.partition(b"\r\n\r\n")[2])


def _listening(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.listen(8)
    sock.setblocking(False)
    return sock


def test_version_is_answered_and_the_rest_held_for_the_server(workdir: Path) -> None:
    """A request the early answers cannot give waits, whole, for the real server, and its
    reply comes back on the client's own connection; one that cannot be held is refused."""
    path = workdir / "admin.sock"
    with _listening(path) as sock:
        answers = EarlyAnswers(sock)
        answers.start()
        replies: dict[str, bytes] = {}
        post = b"POST /prepare_grading HTTP/1.1\r\nHost: d\r\nContent-Length: 2\r\n\r\n{}"
        asking = [
            threading.Thread(target=lambda: replies.update(diff=_ask(path, _get("/diff")))),
            threading.Thread(target=lambda: replies.update(post=_ask(path, post))),
        ]
        try:
            reply = _ask(path, _get("/version"))
            assert reply.startswith(b"HTTP/1.1 200 ")
            assert _body(reply) == {"version": version()}
            for request in (
                b"garbage\r\n\r\n",
                b"POST /x HTTP/1.1\r\nHost: d\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            ):
                refused = _ask(path, request)
                assert refused.startswith(b"HTTP/1.1 503 "), refused
                assert b"\r\nretry-after: 1\r\n" in refused.lower()
                assert _body(refused) == {"error": STARTING}
            for thread in asking:
                thread.start()
            time.sleep(0.5)
            assert replies == {}  # held: no answer before the server serves
        finally:
            answers.stop()
        sock.setblocking(True)
        sock.settimeout(30)
        for _ in asking:  # the real server's turn: each held request comes whole, to be closed
            taken, _ = sock.accept()
            with taken:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += taken.recv(4096)
                assert request.lower().count(b"connection: close") == 1
                answer = b"diff" if request.startswith(b"GET /diff ") else b"post"
                if answer == b"post":
                    assert request.endswith(b"\r\n\r\n{}")
                taken.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\n" + answer)
        for thread in asking:
            thread.join(30)
        assert replies["diff"].endswith(b"\r\n\r\ndiff"), replies
        assert replies["post"].endswith(b"\r\n\r\npost"), replies


def test_once_stopped_a_connection_waits_for_the_server(workdir: Path) -> None:
    path = workdir / "admin.sock"
    with _listening(path) as sock:
        answers = EarlyAnswers(sock)
        answers.start()
        answers.stop()
        answers.stop()  # idempotent
        with socket.socket(socket.AF_UNIX) as client:
            client.settimeout(0.5)
            client.connect(str(path))  # held in the backlog
            client.sendall(_get("/version"))
            with pytest.raises(TimeoutError):
                client.recv(1)  # nobody answers but the server to come
            sock.setblocking(True)
            taken, _ = sock.accept()  # the server's turn: the request is whole
            with taken:
                assert taken.recv(4096).startswith(b"GET /version ")


def _big_task(root: Path) -> tuple[Path, Path, Path]:
    made = make_task(root)
    bulk = made.source / "bulk"
    bulk.mkdir()
    for index in range(FILES):
        (bulk / f"f{index}.txt").write_text(f"file {index}\n" * 8)
    git = ["git", "-C", str(made.source), "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "--amend", "--no-edit"], check=True)
    return made.task, made.source, made.results


@pytest.mark.slow
def test_the_admin_socket_answers_before_the_baseline_the_agent_only_after(
    workdir: Path,
) -> None:
    task, source, results = _big_task(workdir / "t")
    running = start_daemon(task, source, results, wait=False)
    try:

        def version() -> tuple[bytes, int] | None:
            try:
                reply = _ask(running.admin, _get("/version"))
            except OSError:
                assert running.proc.poll() is None, running.output()
                return None
            return reply, time.time_ns()

        # ask at once, as an entrypoint polling the admin socket would
        reply, answered = wait_until(version, "an answer on the admin socket", 120, 0.002)
        assert reply.startswith(b"HTTP/1.1 200 "), reply
        assert not running.agent.exists()  # the baseline is still being recorded
        early = _ask(running.admin, _get("/diff"))  # held until the daemon serves it
        assert early.startswith(b"HTTP/1.1 200 "), early
        running.wait_ready()
        assert answered < os.lstat(running.agent).st_ctime_ns
        served = _ask(running.admin, _get("/diff"))
        assert served.startswith(b"HTTP/1.1 200 "), served
    finally:
        running.cleanup()


@pytest.mark.slow
def test_an_agent_that_changes_the_tree_at_once_has_the_change_graded(workdir: Path) -> None:
    """The attack: an agent (or its entrypoint) waits for the agent-facing socket and changes
    the tree the instant it exists; had the baseline been recorded after, it would hold the
    change and the diff would miss it."""
    task, source, results = _big_task(workdir / "t")
    running = start_daemon(task, source, results, wait=False)
    planted = source / "planted.txt"
    done = threading.Event()

    def agent() -> None:
        while not done.is_set():
            try:
                with socket.socket(socket.AF_UNIX) as conn:
                    conn.connect(str(running.agent))
            except OSError:
                time.sleep(0.001)
                continue
            planted.write_text("written the instant the agent could reach the daemon\n")
            return

    thread = threading.Thread(target=agent)
    thread.start()
    try:
        running.wait_ready(120)
        thread.join(120)
        assert planted.exists()
        diff = _body(_ask(running.admin, _get("/diff")))
        assert isinstance(diff, dict)
        assert "planted.txt" in diff["diff"]
    finally:
        done.set()
        thread.join()
        running.cleanup()
