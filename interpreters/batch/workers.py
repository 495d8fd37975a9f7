"""The local engine: worker processes on this machine, one grading at a time each, tied to
the driver.

Interpreter layer (processes). Each worker is a Python process that takes `Work` over a
socket and sends back `Done`. A worker dies with the driver from its first instant: it is
forked by the driver's launcher thread (which lives as long as the driver, see
`interpreters.real.runner.launcher`) with a parent-death signal set before it runs anything,
so a kill -9 of the driver kills every worker, even one still starting, and with them their
scripts, while their guardians remove their scratch folders. A worker that dies (a kill -9
of it) loses only its own grading: the others go on, and a new worker takes the next one.
Workers never take the terminal's SIGINT as theirs: they start with SIGINT ignored, in a
process group of their own.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from multiprocessing import Pipe
from multiprocessing.connection import Connection, wait

from interpreters.batch.work import Done, GradeFunction, Work, run_work
from interpreters.real.runner.launcher import launch
from interpreters.real.runner.processes import kill_owned

__all__ = ["LocalEngine", "serve"]

_KILL_GRACE = 30.0
_PR_SET_PDEATHSIG = 1
_prctl = ctypes.CDLL(None, use_errno=True).prctl
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]

# What a worker runs: its socket is `fd`; the first message is the driver's import path.
_WORKER = (
    "import sys\n"
    "from multiprocessing.connection import Connection\n"
    "conn = Connection({fd})\n"
    "sys.path[:] = conn.recv()\n"
    "from interpreters.batch.workers import serve\n"
    "serve(conn)\n"
)


def serve(conn: Connection) -> None:
    """A worker's life: the grading function, then gradings from `conn` until it ends (or
    None comes); after each, whatever a script of it left (weak containment) is killed."""
    grade: GradeFunction = conn.recv()
    while True:
        try:
            work = conn.recv()
        except (EOFError, OSError):
            return
        if work is None:
            return
        try:
            done = run_work(grade, work)
        finally:
            kill_owned()
        conn.send(done)


def _tied(driver: int) -> None:
    """In the worker, before it runs anything: die with the driver, ignore the terminal."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != driver:  # the driver died before the signal was set
        os.kill(os.getpid(), signal.SIGKILL)
    os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@dataclass(slots=True)
class _Worker:
    process: subprocess.Popen[bytes]
    conn: Connection
    exited: int  # a pidfd: readable once the worker has exited
    key: int | None = None


@dataclass
class LocalEngine:
    """`capacity` worker processes on this machine, one grading per worker."""

    grade: GradeFunction
    capacity: int
    _idle: list[_Worker] = field(default_factory=list)
    _busy: dict[int, _Worker] = field(default_factory=dict)

    def _spawn(self) -> _Worker:
        ours, theirs = Pipe()
        driver, fd = os.getpid(), theirs.fileno()

        def start() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                [sys.executable, "-c", _WORKER.format(fd=fd)],
                stdin=subprocess.DEVNULL,
                pass_fds=[fd],
                preexec_fn=lambda: _tied(driver),  # noqa: PLW1509 - system calls only
            )

        try:
            process = launch(start)
        finally:
            theirs.close()
        exited = os.pidfd_open(process.pid)
        worker = _Worker(process, ours, exited)
        try:
            ours.send(sys.path)
            ours.send(self.grade)
        except OSError:
            pass  # it died at once: found dead by the next send or poll
        return worker

    def start(self, work: Work) -> None:
        """Hand one grading to an idle worker (a new one when none is idle)."""
        while True:
            worker = self._idle.pop() if self._idle else self._spawn()
            try:
                worker.conn.send(work)
            except OSError:  # it died while idle
                _bury(worker)
                continue
            worker.key = work.key
            self._busy[work.key] = worker
            return

    def running(self) -> int:
        """Gradings handed out and not yet collected."""
        return len(self._busy)

    def poll(self, timeout: float) -> list[Done]:
        """Collect finished gradings; a worker that died leaves its grading killed (None)."""
        if not self._busy:
            time.sleep(timeout)
            return []
        workers = list(self._busy.values())
        waits: list[Connection | int] = [w.conn for w in workers]
        waits += [w.exited for w in workers]
        ready = set(wait(waits, timeout))
        found = []
        for worker in workers:
            if worker.conn in ready or worker.exited in ready:
                found.append(self._collect(worker))
        return found

    def _collect(self, worker: _Worker) -> Done:
        key = worker.key
        assert key is not None
        del self._busy[key]
        worker.key = None
        try:
            done: Done = worker.conn.recv()
        except (EOFError, OSError):  # it died: nothing was graded
            _bury(worker)
            return Done(key, None, 0.0)
        self._idle.append(worker)
        return done

    def kill(self) -> list[int]:
        """SIGTERM every busy worker (its grading ends at once, its scripts killed), collect
        them, then SIGKILL those that did not answer."""
        keys = list(self._busy)
        for worker in self._busy.values():
            with contextlib.suppress(ProcessLookupError):
                worker.process.terminate()
        deadline = time.monotonic() + _KILL_GRACE
        while self._busy and time.monotonic() < deadline:
            self.poll(0.2)
        for worker in list(self._busy.values()):
            with contextlib.suppress(ProcessLookupError):
                worker.process.kill()
            self._collect(worker)
        return keys

    def close(self) -> None:
        """Stop the workers."""
        for worker in self._idle:
            with contextlib.suppress(OSError):
                worker.conn.send(None)
        for worker in [*self._idle, *self._busy.values()]:
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.process.wait(_KILL_GRACE if worker.key is None else 0)
            _bury(worker)
        self._idle.clear()
        self._busy.clear()


def _bury(worker: _Worker) -> None:
    """Make sure `worker` is gone and reaped; close our end of its socket."""
    if worker.process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            worker.process.kill()
    worker.process.wait()
    worker.conn.close()
    with contextlib.suppress(OSError):
        os.close(worker.exited)
