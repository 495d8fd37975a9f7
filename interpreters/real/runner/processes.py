"""The process table: the markers a script run carries, and the sweep that kills what carries
them.

Interpreter layer (Linux: reads the process table through psutil, and `/proc` by hand where a
function's docstring says why; signals processes). Every script runs with two marker
variables in its environment, the session and the run; the sweep kills exactly the processes
that match (and their descendants), never the runner's whole uid. It is the clean-up of scripts
that run without a PID namespace, and the safety net of those that run in one. A dedicated
account (the daemon's agent account, nobody else's) is ended whole by `kill_account`.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import secrets
import select
import signal
import stat
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil

from interpreters.real.runner.account import Runner
from interpreters.real.runner.guardian import OWNER_VAR, owner_tag

__all__ = [
    "RUN_VAR",
    "SESSION_VAR",
    "Proc",
    "account_processes",
    "children_of",
    "ensure_subreaper",
    "environ",
    "kill_account",
    "kill_group",
    "kill_owned",
    "kill_session",
    "new_session",
    "processes",
    "sweep",
    "wait_exit",
]

SESSION_VAR = "SSEGRADE_SESSION"
RUN_VAR = "SSEGRADE_RUN"
SWEEP_SECONDS = 10.0

_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True, slots=True)
class Proc:
    """One line of the process table."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    zombie: bool


def new_session() -> str:
    """A fresh session token for `run_script(session=…)` and `kill_session`."""
    return secrets.token_hex(8)


def kill_session(runner: Runner, session: str | None = None) -> int:
    """Kill every process whose environment carries `session` (any ssegrade session when
    `None`) and their descendants, and nothing else; reap those that are our children.
    Answers how many processes were found (0: nothing was left running).

    `runner` is not used to choose what to kill (never a whole uid): it names whose session
    this is, for callers.
    """
    del runner
    marker = None if session is None else f"{SESSION_VAR}={session}".encode()

    def carries_session(proc: Proc) -> bool:
        entries = environ(proc.pid)
        if marker is not None:
            return marker in entries
        return any(entry.startswith(f"{SESSION_VAR}=".encode()) for entry in entries)

    # Children we already have are someone's `Popen`: reaping them would steal their status.
    found, _ = sweep(carries_session, spare=children_of(os.getpid()))
    return found


def kill_owned() -> int:
    """Kill every process that carries this process's owner tag (the scripts it started,
    and what they left) and their descendants, and nothing else; reap those that are our
    children. For a process that grades one grading at a time, between two of them."""
    marker = f"{OWNER_VAR}={owner_tag()}".encode()
    found, _ = sweep(lambda proc: marker in environ(proc.pid), spare=frozenset())
    return found


_KILL_PROGRAMS = ("/usr/bin/kill", "/bin/kill")
"""Where `kill(1)` is looked for: run as the account, `kill -KILL -1` signals, at once,
every process the account may signal (its own, whatever session or parent they have), so that
none forks out of a scan's sight."""


_GONE = (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)


def account_processes(uid: int) -> list[int]:
    """The live processes (no zombies) whose real, effective or saved uid is `uid`."""
    found: list[int] = []
    for process in psutil.process_iter(["uids", "status"]):
        uids, status = process.info["uids"], process.info["status"]
        if uids is not None and uid in uids and status not in _GONE:
            found.append(process.pid)
    return found


def _of(pid: int, uid: int) -> bool:
    """Whether `pid` is alive (no zombie) with `uid` as its real, effective or saved uid."""
    try:
        process = psutil.Process(pid)
        with process.oneshot():
            return process.status() not in _GONE and uid in process.uids()
    except psutil.Error:
        return False  # gone meanwhile


def _kill_if_of(pid: int, uid: int) -> None:
    """SIGKILL `pid` if it is still a process of `uid` (through a pidfd: never a reused pid).

    The signal goes through a pidfd opened before the check (psutil signals by pid): if the
    pid was reused after the check, the signal fails instead of reaching the newcomer.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        if _of(pid, uid):
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    finally:
        os.close(pidfd)


def kill_account(uid: int, gid: int, seconds: float = SWEEP_SECONDS) -> list[int]:
    """Kill every process of the account `uid` (primary group `gid`; root only, for an
    account that is neither root nor ours), again and again until none is left or `seconds`
    have passed; answers the pids still alive then (empty: none is left).

    Each round, `kill(1)` (a root-owned one at a fixed path, when there is one) running as the
    account kills all it may signal at once, then every process the process table shows with
    that uid is killed from here.
    """
    if uid in (0, os.geteuid()):
        raise ValueError(f"kill_account of uid {uid}: only another, unprivileged account")
    program = next((path for path in _KILL_PROGRAMS if _roots_own(path)), None)
    deadline = time.monotonic() + seconds
    delay = 0.005
    while True:
        left = account_processes(uid)
        if not left:
            return []
        if time.monotonic() > deadline:
            return left
        if program is not None:
            _run_as(uid, gid, [program, "-KILL", "-1"], deadline)
        for pid in left:
            _kill_if_of(pid, uid)
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _run_as(uid: int, gid: int, argv: list[str], deadline: float) -> None:
    """Run `argv` as `uid`:`gid` (no other group, an empty environment); what it answers is not
    needed (the process table is what is believed)."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            argv,
            env={},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            user=uid,
            group=gid,
            extra_groups=[],
            timeout=max(deadline - time.monotonic(), 1.0),
            check=False,
        )


