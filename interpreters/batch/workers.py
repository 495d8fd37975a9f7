"""The local engine: worker processes on this machine, one grading at a time each, tied to
the driver.

Interpreter layer (processes). Each worker is a spawned Python process that takes `Work`
over a pipe and sends back `Done`. A worker dies with the driver: it takes a parent-death
signal when it starts and also watches the driver's pidfd, so a kill -9 of the driver kills
every worker, and with them their scripts (see `interpreters.real.runner.launcher`) while
their guardians remove their scratch folders. A worker that dies (a kill -9 of it) loses only
its own grading: the others go on, and a new worker takes the next one. Workers never take
the terminal's SIGINT as theirs: they start with SIGINT ignored, in a process group of their
own.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import select
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess

from interpreters.batch.work import Done, GradeFunction, Work, run_work
from interpreters.real.runner.processes import kill_owned

__all__ = ["LocalEngine"]

_KILL_GRACE = 30.0
_PR_SET_PDEATHSIG = 1


def _tie_to(driver: int) -> None:
    """Die with `driver`: a parent-death signal, and a thread that watches its pidfd (the
    signal follows the driver's thread that started us; the pidfd, the driver itself)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != driver:
        os._exit(1)  # the driver is already gone
    try:
        pidfd = os.pidfd_open(driver)
    except OSError:
        return

    def watch() -> None:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.poll()
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="driver-watch", daemon=True).start()


def _worker(conn: Connection, driver: int, grade: GradeFunction) -> None:
    """A worker's life: gradings from `conn` until it ends (or None comes)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    _tie_to(driver)
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
            kill_owned()  # whatever a script of this grading left (weak containment)
        conn.send(done)


@dataclass(slots=True)
class _Worker:
    process: BaseProcess
    conn: Connection
    key: int | None = None


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@dataclass
class LocalEngine:
    """`capacity` worker processes on this machine, one grading per worker."""

    grade: GradeFunction
    capacity: int
    _idle: list[_Worker] = field(default_factory=list)
    _busy: dict[int, _Worker] = field(default_factory=dict)

    def _spawn(self) -> _Worker:
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        process = context.Process(
            target=_worker, args=(theirs, os.getpid(), self.grade), name="ssegrade-worker"
        )
        process.daemon = True  # terminated if the driver exits with it still there
        with _sigint_ignored():  # inherited until the worker ignores it for good
            process.start()
        theirs.close()
        return _Worker(process, ours)

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
        waits += [w.process.sentinel for w in workers]
        ready = set(wait(waits, timeout))
        found = []
        for worker in workers:
            if worker.conn in ready or worker.process.sentinel in ready:
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
            worker.process.terminate()
        deadline = time.monotonic() + _KILL_GRACE
        while self._busy and time.monotonic() < deadline:
            self.poll(0.2)
        for worker in list(self._busy.values()):
            worker.process.kill()
            self._collect(worker)
        return keys

    def close(self) -> None:
        """Stop the workers."""
        for worker in self._idle:
            with contextlib.suppress(OSError):
                worker.conn.send(None)
        for worker in [*self._idle, *self._busy.values()]:
            worker.process.join(_KILL_GRACE if worker.key is None else 0)
            _bury(worker)
        self._idle.clear()
        self._busy.clear()


def _bury(worker: _Worker) -> None:
    """Make sure `worker` is gone and reaped; close our end of its pipe."""
    if worker.process.is_alive():
        worker.process.kill()
    worker.process.join()
    worker.conn.close()
