"""The archive's child process: started early, given its job once the grading knows it.

Interpreter side (processes). The source archive is written by a child process of the grading
(`interpreters.real.archive.start_archive`), which spends a tenth of a second on its imports
before it can walk anything. The real interpreter starts that child as soon as the grading
program's plan says the archive may run ahead (`MayRunAhead`, `warm_up`), so that those imports
overlap the set-up; the archive then hands the waiting child its job (`hand_over`). Told the
source tree and the baseline, the child begins the archive before the job comes, and keeps what
it did when the job asks for that very archive (the same tree and cache, by name and by inode).
A child no job ever reaches ends when the grading does. Standard library only, so that it
starts fast.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Child", "hand_over", "spawn", "take_warm", "warm_up"]

_CODE = "from interpreters.real.archive.archiving import _archive_child; _archive_child()"
_TOP = Path(__file__).resolve().parents[3]


@dataclass(slots=True)
class Child:
    """A started archive child and the socket its job goes through."""

    process: subprocess.Popen[bytes]
    job: socket.socket

    def kill(self) -> None:
        """Kill it and its workers (its process group), and wait for it."""
        self.job.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.communicate()


_warm: Child | None = None


def spawn(hint: tuple[str, str] | None = None) -> Child:
    """Start an archive child that waits for its job; raises `OSError` when it cannot. With
    `hint` (a source tree and a baseline folder, absolute), the child begins archiving that
    tree at once, with that baseline's archive cache, and uses what it did if its job turns
    out to be that archive."""
    ours, theirs = socket.socketpair()
    try:
        process = subprocess.Popen(
            [sys.executable, "-c", _CODE, str(theirs.fileno()), str(os.getpid()), *(hint or ())],
            env={"PYTHONPATH": str(_TOP), "PATH": os.defpath, "LC_ALL": "C.UTF-8"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(theirs.fileno(),),
            cwd="/",
            process_group=0,  # its workers with it: killing the group stops them all
        )
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    return Child(process, ours)


def warm_up(hint: tuple[str, str] | None = None) -> None:
    """Start the child the next `take_warm` answers (best effort: nothing when it cannot);
    `hint` as for `spawn`."""
    global _warm  # noqa: PLW0603 (one child per process, taken once)
    if _warm is None:
        with contextlib.suppress(OSError):
            _warm = spawn(hint)
            atexit.register(_unused)


def take_warm() -> Child | None:
    """The child `warm_up` started, once; None when there is none."""
    global _warm
    child, _warm = _warm, None
    return child


def _unused() -> None:
    """At exit: a warm child never given its job ends (its socket closes), and is reaped."""
    child = take_warm()
    if child is not None:
        child.job.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.process.communicate(timeout=5)


def hand_over(child: Child, job: dict[str, object], fd: int) -> None:
    """Send `child` its job (JSON) and the file `fd` it writes; raises `OSError` when the
    child is gone."""
    socket.send_fds(child.job, [json.dumps(job).encode()], [fd])
    child.job.close()


def receive(fd: int) -> tuple[dict[str, object], int] | None:
    """In the child: its job and the file it writes, from the socket `fd`; None when the
    grading never sent one."""
    with socket.socket(fileno=fd) as job:
        data, fds, _flags, _address = socket.recv_fds(job, 1 << 16, 1)
        if not data:
            for extra in fds:
                os.close(extra)
            return None
        while chunk := job.recv(1 << 16):
            data += chunk
    if len(fds) != 1:
        raise OSError("the archive's job came without its file")
    loaded = json.loads(data)
    if not isinstance(loaded, dict):
        raise OSError("the archive's job is not one")
    return loaded, fds[0]
