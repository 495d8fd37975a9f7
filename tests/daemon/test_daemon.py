"""The daemon as a real process on real sockets: `ssegrade daemon` with real git, real scripts.

The gate at every level on both sockets, the admin-only endpoints, the two phases, socket modes,
PoC paths, one action at a time, `GET /diff` and `GET /files` against what grading captures,
start-up refusals and SIGTERM (the daemon processes: `tests/support/daemons.py`).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ssegrade.protocol import ACTIONS, LEVELS, PREFIX, DiffText, Level, decode_patch
from tests.support.daemons import (
    TOP,
    RunningDaemon,
    daemon_command,
    post_bencher,
    start_daemon,
)
from tests.support.rawhttp import reply_to, send_request, wait_until_read
from tests.support.realtask import RealTask, make_task
from tests.support.scriptmarks import mark, wait_for_mark
from tests.support.ssebench_wire import REFERENCE_LOCKED

pytestmark = pytest.mark.slow


@pytest.fixture
def daemons() -> Iterator[list[RunningDaemon]]:
    """Daemons started by a test, stopped and cleaned up after it."""
    started: list[RunningDaemon] = []
    yield started
    for running in started:
        running.cleanup()


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ssegrade-daemon-test-") as folder:
        Path(folder).chmod(0o755)
        yield Path(folder)


def launch(
    daemons: list[RunningDaemon], made: RealTask, *args: str, level: str | None = "0"
) -> RunningDaemon:
    running = start_daemon(made.task, made.source, made.results, *args, level=level)
    daemons.append(running)
    return running


@pytest.fixture
def marks() -> Iterator[Path]:
    """A name of this test's own, which the task's scripts mark themselves with to say how far
    they got (`tests.support.scriptmarks`: they write nothing the host sees)."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-marks-", dir="/srv"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------------------- the gate


@pytest.fixture(scope="module")
def gate_daemons() -> Iterator[dict[int, RunningDaemon]]:
    """A daemon at each level, started together (their start-ups overlap)."""
    with tempfile.TemporaryDirectory(prefix="ssegrade-gate-") as folder:
        root = Path(folder)
        root.chmod(0o755)
        started: dict[int, RunningDaemon] = {}
        try:
            for level in LEVELS:
                made = make_task(root / str(level.number))
                started[level.number] = start_daemon(
                    made.task, made.source, made.results, level=str(level.number), wait=False
                )
            for running in started.values():
                running.wait_ready()
            yield started
        finally:
            for running in started.values():  # all stop together
                running.ask_to_stop()
            for running in started.values():
                running.cleanup()


@pytest.mark.parametrize("level", LEVELS, ids=[f"level-{lv.number}" for lv in LEVELS])
def test_gate_on_both_sockets(level: Level, gate_daemons: dict[int, RunningDaemon]) -> None:
    running = gate_daemons[level.number]
    with running.http("agent") as agent, running.http("admin") as admin:
        caps = agent.get("/capabilities").json()
        assert (caps["level"], caps["level_name"]) == (level.number, level.name)
        assert admin.get("/capabilities").json()["actions"] == list(ACTIONS)
        assert post_bencher(admin, "build").json()["code"] == 0  # so that run_poc can run
        for action in ACTIONS:
            body = {"poc": "pocs/poc1.bin"} if action == "run_poc" else {}
            reply = post_bencher(agent, action, **body)
            if action in level.actions:
                assert reply.status_code == 200, reply.text
                assert isinstance(reply.json()["code"], int)
            else:
                assert reply.status_code == 403, reply.text
                assert reply.json() == {
                    "error": f"{action} is not available at difficulty level {level.number}"
                    f" ({level.name})"
                }
            refused = post_bencher(agent, action, grading=True, **body)
            assert refused.status_code == 403
            assert refused.json() == {"error": "grading runs only through the admin socket"}
            assert post_bencher(admin, action, **body).status_code == 200
            not_yet = post_bencher(admin, action, grading=True, **body)
            assert not_yet.status_code == 200
            assert not_yet.json()["code"] == -1
        for method, path in (
            ("POST", "/prepare_grading"),
            ("POST", "/admin/agent_exited"),
        ):
            reply = agent.request(method, path)
            assert reply.status_code == 403
            assert reply.json() == {"error": "endpoint is only available on the admin socket"}
        reply = agent.get("/reference/patch")  # until the agent phase is over
        assert reply.status_code == 403
        assert reply.json() == {"error": REFERENCE_LOCKED}
        assert agent.get("/capabilities").json()["agent_phase"] is True


