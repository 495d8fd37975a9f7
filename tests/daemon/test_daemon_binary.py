"""SSEBench's tests of its daemon binary, against `ssegrade daemon` as a real process.

Rebuilt from what SSEBench's own binary tests ask of its daemon (requests, statuses, timings):
concurrent tool calls all complete; a fixed number of workers per listener, set by
`SSE_DAEMON_WORKERS`; read-only routes answer while a long tool call runs, even with one
worker; tool calls still run one at a time; SIGTERM and SIGINT end the daemon soon, with
keep-alive clients on all three listeners and a script running, and the script with it.

Where ssegrade's deployment differs, and only there, the task differs (`docs/ssebench/`):
the source tree is a git repository at one commit (SSEBench's tests give it a broken `.git`,
which ssegrade refuses: it records the baseline from it), so `/diff` and `/files` answer 200
where SSEBench's answer 500; the bash tool runs as an account of its own; and the running
script is found by its command line, not by a process id it writes in
`$(dirname "$0")/..`: it runs in a PID namespace of its own (`$$` is not the host's id), and
what it writes in its view of the task folder is not in the task folder.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx
import pytest

from tests.support.agentaccounts import agent_account
from tests.support.daemons import RunningDaemon, start_daemon
from tests.support.realtask import make_task
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="the bash tool needs an account of its own"),
]

EXIT_WITHIN = 8.0
"""SSEBench's bound for its daemon to stop after a signal, with room for a loaded host."""


@pytest.fixture(scope="module")
def account() -> Iterator[str]:
    with agent_account() as entry:
        yield entry.pw_name


@pytest.fixture
def folder() -> Iterator[Path]:
    """The test's folder, for its tasks."""
    made = Path(tempfile.mkdtemp(prefix="ssegrade-binary-", dir="/srv"))
    made.chmod(0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def daemons() -> Iterator[list[RunningDaemon]]:
    started: list[RunningDaemon] = []
    yield started
    for running in started:
        running.cleanup()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start(
    daemons: list[RunningDaemon],
    folder: Path,
    account: str,
    build: str,
    env: dict[str, str] | None = None,
    stderr: int | None = None,
) -> tuple[RunningDaemon, int]:
    """A daemon on three listeners (agent socket, admin socket, TCP) for a task whose build
    script runs `build`; answers it and its TCP port."""
    made = make_task(folder / "task")
    made.script("build.sh", f"#!/bin/sh\n{build}\n")
    port = _free_port()
    running = start_daemon(
        made.task,
        made.source,
        made.results,
        "--agent-user",
        account,
        "--http-port",
        str(port),
        env=env,
        stderr=stderr,
    )
    daemons.append(running)
    return running, port


def post(path: Path, target: str, body: Mapping[str, object]) -> httpx.Response:
    transport = httpx.HTTPTransport(uds=str(path))
    with httpx.Client(transport=transport, base_url="http://daemon", timeout=120) as client:
        return client.post(target, json=body)


def threads_of(running: RunningDaemon) -> int:
    """The daemon's threads once their count has settled: a request the early answers held
    (the readiness probe's) is relayed to the server by a thread that ends just after its
    reply reaches the client."""
    seen: list[int] = []

    def settled() -> bool:
        seen.append(len(os.listdir(f"/proc/{running.proc.pid}/task")))
        return len(seen) >= 3 and len(set(seen[-3:])) == 1

    wait_until(settled, "the daemon's thread count to settle", 30, 0.2)
    return seen[-1]


# ---------------------------------------------------------------------------- concurrency


def test_concurrent_tool_calls_all_complete(
    daemons: list[RunningDaemon], folder: Path, account: str
) -> None:
    running, _ = start(daemons, folder, account, "sleep 1")
    replies: dict[int, httpx.Response] = {}

    def call(index: int) -> None:
        if index % 4 == 0:
            replies[index] = post(running.agent, "/tool/bencher?action=build", {"grading": False})
        else:
            command = {"command": f"echo call-{index}"}
            replies[index] = post(running.agent, "/tool/bash?action=execute", command)

    started = time.monotonic()
    calls = [threading.Thread(target=call, args=(i,)) for i in range(12)]
    for made in calls:
        made.start()
    for made in calls:
        made.join(120)
    assert sorted(replies) == list(range(12))
    for index, reply in replies.items():
        assert reply.status_code == 200, (index, reply.text)
        if index % 4:
            assert f"call-{index}" in reply.json()["stdout"], (index, reply.text)
    assert time.monotonic() - started < 60


def test_the_worker_count_is_fixed_and_configurable(
    daemons: list[RunningDaemon], folder: Path, account: str
) -> None:
    default, _ = start(daemons, folder / "default", account, "true")
    with_default = threads_of(default)
    default.cleanup()
    one, _ = start(daemons, folder / "one", account, "true", env={"SSE_DAEMON_WORKERS": "1"})
    with_one = threads_of(one)
    one.cleanup()
    assert with_default < 48, with_default
    assert with_one < with_default, (with_one, with_default)
    bad, _ = start(daemons, folder / "bad", account, "true", env={"SSE_DAEMON_WORKERS": "zero"})
    assert threads_of(bad) == with_default
    assert "ignoring SSE_DAEMON_WORKERS='zero': not a whole number from 1 to 256" in bad.output()


# ---------------------------------------------------------------------------- responsive


def _get(path: Path, target: str) -> tuple[int, float]:
    started = time.monotonic()
    transport = httpx.HTTPTransport(uds=str(path))
    with httpx.Client(transport=transport, base_url="http://daemon", timeout=60) as client:
        status = client.get(target).status_code
    return status, time.monotonic() - started


def test_read_only_routes_answer_during_a_long_tool_call(
    daemons: list[RunningDaemon], folder: Path, account: str
) -> None:
    running, _ = start(daemons, folder, account, "true", env={"SSE_DAEMON_WORKERS": "1"})
    done: list[tuple[httpx.Response, float]] = []

    def call() -> None:
        started = time.monotonic()
        reply = post(
            running.agent, "/tool/bash?action=execute", {"command": "sleep 15; echo finished"}
        )
        done.append((reply, time.monotonic() - started))

    long_call = threading.Thread(target=call)
    long_call.start()
    time.sleep(0.5)
    for target in ("/version", "/capabilities", "/agent/dialog", "/diff", "/files"):
        status, _ = _get(running.agent, target)
        assert status == 200, target
        # Answered while the tool call still runs: a read queued behind it would come back
        # only after it (no stopwatch: a busy host makes a read slow, never out of order).
        assert long_call.is_alive(), target
        assert not done, target
    long_call.join(60)
    reply, took = done[0]
    assert reply.status_code == 200
    assert "finished" in reply.json()["stdout"]
    assert took >= 14.9


def test_tool_calls_still_run_one_at_a_time(
    daemons: list[RunningDaemon], folder: Path, account: str
) -> None:
    running, _ = start(daemons, folder, account, "true", env={"SSE_DAEMON_WORKERS": "1"})
    replies: list[httpx.Response] = []

    def call() -> None:
        replies.append(post(running.agent, "/tool/bash?action=execute", {"command": "sleep 1"}))

    started = time.monotonic()
    calls = [threading.Thread(target=call) for _ in range(2)]
    for made in calls:
        made.start()
    for made in calls:
        made.join(60)
    assert [r.status_code for r in replies] == [200, 200]
    assert time.monotonic() - started >= 1.9


# ---------------------------------------------------------------------------- shutdown


def _version_on(sock: socket.socket) -> None:
    """One request on a connection that stays open."""
    sock.sendall(b"GET /version HTTP/1.1\r\nHost: daemon\r\n\r\n")
    seen = b""
    while b"\r\n\r\n" not in seen:
        chunk = sock.recv(1024)
        assert chunk, "the daemon closed the connection early"
        seen += chunk
    assert seen.startswith(b"HTTP/1.1 200"), seen


def idle_clients(running: RunningDaemon, port: int) -> list[socket.socket]:
    """Keep-alive connections to all three listeners, each having served a request."""
    tcp = socket.create_connection(("127.0.0.1", port))
    agent = socket.socket(socket.AF_UNIX)
    agent.connect(str(running.agent))
    admin = socket.socket(socket.AF_UNIX)
    admin.connect(str(running.admin))
    for made in (tcp, agent, admin):
        _version_on(made)
    return [tcp, agent, admin]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1]
    except (FileNotFoundError, IndexError):
        return False
    return not state.startswith("Z")


