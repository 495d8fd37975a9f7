"""Scripts never outlive their grading (SPEC §5 "Containment"): kill -9 of `evaluate`, of the
daemon (in its start or in a grading), of `batch` or of one of its workers, of `verify`, at a
random moment, leaves within 2 s no process of that grading (its scripts and what they
started), no cgroup of it and no scratch folder; SIGTERM of `batch` is a Ctrl-C.

A real task whose build and PoC scripts leave sleeping processes behind (`setsid`, `nohup`,
double forks). What belongs to one grading is told apart from what other tests run at the
same time by a variable only this test gives its ssegrade processes (their scripts inherit
it), their owner tags (cgroups and scratch folders are named for them) and a token on the
scripts' sleepers; each test's ssegrade gets a temporary folder of its own. The moment is
random: set KILL_SEED to replay one.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from interpreters.real.files import remove_tree
from interpreters.real.runner import OWNER_VAR
from interpreters.real.runner.guardian import (
    owner_tag,
)
from tests.support.daemons import daemon_command
from tests.support.killkit import (
    VALUES,
    Grading,
    batch_of,
    grading,
    settled,
    sleeping_task,
)
from tests.support.processes import live_with
from tests.support.realtask import RealTask, fix_to, git, ssegrade
from tests.support.waiting import wait_until

__all__ = ["grading"]  # the fixture, used by name

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: scripts as the runner account"),
]

CLI = [sys.executable, "-c", "from interpreters.cli.main import main; main()"]


def moment(span: float) -> tuple[float, str]:
    """A random instant in [0, span) seconds, and how to replay it."""
    seed = int(os.environ.get("KILL_SEED") or secrets.randbelow(2**32))
    return random.Random(seed).uniform(0, span), f"KILL_SEED={seed}"


def kill_after(proc: subprocess.Popen[bytes], grading: Grading, seconds: float) -> None:
    """Look at the grading until `seconds` passed, then kill -9 `proc`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        grading.look()
        time.sleep(0.01)
    grading.look()
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGKILL)