def test_tcp_listener_is_agent_facing(workdir: Path, daemons: list[RunningDaemon]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    made = make_task(workdir)
    launch(daemons, made, "--http-port", str(port), level="3")
    with httpx.Client(base_url=f"http://127.0.0.1:{port}{PREFIX}", timeout=60) as tcp:
        assert tcp.get("/capabilities").json()["listener"] == "agent"
        assert post_bencher(tcp, "build").json()["code"] == 0
        assert post_bencher(tcp, "function_test").status_code == 403
        assert post_bencher(tcp, "build", grading=True).status_code == 403
        assert tcp.post("/prepare_grading").status_code == 403


def test_socket_modes(workdir: Path, daemons: list[RunningDaemon]) -> None:
    running = launch(daemons, make_task(workdir))
    agent, admin = running.agent.lstat(), running.admin.lstat()
    assert stat.S_ISSOCK(agent.st_mode)
    assert stat.S_ISSOCK(admin.st_mode)
    assert stat.S_IMODE(agent.st_mode) == 0o666
    assert stat.S_IMODE(admin.st_mode) == 0o600
    assert stat.S_IMODE(running.admin.parent.lstat().st_mode) == 0o700
    assert admin.st_uid == os.geteuid()


# ---------------------------------------------------------------------------- requests


def test_poc_paths(workdir: Path, daemons: list[RunningDaemon]) -> None:
    made = make_task(workdir)
    running = launch(daemons, made)
    with running.http("agent") as agent, running.http("admin") as admin:
        before = post_bencher(agent, "run_poc", poc="pocs/poc1.bin")
        assert before.status_code == 200
        assert before.json()["code"] == -1
        assert "build" in before.json()["stderr"]
        assert post_bencher(agent, "build").json()["code"] == 0
        for client in (agent, admin):
            for bad in ("pocs/../pocs/poc1.bin", f"{made.task}/../task/pocs/poc1.bin", "../x"):
                reply = post_bencher(client, "run_poc", poc=bad)
                assert reply.status_code == 400, bad
                assert "must not contain '..'" in reply.json()["error"]
            reply = post_bencher(client, "run_poc", poc="config.yaml")
            assert reply.status_code == 400
            assert reply.json()["error"].startswith("the task names no PoC 'config.yaml'")
        absolute = post_bencher(agent, "run_poc", poc=str(made.task / "pocs" / "poc2.bin"))
        assert absolute.status_code == 200
        assert absolute.json()["code"] == 1  # the unfixed project: the PoC still triggers
        relative = post_bencher(agent, "run_poc", poc="./pocs/poc2.bin")
        assert relative.json()["code"] == 1


def test_two_bencher_calls_run_one_at_a_time(workdir: Path, daemons: list[RunningDaemon]) -> None:
    made = make_task(workdir)
    made.script("build.sh", "#!/bin/sh\ndate +%s.%N\nsleep 1\ndate +%s.%N\n")
    running = launch(daemons, made)
    replies: list[dict[str, object]] = []

    def call() -> None:
        with running.http("agent") as agent:
            replies.append(post_bencher(agent, "build").json())

    threads = [threading.Thread(target=call) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert [reply["code"] for reply in replies] == [0, 0], replies
    spans = [tuple(float(t) for t in str(reply["stdout"]).split()) for reply in replies]
    first, second = sorted(spans)
    assert first[1] <= second[0], spans


# ---------------------------------------------------------------------------- the phases


def test_agent_phase_then_agent_exited(workdir: Path, daemons: list[RunningDaemon]) -> None:
    made = make_task(workdir)
    running = launch(daemons, made, level="1")
    with running.http("agent") as agent, running.http("admin") as admin:
        assert post_bencher(agent, "build").json()["code"] == 0
        assert post_bencher(agent, "run_poc", poc="pocs/poc1.bin").json()["code"] == 1
        made.set_value("fixed")  # the live tree is what the agent's checks test
        assert post_bencher(agent, "build").json()["code"] == 0
        assert post_bencher(agent, "run_poc", poc="pocs/poc1.bin").json()["code"] == 0
        assert post_bencher(agent, "function_test").json()["code"] == 0
        assert agent.get("/diff").json()["diff"].endswith("+VALUE=fixed\n")
        assert admin.post("/admin/agent_exited").json() == {"agent_phase": False}
        for action in ("build", "function_test"):
            reply = post_bencher(agent, action)
            assert reply.status_code == 403
            assert reply.json() == {
                "error": "the agent phase is over: the agent-facing tools are closed"
            }
        assert agent.get("/diff").status_code == 200  # changes stay visible, as in SSEBench
        assert agent.get("/files").status_code == 200
        caps = agent.get("/capabilities").json()
        assert (caps["agent_phase"], caps["actions"]) == (False, [])
        assert admin.get("/diff").status_code == 200
        assert post_bencher(admin, "build").status_code == 200
    assert "the agent exited" in running.output()


def test_agent_exited_aborts_the_agent_action_in_flight(
    workdir: Path, marks: Path, daemons: list[RunningDaemon]
) -> None:
    made = make_task(workdir)
    made.script("build.sh", f"#!/bin/sh\necho started\n{mark(f'{marks}/started')}\nsleep 120\n")
    running = launch(daemons, made)
    replies: list[httpx.Response] = []

    def build() -> None:
        with running.http("agent") as agent:
            replies.append(post_bencher(agent, "build"))

    thread = threading.Thread(target=build)
    thread.start()
    wait_for_mark(marks / "started", running.proc, running.output)
    started = time.monotonic()
    with running.http("admin") as admin:
        assert admin.post("/admin/agent_exited").status_code == 200
    thread.join(60)
    assert time.monotonic() - started < 30
    assert len(replies) == 1
    assert replies[0].json()["stdout"] == "started\n"
    assert replies[0].json()["code"] != 0


def test_grading_session_is_fresh_and_applies_once(
    workdir: Path, daemons: list[RunningDaemon]
) -> None:
    made = make_task(workdir)
    made.script(
        "build.sh",
        '#!/bin/sh\n[ -f "$HOME/cache" ] && echo "cache from $(cat "$HOME/cache")"\n'
        'echo "$PWD" > "$HOME/cache"\n. ./lib.sh\necho "$VALUE" > out.txt\n',
    )
    running = launch(daemons, made)
    with running.http("agent") as agent, running.http("admin") as admin:
        assert post_bencher(agent, "build").json()["stdout"] == ""
        assert post_bencher(agent, "build").json()["stdout"].startswith("cache from")
        made.set_value("fixed")
        first = admin.post("/prepare_grading").json()
        second = admin.post("/prepare_grading").json()
        assert first == second
        assert first["outcome"] == "prepared"
        assert first["empty"] is False
        graded = post_bencher(admin, "build", grading=True).json()
        assert graded["code"] == 0
        assert graded["stdout"] == ""  # nothing of the agent phase's HOME is left
        assert post_bencher(admin, "run_poc", grading=True, poc="pocs/poc1.bin").json()["code"] == 0
        assert admin.get("/final_diff").json()["diff"].endswith("+VALUE=fixed\n")
    applies = sorted(p.name for p in (made.results / "logs").iterdir() if "apply" in p.name)
    assert len(applies) == 1, applies
    assert (made.results / "commits.log").read_bytes() == b""


def test_diff_and_files_equal_what_grading_captures(
    workdir: Path, daemons: list[RunningDaemon]
) -> None:
    made = make_task(workdir)
    running = launch(daemons, made)
    made.set_value("fixed")
    (made.source / "tests" / "exists.sh").unlink()
    (made.source / "new.txt").write_text("new\n")
    (made.source / "blob.bin").write_bytes(bytes(range(256)))
    (made.source / "latin1.txt").write_bytes(b"caf\xe9\n")
    (made.source / "lib.sh").chmod(0o755)
    (made.source / "link").symlink_to("lib.sh")
    (made.source / "out.txt").write_text("ignored\n")
    odd = 'we "ird\nnam\u00e9 .txt'  # a space, a quote, a newline, non-ASCII: git quotes it
    (made.source / odd).write_text("odd\n")
    with running.http("agent") as agent, running.http("admin") as admin:
        live = agent.get("/diff").json()
        files = agent.get("/files").json()["files"]
        assert admin.get("/diff").json() == live
        assert admin.get("/files").json()["files"] == files
        assert admin.post("/prepare_grading").json()["outcome"] == "prepared"
        final = admin.get("/final_diff").json()
    captured = (made.results / "final.patch").read_bytes()
    assert live["base64"] is not None  # latin1.txt is not UTF-8
    assert decode_patch(DiffText.model_validate(live)) == captured
    assert final == live
    assert b'diff --git "a/we \\"ird\\nnam\\303\\251 .txt"' in captured
    got = {f["path"]: (f["status"], f["kind"], f["old_mode"], f["new_mode"]) for f in files}
    assert got == {
        "blob.bin": ("added", "added", None, "100644"),
        "latin1.txt": ("added", "added", None, "100644"),
        "lib.sh": ("modified", "modified", "100644", "100755"),
        "link": ("added", "added", None, "120000"),
        "new.txt": ("added", "added", None, "100644"),
        "tests/exists.sh": ("deleted", "deleted", "100644", None),
        odd: ("added", "added", None, "100644"),
    }
    counts = {f["path"]: (f["additions"], f["deletions"], f["binary"]) for f in files}
    assert counts["blob.bin"] == (0, 0, True)
    assert counts[odd] == (1, 0, False)
    assert counts["lib.sh"] == (1, 1, False)


# ---------------------------------------------------------------------------- start and stop


@pytest.mark.parametrize("value", ["", "5", "-1", "two", "2.0", " 2"])
def test_invalid_difficulty_refuses_to_start(value: str, workdir: Path) -> None:
    made = make_task(workdir)
    running = start_daemon(made.task, made.source, made.results, level=value, wait=False)
    try:
        code = running.proc.wait(60)
        lines = running.output().strip().splitlines()
        assert code == 2
        assert lines == [
            f"ssegrade: error: SSE_DIFFICULTY must be one of 0, 1, 2, 3, 4 (got {value!r})"
        ]
        assert not running.agent.exists()
        assert not running.admin.exists()
    finally:
        running.cleanup()


def test_unset_difficulty_is_level_2(workdir: Path, daemons: list[RunningDaemon]) -> None:
    running = launch(daemons, make_task(workdir), level=None)
    with running.http("agent") as agent:
        caps = agent.get("/capabilities").json()
    assert (caps["level"], caps["level_name"]) == (2, "NO_FUTURE_TEST")
    assert caps["actions"] == ["build", "function_test"]


def test_baseline_is_recorded_before_the_agent_listener(
    workdir: Path, daemons: list[RunningDaemon]
) -> None:
    made = make_task(workdir)
    shutil.rmtree(made.source / ".git")
    broken = start_daemon(made.task, made.source, made.results, wait=False)
    try:
        assert broken.proc.wait(60) == 2
        lines = broken.output().strip().splitlines()
        assert len(lines) == 1
        assert lines[0].startswith("ssegrade: error: cannot record the baseline of")
        assert not broken.agent.exists()
        assert not broken.admin.exists()
    finally:
        broken.cleanup()
    good = launch(daemons, make_task(workdir / "again"))
    text = good.output()
    assert text.index("baseline recorded") < text.index("listening")


def test_admin_folder_open_to_others_is_refused(workdir: Path) -> None:
    made = make_task(workdir)
    folder = Path(tempfile.mkdtemp(prefix="sse-", dir="/tmp"))
    try:
        folder.chmod(0o755)
        done = subprocess.run(
            [
                *daemon_command(made.task, made.source, made.results),
                "--agent-socket",
                str(folder / "agent.sock"),
                "--admin-socket",
                str(folder / "admin.sock"),
            ],
            cwd=TOP,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2
        assert done.stderr.strip().splitlines() == [
            f"ssegrade: error: admin socket folder {folder} must be mode 0700 and owned by uid"
            f" {os.geteuid()} (it has mode 0755, uid {os.geteuid()}): give the socket a folder"
            " of its own, e.g. --admin-socket /run/ssebench-admin/admin.sock (made with mode 0700"
            " when missing)"
        ]
        assert sorted(folder.iterdir()) == []
    finally:
        shutil.rmtree(folder)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_aborts_the_running_action_and_removes_the_sockets(
    signum: int, workdir: Path, marks: Path, daemons: list[RunningDaemon]
) -> None:
    made = make_task(workdir)
    made.script("build.sh", f"#!/bin/sh\necho started\n{mark(f'{marks}/started')}\nsleep 120\n")
    running = launch(daemons, made)
    replies: list[httpx.Response] = []

    def build() -> None:
        with running.http("agent") as agent:
            replies.append(post_bencher(agent, "build"))

    first = threading.Thread(target=build)
    first.start()
    wait_for_mark(marks / "started", running.proc, running.output)
    queued = send_request(running.agent, "POST", f"{PREFIX}/tool/bencher?action=build", {})
    wait_until_read(queued)  # the daemon holds it: it waits for the running build
    started = time.monotonic()
    assert running.stop(signum) == 0
    assert time.monotonic() - started < 30
    first.join(30)
    assert len(replies) == 1
    assert replies[0].status_code == 200
    assert replies[0].json()["code"] != 0
    assert replies[0].json()["stdout"] == "started\n"
    assert reply_to(queued) == (503, {"error": "the daemon is stopping"})
    assert not running.agent.exists()
    assert not running.admin.exists()
    assert running.output().strip().endswith("ssegrade daemon: stopped")
