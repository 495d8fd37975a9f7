"""A hostile agent against the daemon's agent-facing socket: it must not stall grading.

An `error` grade is left out of a report's shares, so an agent that fails gains by making its
own grading fail. Here the agent floods the agent-facing socket (idle connections, bodies of
a gigabyte, requests queued behind a slow build) and `ssegrade evaluate --daemon` must still
grade as it does without the flood, and write `result.json`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.daemon.accepting import _Throttled
from interpreters.daemon.server import CONNECTIONS
from ssegrade.protocol import PREFIX
from tests.support.daemons import RunningDaemon, post_bencher, running_daemon
from tests.support.rawhttp import reply_to, send_request, wait_until_read
from tests.support.realtask import RealTask, make_task, ssegrade
from tests.support.scriptmarks import mark, wait_for_mark
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow

_SLOW_BUILD = """#!/bin/sh
if [ -f slow ]; then {started} sleep 60; fi
. ./lib.sh
echo "$VALUE" > out.txt
"""


def _connect(path: Path) -> socket.socket | None:
    """A connection to a Unix socket that sends nothing; None when the backlog is full."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        sock.connect(str(path))
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.EAGAIN, errno.ECONNREFUSED):
            return None
        raise
    return sock


def _raw_request(path: Path, head: bytes, body: bytes) -> bytes:
    """Send a request by hand (headers that lie, bodies streamed); answer the reply's start."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(path))
        sock.sendall(head)
        with contextlib.suppress(OSError):  # the daemon may close before all is sent
            sock.sendall(body)
        reply = b""
        with contextlib.suppress(OSError):
            while b"\r\n\r\n" not in reply:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                reply += chunk
        return reply


def _peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def _evaluate(made_task: Path, source: Path, results: Path, daemon: RunningDaemon) -> float:
    started = time.monotonic()
    done = ssegrade(
        "evaluate",
        "--task",
        str(made_task),
        "--source",
        str(source),
        "--results",
        str(results),
        "--timeout",
        "300",
        "--daemon",
        str(daemon.admin),
        timeout=400,
    )
    assert done.returncode == 0, done.stderr
    return time.monotonic() - started


@contextlib.contextmanager
def _hammering(daemon: RunningDaemon) -> Iterator[list[int]]:
    """Threads that keep sending big bodies and diffs to the agent socket meanwhile."""
    stop = threading.Event()
    statuses: list[int] = []

    big = 2 << 20
    requests = [
        (b"GET /diff HTTP/1.1\r\nhost: d\r\n\r\n", b""),
        (
            b"POST /tool/bencher?action=build HTTP/1.1\r\nhost: d\r\n"
            b"content-type: application/json\r\ncontent-length: %d\r\n\r\n" % big,
            b"x" * big,
        ),
    ]

    def hammer() -> None:
        # Raw sockets, each closed here whatever the daemon does, so that no client library
        # leaves a socket to the garbage collector when the daemon hangs up mid-body.
        while not stop.is_set():
            for head, body in requests:
                with contextlib.suppress(OSError):
                    reply = _raw_request(daemon.agent, head, body)
                    if reply.startswith(b"HTTP/1.1 "):
                        statuses.append(int(reply.split()[1]))
            stop.wait(0.05)

    threads = [threading.Thread(target=hammer, daemon=True) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        yield statuses
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)


def test_a_flooded_agent_socket_does_not_stall_grading(tmp_path: Path) -> None:
    made = make_task(tmp_path)
    # The slow build marks itself with a name of this test's own when it starts
    # (`tests.support.scriptmarks`: a script writes nothing the host sees).
    marks = Path(tempfile.mkdtemp(prefix="ssegrade-flood-", dir="/srv"))
    started = marks / "started"
    made.script("build.sh", _SLOW_BUILD.format(started=mark(str(started))))
    try:
        _flood(made, started)
    finally:
        shutil.rmtree(marks, ignore_errors=True)


def _flood(made: RealTask, started: Path) -> None:
    with running_daemon(made.task, made.source, made.results, level="0") as daemon:
        # Bodies over 1 MiB are refused before they are read whole, however they come.
        lying = _raw_request(
            daemon.agent,
            b"POST /tool/bencher?action=build HTTP/1.1\r\nhost: d\r\n"
            b"content-type: application/json\r\ncontent-length: 1048576000\r\n\r\n",
            b"x" * (4 << 20),
        )
        assert lying.startswith(b"HTTP/1.1 413 "), lying
        chunk = b"x" * (256 << 10)
        chunked = _raw_request(
            daemon.agent,
            b"POST /tool/bencher?action=build HTTP/1.1\r\nhost: d\r\n"
            b"content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
            (f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n") * 16,
        )
        assert chunked.startswith(b"HTTP/1.1 413 "), chunked

        # Requests queued behind a slow agent build are refused as soon as the agent exits.
        (made.source / "slow").write_text("")
        replies: list[tuple[str, int, float]] = []

        def build() -> None:
            with daemon.http("agent") as agent:
                reply = post_bencher(agent, "build")
            replies.append(("build", reply.status_code, time.monotonic()))

        running = threading.Thread(target=build)
        running.start()
        wait_for_mark(started, daemon.proc, daemon.output)
        targets = ["/tool/bencher?action=build", f"{PREFIX}/tool/bencher?action=build"]
        queued = [(what, send_request(daemon.agent, "POST", what, {})) for what in targets * 10]
        for _, sock in queued:
            wait_until_read(sock)  # the daemon holds them: they wait for their turn
        with daemon.http("admin") as admin:
            exited_at = time.monotonic()
            assert admin.post("/admin/agent_exited").status_code == 200
        for what, sock in queued:
            status, _ = reply_to(sock)
            replies.append((what, status, time.monotonic()))
        running.join(60)
        (made.source / "slow").unlink()
        waited = [(what, status) for what, status, _ in replies if what != "build"]
        assert waited == [(what, 403) for what, _ in waited]
        assert len(waited) == 20
        assert max(at for _, _, at in replies) - exited_at < 20  # not after 20 builds

        # Graded once in peace, for the reference.
        calm = _evaluate(made.task, made.source, made.results, daemon)
        reference = json.loads((made.results / "result.json").read_text())["patch_result"]
        for name in ("result.json", "checks.jsonl"):  # the evaluator's, made again below
            (made.results / name).unlink()

        # Then with the agent socket full of idle connections and busy clients.
        started_flood = time.time()
        idle = [sock for sock in (_connect(daemon.agent) for _ in range(300)) if sock]
        try:
            assert len(idle) >= CONNECTIONS["agent"]
            with _hammering(daemon) as statuses:
                flooded = _evaluate(made.task, made.source, made.results, daemon)
                # The idle connections go: the hammering reaches the daemon, which answers it.
                for sock in idle:
                    sock.close()
                wait_until(lambda: statuses, "an answer to the hammering", 60)
        finally:
            for sock in idle:
                sock.close()
        graded = json.loads((made.results / "result.json").read_text())["patch_result"]
        assert (made.results / "result.json").stat().st_mtime > started_flood
        for result in (graded, reference):
            result.pop("error_log")  # names the PoC's staged path, new for each grading
        assert graded == reference
        assert graded["status"] == "failed"
        print(f"evaluate --daemon: {calm:.1f} s calm, {flooded:.1f} s flooded")
        assert flooded < calm * 3 + 30, (calm, flooded)
        assert statuses, "the hammering threads got no reply at all"
        assert set(statuses) <= {200, 413}  # the changes stay visible after the agent phase
        assert _peak_rss_kib(daemon.proc.pid) < 400 * 1024
        with daemon.http("agent") as agent:  # the agent socket still serves once it calms
            assert agent.get("/version").status_code == 200
        assert len(daemon.output()) < 64 * 1024  # nothing logged per refused connection


def test_a_failing_accept_is_said_at_most_once_a_second(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="interpreters.daemon.accepting")
    now = [100.0]
    throttled = _Throttled(clock=lambda: now[0])
    for step in range(50):  # 50 failures over 2.45 s
        throttled("cannot accept")
        now[0] += 0.05 if step < 49 else 0.0
    throttled.clock = lambda: now[0] + 1.0
    throttled("cannot accept")
    said = [record.getMessage() for record in caplog.records]
    assert said[0] == "cannot accept"
    assert len(said) == 4
    assert said[-1].startswith("cannot accept (")
    assert "more like it not shown" in said[-1]


_SERVE = """
import logging
import sys
from pathlib import Path
from interpreters.daemon.server import bind_unix, serve
from interpreters.daemon.service import Service
from ssegrade.protocol import LEVELS
from tests.support.fakedaemon import FOLDER, TASK, FakeBackend
logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")
ports = FakeBackend().ports()
service = Service(task=TASK, folder=FOLDER, level=LEVELS[0], **ports, version="1")
serve(service, [bind_unix(Path(sys.argv[1]), 0o666, "agent")], idle=float(sys.argv[2]))
"""


def _version(sock: socket.socket) -> bytes:
    """Ask `GET /version` on a kept-alive connection; answer the whole reply."""
    sock.sendall(b"GET /version HTTP/1.1\r\nhost: d\r\n\r\n")
    reply = b""
    while b"\r\n\r\n" not in reply:
        reply += sock.recv(4096)
    head, _, body = reply.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(4096)
    return head


def test_an_idle_connection_is_closed_a_busy_one_is_not(tmp_path: Path) -> None:
    path = tmp_path / "agent.sock"
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVE, str(path), "1.0"],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith(b"listening (agent)")  # ready
        with socket.socket(socket.AF_UNIX) as silent, socket.socket(socket.AF_UNIX) as talker:
            silent.settimeout(0.25)
            talker.settimeout(30)
            started = time.monotonic()
            talker.connect(str(path))
            silent.connect(str(path))
            closed = False
            while not closed:  # the talker asks every 0.25 s or so till the silent one is closed
                assert _version(talker).startswith(b"HTTP/1.1 200 ")
                with contextlib.suppress(TimeoutError):
                    closed = silent.recv(1) == b""  # closed by the daemon, not by us
                assert time.monotonic() - started < 10
            assert time.monotonic() - started >= 1.0  # not before the idle limit
            assert _version(talker).startswith(b"HTTP/1.1 200 ")  # older, and still served
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()
