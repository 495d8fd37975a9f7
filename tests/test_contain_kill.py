"""Scripts never outlive their grading (SPEC §5 "Containment"): kill -9 of `evaluate`, of the
daemon, of `batch` or of one of its workers, at a random moment, leaves within 2 s no process
of that grading (its scripts and what they started), no cgroup of it and no scratch folder;
SIGTERM of `batch` is a Ctrl-C.

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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from interpreters.real.files import remove_tree
from interpreters.real.runner import OWNER_VAR
from interpreters.real.runner.guardian import (
    cgroup_folders,
    group_owner,
    owner_tag,
    scratch_owner,
)
from tests.realtask import RealTask, git, make_task, ssegrade
from tests.test_batch_cli import fix_to, write_jobs
from tests.test_daemon import daemon_command
from tests.test_runner import live_with, unique

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: scripts as the runner account"),
]

CLI = [sys.executable, "-c", "from interpreters.cli import main; main()"]
MARK = "SSEGRADE_KILL_TEST"
SETTLE = 2.0
"""Seconds after the kill within which nothing of the grading may remain."""

BUILD = """#!/bin/sh
. ./lib.sh
setsid sleep 300 0.{t} >/dev/null 2>&1 &
nohup sh -c 'sleep 300 0.{t}' >/dev/null 2>&1 &
echo "$VALUE" > out.txt
sleep 0.5
"""
RUN = """#!/bin/sh
sh -c 'sleep 300 0.{t} &' &
sleep 0.3
test -f out.txt || exit 3
grep -q fixed out.txt || exit 1
"""


@dataclass
class Grading:
    """What the test knows of one grading: its token, its temporary folder, the owner tags
    of its ssegrade processes (seen while they lived)."""

    token: str
    tmpdir: Path
    tags: set[str] = field(default_factory=set)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "TMPDIR": str(self.tmpdir), MARK: self.token}

    def look(self) -> None:
        """Note the owner tags of the live ssegrade processes of this grading."""
        for pid in _carrying(f"{MARK}={self.token}"):
            with contextlib.suppress(OSError, TypeError, ValueError):
                if os.stat(f"/proc/{pid}").st_uid == 0:
                    self.tags.add(owner_tag(pid))

    def left(self, *, everything: bool = True) -> dict[str, list[str]]:
        """What of the grading is still there (`everything`: its unmarked scratch too)."""
        owners = {f"{OWNER_VAR}={tag}" for tag in self.tags}
        processes = [pid for entry in owners for pid in _carrying(entry)]
        if everything:
            processes += _carrying(f"{MARK}={self.token}") + live_with(self.token)
        groups = [
            str(folder / name)
            for folder in cgroup_folders()
            for name in _listing(folder)
            if group_owner(name) in self.tags
        ]
        scratch = [
            name
            for name in _listing(self.tmpdir)
            if scratch_owner(name) in self.tags or (everything and name.startswith("ssegrade-"))
        ]
        found = {"processes": sorted(map(_described, set(processes))), "cgroups": groups}
        found["scratch"] = scratch
        return {what: items for what, items in found.items() if items}


def _described(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return f"{pid} (gone)"
    return f"{pid} (parent {stat[1].decode()}): {command.decode(errors='replace')[:120]}"


def _listing(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _carrying(entry: str) -> list[int]:
    """Live processes whose environment holds `entry` (`NAME=value`)."""
    wanted = entry.encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if wanted in environ and state not in (b"Z", b"X"):
            found.append(int(pid))
    return found


def settled(grading: Grading, *, everything: bool = True) -> dict[str, list[str]]:
    """What of `grading` is left once `SETTLE` seconds passed (empty as soon as nothing is)."""
    deadline = time.monotonic() + SETTLE
    while True:
        left = grading.left(everything=everything)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


@pytest.fixture
def grading() -> Iterator[Grading]:
    """A token and a temporary folder for the ssegrade a test starts; whatever of it is left
    at the end is killed and removed."""
    folder = Path(tempfile.mkdtemp(prefix="kill-tmp-"))
    folder.chmod(0o755)
    made = Grading(unique(), folder)
    yield made
    for pid in {*_carrying(f"{MARK}={made.token}"), *live_with(made.token)}:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    settled(made)  # a guardian may still be removing what a failed test left
    remove_tree(folder)


def moment(span: float) -> tuple[float, str]:
    """A random instant in [0, span) seconds, and how to replay it."""
    seed = int(os.environ.get("KILL_SEED") or secrets.randbelow(2**32))
    return random.Random(seed).uniform(0, span), f"KILL_SEED={seed}"


def sleeping_task(root: Path, token: str, value: str | None = "fixed") -> RealTask:
    made = make_task(root, pocs=2)
    made.script("build.sh", BUILD.replace("{t}", token))
    made.script("run.sh", RUN.replace("{t}", token))
    if value is not None:
        made.set_value(value)
        git(made.source, "commit", "-qam", "change")
    return made


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


@pytest.mark.parametrize("run", range(2))
def test_the_daemon_killed_at_a_random_moment_of_a_grading_leaves_nothing(
    tmp_path: Path, grading: Grading, run: int
) -> None:
    del run
    made = sleeping_task(tmp_path / "t", grading.token, value=None)
    sockets = Path(tempfile.mkdtemp(prefix="sse-", dir="/tmp"))
    sockets.chmod(0o755)
    agent, admin = sockets / "agent.sock", sockets / "admin" / "admin.sock"
    command = daemon_command(made.task, made.source, tmp_path / "daemon-results")
    daemon = subprocess.Popen(
        [*command, "--agent-socket", str(agent), "--admin-socket", str(admin)],
        env={**grading.env, "SSE_DIFFICULTY": "0"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    client: subprocess.Popen[bytes] | None = None
    try:
        deadline = time.monotonic() + 120
        while not admin.exists():
            assert daemon.poll() is None, "the daemon ended before it listened"
            assert time.monotonic() < deadline, "the daemon never listened"
            time.sleep(0.02)
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


VALUES = ["bug0", "fixed", "bug2", "fixed3"]
"""The jobs' values: each patch another (no job is a cached copy of another); only `fixed`
passes."""


def expected(job: str) -> str:
    """The serial verdict of job `j<N>`."""
    return "passed" if VALUES[int(job[1:])] == "fixed" else "failed"


def batch_of(root: Path, token: str, jobs: int) -> tuple[Path, Path]:
    made = sleeping_task(root / "t", token, value=None)
    patches = {f"j{index}": fix_to(VALUES[index]) for index in range(jobs)}
    return write_jobs(root, made, patches), root / "results"


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


@pytest.mark.parametrize("run", range(2))
def test_a_batch_worker_killed_at_a_random_moment_loses_only_its_grading(
    tmp_path: Path, grading: Grading, run: int
) -> None:
    del run
    jobs, results = batch_of(tmp_path, grading.token, 4)
    proc = start(["batch", str(jobs), "--results", str(results), "--workers", "2"], grading)
    deadline = time.monotonic() + 120
    while (tag := _script_owner(grading)) is None:
        assert proc.poll() is None, "the batch ended before a script ran"
        assert time.monotonic() < deadline, "no script ever ran"
        time.sleep(0.01)
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
    deadline = time.monotonic() + 120
    while _script_owner(grading) is None:
        assert proc.poll() is None, "the batch ended before a script ran"
        assert time.monotonic() < deadline, "no script ever ran"
        time.sleep(0.01)
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