def _roots_own(path: str) -> bool:
    """Whether `path` and every folder above it are root's and no one else may write them (a
    program root may start)."""
    here = os.path.realpath(path)
    while True:
        try:
            info = os.stat(here)
        except OSError:
            return False
        if info.st_uid != 0 or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return False
        if here == "/":
            return True
        here = os.path.dirname(here)


_reaper = {"pid": 0}


def ensure_subreaper() -> None:
    """Make this process a child subreaper (once per process): orphans come back to us."""
    if _reaper["pid"] == os.getpid():
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_CHILD_SUBREAPER, ctypes.c_ulong(1), 0, 0, 0) == 0:
            _reaper["pid"] = os.getpid()


def processes() -> dict[int, Proc]:
    """The process table, by pid (processes that vanish while it is read are left out).

    Read by hand, not through psutil: one read of `/proc/<pid>/stat` gives a process's
    parent, group, session and state at once, where psutil makes an object per process and
    reads the file twice, plus `os.getpgid` and `os.getsid`. Measured with
    `benchmarks/bench_containment.py` (150 processes): a scan took three times as long
    through psutil, and a script run with the weaker containment, which scans after every
    script, 60 % longer; a sweep repeats the scan every few milliseconds.
    """
    table: dict[int, Proc] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat_file:
                data = stat_file.read()
        except OSError:
            continue  # gone meanwhile
        fields = data[data.rindex(b")") + 2 :].split()
        pid = int(name)
        table[pid] = Proc(
            pid=pid,
            ppid=int(fields[1]),
            pgid=int(fields[2]),
            sid=int(fields[3]),
            zombie=fields[0] in (b"Z", b"X"),
        )
    return table


def children_of(pid: int) -> frozenset[int]:
    """The pids whose parent is `pid`, zombies included."""
    try:
        return frozenset(child.pid for child in psutil.Process(pid).children())
    except psutil.NoSuchProcess:
        return frozenset()


def environ(pid: int) -> list[bytes]:
    """The `NAME=value` entries of a process's environment (empty when unreadable).

    Read by hand: psutil answers a dict of decoded text, where a second entry of the same
    name hides the first (a script could list a marker twice to hide it); these are the
    raw entries, every one of them.
    """
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ_file:
            return environ_file.read().split(b"\0")
    except OSError:
        return []


def kill_group(pgid: int) -> None:
    """SIGKILL a process group, if it still exists."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def wait_exit(proc: subprocess.Popen[bytes], timeout: float | None) -> bool:
    """Wait until `proc` exits, without reaping it; `False` when `timeout` passed first."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:  # an old kernel: wait (and reap) the usual way
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(None if timeout is None else math.ceil(timeout * 1000)))
    finally:
        os.close(pidfd)


def _ancestors(table: dict[int, Proc]) -> set[int]:
    found = {os.getpid(), 1}
    pid = os.getppid()
    while pid > 1 and pid not in found:
        found.add(pid)
        item = table.get(pid)
        pid = item.ppid if item is not None else 0
    return found


def sweep(matches: Callable[[Proc], bool], *, spare: frozenset[int]) -> tuple[int, list[int]]:
    """Kill what `matches` (and its descendants) until none is left, reaping our zombie
    children among them, except `spare` and those in our own process group: some `Popen`
    waits for those, and reaping them would make it report exit status 0. (A script can never
    join our process group: it runs in a session of its own.)

    Answers how many processes were killed and which ones were still alive at the deadline.
    """
    me, my_group = os.getpid(), os.getpgid(0)
    table = processes()
    protected = _ancestors(table)
    killed: set[int] = set()  # killed and not yet reaped
    count: set[int] = set()
    deadline = time.monotonic() + SWEEP_SECONDS
    delay = 0.001
    while True:
        live: set[int] = set()
        reap: list[int] = []
        for item in table.values():
            if item.pid in protected:
                continue
            hit = matches(item)
            if item.zombie:
                ours = item.ppid == me and item.pid not in spare and item.pgid != my_group
                if ours and (hit or item.pid in killed):
                    reap.append(item.pid)
            elif hit:
                live.add(item.pid)
        live |= _descendants(table, live) - protected
        for pid in live:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed |= live
        count |= live
        for pid in reap:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            killed.discard(pid)  # reaped: its pid may be reused from now on
        if not live and not reap:
            return len(count), []
        if time.monotonic() > deadline:
            return len(count), sorted(live)
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
        table = processes()


def _descendants(table: dict[int, Proc], roots: set[int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for item in table.values():
        if not item.zombie:
            children.setdefault(item.ppid, []).append(item.pid)
    found: set[int] = set()
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found