def _sleeping_build(seconds: int) -> str:
    """A build that sleeps `seconds` (a number of this test's own, by which its process is
    found: in its PID namespace `$$` is not the host's process id, and in full containment it
    writes nothing the host sees)."""
    return f"exec sleep {seconds}"


def _sleeper(seconds: int) -> int | None:
    """The host's process id of `sleep seconds`, if one runs."""
    wanted = f"sleep\0{seconds}\0".encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/cmdline").read_bytes() == wanted:
                    return int(entry)
            except OSError:
                continue
    return None


def _start_build(running: RunningDaemon, seconds: int) -> tuple[socket.socket, int]:
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(str(running.agent))
    body = b'{"grading": false}'
    conn.sendall(
        b"POST /tool/bencher?action=build HTTP/1.1\r\nHost: daemon\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )

    def sleeper() -> int | None:
        assert running.proc.poll() is None, running.output()
        return _sleeper(seconds)

    return conn, wait_until(sleeper, "the build to run its sleep", 60, detail=running.output)


def _wait_exit(running: RunningDaemon) -> tuple[int, float]:
    started = time.monotonic()
    try:
        code = running.proc.wait(EXIT_WITHIN)
    except Exception:
        running.proc.kill()
        raise
    return code, time.monotonic() - started


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_exits_on_a_signal_with_keep_alive_clients_and_a_running_script(
    daemons: list[RunningDaemon], folder: Path, account: str, signum: int
) -> None:
    seconds = 1000 + os.getpid() % 1000 * 10 + signum
    running, port = start(daemons, folder, account, _sleeping_build(seconds))
    clients = idle_clients(running, port)
    build, script = _start_build(running, seconds)
    assert _alive(script)
    running.proc.send_signal(signum)
    code, took = _wait_exit(running)
    assert code == 0
    assert took < EXIT_WITHIN
    wait_until(lambda: not _alive(script), "the build script to end", 5)
    for made in (*clients, build):
        made.close()


def test_exits_when_its_log_pipe_is_full(
    daemons: list[RunningDaemon], folder: Path, account: str
) -> None:
    read, write = os.pipe2(os.O_CLOEXEC)
    try:
        fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, 4096)
        running, port = start(daemons, folder, account, "true", stderr=write)
        clients = idle_clients(running, port)
        filler = os.open(f"/proc/self/fd/{write}", os.O_WRONLY | os.O_NONBLOCK)
        try:
            while True:
                os.write(filler, b"x" * 512)
        except BlockingIOError:
            pass
        finally:
            os.close(filler)
        running.proc.send_signal(signal.SIGTERM)
        _code, took = _wait_exit(running)
        assert took < EXIT_WITHIN
        for made in clients:
            made.close()
    finally:
        os.close(read)
        os.close(write)
