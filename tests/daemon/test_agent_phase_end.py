"""The agent phase ends with every agent process, and the agent never reaches grading material
(SPEC §5, §9), through a real daemon on real sockets, as the attacks went.

The agent's bash tool starts processes that leave its process group and session (`setsid`, a
double fork) and would otherwise read the hidden tests from a grading copy while grading runs:
`POST /admin/agent_exited` leaves no process of the agent's account; the grading copies are out
of the account's reach while a check runs in them; an agent account that is the runner's is
refused at start.
"""

from __future__ import annotations

import os
import pwd
import secrets
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from interpreters.real.runner.processes import account_processes, kill_account
from tests.support.agentaccounts import agent_account
from tests.support.daemons import RunningDaemon, daemon_command, post_bencher, start_daemon
from tests.support.realtask import make_task
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="the agent's own account needs root"),
]


@pytest.fixture
def agent() -> Iterator[pwd.struct_passwd]:
    with agent_account() as entry:
        yield entry


@pytest.fixture
def sleeper() -> str:
    """The seconds a check of the grading sleeps: its command line names it among all."""
    return str(100000 + secrets.randbelow(900000))


@pytest.fixture
def running(tmp_path: Path, agent: pwd.struct_passwd, sleeper: str) -> Iterator[RunningDaemon]:
    tmp_path.chmod(0o755)
    made = make_task(tmp_path / "t")
    made.script("test.sh", f"#!/bin/sh\nsleep {sleeper}\n")
    daemon = start_daemon(made.task, made.source, made.results, "--agent-user", agent.pw_name)
    try:
        yield daemon
    finally:
        daemon.cleanup()


def bash(daemon: RunningDaemon, command: str) -> httpx.Response:
    """The agent's bash tool, as SSEBench's SDK calls it."""
    with daemon.http("agent", prefix="") as wire:
        return wire.post("/tool/bash", params={"action": "execute"}, json={"command": command})


def as_agent(agent: pwd.struct_passwd, *argv: str) -> subprocess.CompletedProcess[bytes]:
    """Run `argv` as the agent's account, as its leftover processes would."""
    return subprocess.run(
        argv,
        user=agent.pw_uid,
        group=agent.pw_gid,
        extra_groups=[],
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        check=False,
    )


def test_agent_exited_leaves_no_process_of_the_agent(
    running: RunningDaemon, agent: pwd.struct_passwd
) -> None:
    started = bash(
        running,
        "setsid sh -c 'sleep 60' </dev/null >/dev/null 2>&1 &\n"
        "( (sleep 61 </dev/null >/dev/null 2>&1 &) & )\n"
        "nohup setsid sh -c 'trap \"\" HUP TERM; sleep 62' </dev/null >/dev/null 2>&1 &\n"
        "echo started",
    )
    assert (started.status_code, started.json()["stdout"]) == (200, "started\n")
    wait_until(
        lambda: len(account_processes(agent.pw_uid)) >= 4,
        "the shell and three sleepers at least",
        30,
        detail=lambda: account_processes(agent.pw_uid),
    )
    with running.http("admin", prefix="") as admin:
        assert admin.post("/admin/agent_exited", json={}).json() == {"success": True}
    wait_until(
        lambda: account_processes(agent.pw_uid) == [],
        "the agent's processes to end",
        1,
        detail=lambda: _commands(account_processes(agent.pw_uid)),
    )


def test_kill_account_ends_an_account_that_keeps_forking(agent: pwd.struct_passwd) -> None:
    respawner = "while :; do setsid sleep 60 </dev/null >/dev/null 2>&1 & sleep 0.01; done"
    started = subprocess.Popen(
        ["setsid", "sh", "-c", respawner],
        user=agent.pw_uid,
        group=agent.pw_gid,
        extra_groups=[],
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
        stdin=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: len(account_processes(agent.pw_uid)) >= 20, "20 processes", 30)
        assert kill_account(agent.pw_uid, agent.pw_gid) == []
        time.sleep(0.2)
        assert account_processes(agent.pw_uid) == []
    finally:
        started.kill()
        started.wait(10)


def test_the_daemons_stop_leaves_no_process_of_the_agent(
    running: RunningDaemon, agent: pwd.struct_passwd
) -> None:
    assert bash(running, "setsid sh -c 'sleep 60' </dev/null >/dev/null 2>&1 &").status_code == 200
    wait_until(lambda: len(account_processes(agent.pw_uid)) >= 2, "2 processes", 30)
    assert running.stop() == 0, running.output()
    assert account_processes(agent.pw_uid) == [], _commands(account_processes(agent.pw_uid))


def test_the_agent_cannot_read_a_grading_copy_while_a_check_runs_in_it(
    running: RunningDaemon, agent: pwd.struct_passwd, sleeper: str
) -> None:
    with running.http("admin", prefix="") as admin:
        assert admin.post("/admin/agent_exited", json={}).json() == {"success": True}
        assert admin.post("/prepare_grading", json={}).json() == {"success": True}
        assert post_bencher(admin, "build", grading=True).json()["code"] == 0
    # The intent test (the hidden test staged in its copy) sleeps: grading is running.
    check = threading.Thread(target=_intent_test, args=(running,), daemon=True)
    check.start()
    copy = _check_folder(running, sleeper)
    assert (copy / "tests" / "intent.sh").is_file()  # the hidden test, as root sees it
    for argv in (
        ("cat", str(copy / "tests" / "intent.sh")),
        ("ls", str(copy)),
        ("ls", str(copy.parent)),
        ("ls", str(copy.parent.parent)),
    ):
        done = as_agent(agent, *argv)
        assert done.returncode != 0, f"{argv}: {done.stdout!r}"
        assert b"VALUE" not in done.stdout
    assert not any(os.stat(p).st_mode & 0o007 for p in (copy.parent.parent,))
    running.stop()
    check.join(60)


def test_an_agent_account_that_is_the_runners_is_refused(
    tmp_path: Path, agent: pwd.struct_passwd
) -> None:
    tmp_path.chmod(0o755)
    made = make_task(tmp_path / "t")
    command = daemon_command(made.task, made.source, made.results)
    command += ["--runner-user", agent.pw_name, "--agent-user", agent.pw_name]
    command += ["--agent-socket", str(tmp_path / "a.sock")]
    command += ["--admin-socket", str(tmp_path / "admin" / "admin.sock")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert "is the runner's" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "a.sock").exists()


def _intent_test(running: RunningDaemon) -> None:
    try:
        with running.http("admin", prefix="") as admin:
            post_bencher(admin, "intent_test", grading=True)
    except httpx.HTTPError:
        pass  # the daemon stopped under it


def _check_folder(running: RunningDaemon, sleeper: str) -> Path:
    """The working folder of the sleeping check (found by its command line), as root sees
    it."""
    wanted = f"sleep\0{sleeper}\0".encode()

    def folder() -> Path | None:
        assert running.proc.poll() is None, running.output()
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and (entry / "cmdline").read_bytes() == wanted:
                    return Path(os.readlink(entry / "cwd"))
            except OSError:
                continue
        return None

    return wait_until(folder, "the sleeping check", 60, 0.05, detail=running.output)


def _commands(pids: list[int]) -> list[str]:
    found = []
    for pid in pids:
        try:
            found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return found