def start(args: list[str], grading: Grading, **env: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*CLI, *args],
        env={**grading.env, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def start_daemon(
    made: RealTask, results: Path, sockets: Path, grading: Grading
) -> tuple[subprocess.Popen[bytes], Path]:
    """`ssegrade daemon` for `made` (every check open to the agent), its sockets in
    `sockets`: the process and its admin socket."""
    agent, admin = sockets / "agent.sock", sockets / "admin" / "admin.sock"
    command = daemon_command(made.task, made.source, results)
    daemon = subprocess.Popen(
        [*command, "--agent-socket", str(agent), "--admin-socket", str(admin)],
        env={**grading.env, "SSE_DIFFICULTY": "0"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return daemon, admin


@pytest.mark.parametrize("run", range(3))
@pytest.mark.parametrize("mode", ["full", "weak"])
def test_evaluate_killed_at_a_random_moment_leaves_nothing(
    tmp_path: Path, grading: Grading, mode: str, run: int
) -> None:
    del run
    made = sleeping_task(tmp_path / "t", grading.token)
    at, replay = moment(4.0)
    args = ["evaluate", "--task", str(made.task), "--source", str(made.source)]
    args += ["--results", str(made.results), "--containment", mode]
    proc = start(args, grading)
    kill_after(proc, grading, at)
    proc.wait()
    assert settled(grading) == {}, f"killed after {at:.2f} s ({replay})"


def test_verify_killed_at_a_random_moment_leaves_nothing(tmp_path: Path, grading: Grading) -> None:
    # As root, verify grades staged copies of the task folders: they go with the rest.
    made = sleeping_task(tmp_path / "t", grading.token, value=None)
    (made.task / "fix.diff").write_text(fix_to("fixed"))
    config = yaml.safe_load((made.task / "config.yaml").read_text())
    config["files"]["patch"] = "fix.diff"
    (made.task / "config.yaml").write_text(yaml.safe_dump(config))
    at, replay = moment(5.0)
    args = ["verify", str(made.task), "--repo", str(made.source)]
    args += ["--results", str(tmp_path / "verified")]
    proc = start(args, grading)
    kill_after(proc, grading, at)
    proc.wait()
    assert settled(grading) == {}, f"killed after {at:.2f} s ({replay})"


@pytest.mark.parametrize("run", range(2))
def test_the_daemon_killed_at_a_random_moment_of_its_start_leaves_nothing(
    tmp_path: Path, grading: Grading, run: int
) -> None:
    # Its start probes containment (trial cgroups), records the baseline (scratch) and binds.
    del run
    made = sleeping_task(tmp_path / "t", grading.token, value=None)
    sockets = Path(tempfile.mkdtemp(prefix="sse-", dir="/tmp"))
    try:
        daemon, _ = start_daemon(made, tmp_path / "daemon-results", sockets, grading)
        at, replay = moment(1.5)
        kill_after(daemon, grading, at)
        daemon.wait()
        assert settled(grading) == {}, f"killed {at:.2f} s into its start ({replay})"
    finally:
        remove_tree(sockets)


@pytest.mark.parametrize("run", range(2))
def test_the_daemon_killed_at_a_random_moment_of_a_grading_leaves_nothing(
    tmp_path: Path, grading: Grading, run: int
) -> None:
    del run
    made = sleeping_task(tmp_path / "t", grading.token, value=None)
    sockets = Path(tempfile.mkdtemp(prefix="sse-", dir="/tmp"))
    sockets.chmod(0o755)
    daemon, admin = start_daemon(made, tmp_path / "daemon-results", sockets, grading)
    client: subprocess.Popen[bytes] | None = None
    try:

        def listening() -> bool:
            assert daemon.poll() is None, "the daemon ended before it listened"
            return admin.exists()

        wait_until(listening, "the daemon to listen", 120)
        made.set_value("fixed")
        git(made.source, "commit", "-qam", "fix")
        args = ["evaluate", "--task", str(made.task), "--source", str(made.source)]
        client = subprocess.Popen(
            [*CLI, *args, "--results", str(made.results), "--daemon", str(admin)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        at, replay = moment(3.0)
        kill_after(daemon, grading, at)
        daemon.wait()
        assert settled(grading) == {}, f"killed {at:.2f} s into the grading ({replay})"
    finally:
        for proc in (daemon, client):
            if proc is not None and proc.poll() is None:
                proc.kill()
            if proc is not None:
                proc.wait()
        remove_tree(sockets)


def expected(job: str) -> str:
    """The serial verdict of job `j<N>`."""
    return "passed" if VALUES[int(job[1:])] == "fixed" else "failed"


@pytest.mark.parametrize("run", range(2))
def test_batch_killed_at_a_random_moment_leaves_nothing_of_its_workers(
    tmp_path: Path, grading: Grading, run: int
) -> None:
    del run
    jobs, results = batch_of(tmp_path, grading.token, 4)
    at, replay = moment(5.0)
    proc = start(["batch", str(jobs), "--results", str(results), "--workers", "2"], grading)
    kill_after(proc, grading, at)
    proc.wait()
    assert settled(grading) == {}, f"killed after {at:.2f} s ({replay})"


def _script_owner(grading: Grading) -> str | None:
    """The owner tag a running script of the grading carries (its worker's), if any."""
    for pid in live_with(grading.token):
        with contextlib.suppress(OSError):
            for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                if entry.startswith(f"{OWNER_VAR}=".encode()):
                    return entry.split(b"=", 1)[1].decode()
    return None


def _script_owner_of(grading: Grading, proc: subprocess.Popen[bytes]) -> str | None:
    """`_script_owner`, while the batch `proc` still runs."""
    assert proc.poll() is None, "the batch ended before a script ran"
    return _script_owner(grading)


@pytest.mark.parametrize("run", range(2))
def test_a_batch_worker_killed_at_a_random_moment_loses_only_its_grading(
    tmp_path: Path, grading: Grading, run: int
) -> None:
    del run
    jobs, results = batch_of(tmp_path, grading.token, 4)
    proc = start(["batch", str(jobs), "--results", str(results), "--workers", "2"], grading)
    tag = wait_until(lambda: _script_owner_of(grading, proc), "a script to run", 120, 0.01)
    worker = int(tag.split("-")[1])
    at, replay = moment(1.5)
    time.sleep(at)  # the random moment itself, not a wait for something
    if owner_tag(worker) == tag:  # still that worker (not a pid reused)
        os.kill(worker, signal.SIGKILL)
    victim = Grading(grading.token, grading.tmpdir, {tag})
    left = settled(victim, everything=False)
    assert left == {}, f"killed after {at:.2f} s ({replay})"
    assert proc.wait(timeout=300) == 1  # not every job was graded: run it again
    assert settled(grading) == {}
    summaries = {
        path.parent.name: json.loads(path.read_bytes())["patch_result"]
        for path in results.glob("*/*/*/*/summary.json")
    }
    assert len(summaries) >= 3  # the others were graded, each folder whole
    for name, patch in summaries.items():
        assert patch["status"] == expected(name), (name, patch)
    for folder in results.glob("*/*/*/*"):
        assert folder.name in summaries  # the lost grading's folder was removed


@pytest.mark.parametrize("group", [False, True], ids=["process", "group"])
def test_sigterm_of_batch_is_a_ctrl_c(tmp_path: Path, grading: Grading, group: bool) -> None:
    jobs, results = batch_of(tmp_path, grading.token, 3)
    proc = start(["batch", str(jobs), "--results", str(results), "--workers", "2"], grading)
    wait_until(lambda: _script_owner_of(grading, proc), "a script to run", 120, 0.01)
    if group:  # as a service manager stops it: the process alone, or its process group
        os.killpg(proc.pid, signal.SIGTERM)
    else:
        proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=300) == 130
    run = results / "shell-001" / "unknown" / "unknown"
    graded = sorted(path.parent.name for path in run.glob("*/summary.json"))
    assert graded  # the running gradings ended with real verdicts, kept
    assert "j2" not in graded  # no job started after the signal
    assert sorted(os.listdir(run)) == graded  # nothing half-written
    for name in graded:
        patch = json.loads((run / name / "summary.json").read_bytes())["patch_result"]
        assert patch["status"] == expected(name), (name, patch)
    assert settled(grading) == {}
    again = ssegrade("batch", str(jobs), "--results", str(results), env=grading.env)
    assert again.returncode == 0, again.stderr
    assert again.stderr.strip().splitlines()[-1].startswith(f"{3 - len(graded)} graded")
