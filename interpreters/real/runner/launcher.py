"""The one thread of a process that starts script processes.

Interpreter layer (threads, processes). A script's first process takes a parent-death signal
(see `containment`), and Linux sends it when the *thread* that forked it ends, not the
process: a script started from a short-lived thread (a request served by a pool, work done
ahead) would be killed when that thread ends, and one whose thread outlives the process's
other threads would not be killed with it. So every script is forked by one thread that lives
as long as its process: the signal comes exactly when the process dies.
"""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import Future

__all__ = ["launch"]

Start = Callable[[], "subprocess.Popen[bytes]"]


class _Launcher:
    """A thread of its own that runs what it is given, one at a time."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._queue: queue.SimpleQueue[tuple[Start, Future[subprocess.Popen[bytes]]]] = (
            queue.SimpleQueue()
        )
        thread = threading.Thread(target=self._serve, name="ssegrade-launcher", daemon=True)
        thread.start()

    def _serve(self) -> None:
        while True:
            start, future = self._queue.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(start())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                future.set_exception(exc)

    def submit(self, start: Start) -> Future[subprocess.Popen[bytes]]:
        future: Future[subprocess.Popen[bytes]] = Future()
        self._queue.put((start, future))
        return future


_lock = threading.Lock()
_launchers: dict[int, _Launcher] = {}


def _launcher() -> _Launcher:
    with _lock:
        found = _launchers.get(os.getpid())
        if found is None:  # first use, or a forked child: the thread did not come along
            _launchers.clear()
            found = _launchers[os.getpid()] = _Launcher()
        return found


def launch(start: Start) -> subprocess.Popen[bytes]:
    """Run `start` (which makes one `Popen`) in this process's launcher thread and answer
    its process. An exception raised into the caller meanwhile (an interrupt) is raised once
    the process is started and killed: nothing is left running that no one waits for."""
    future = _launcher().submit(start)
    try:
        return future.result()
    except BaseException:
        if not future.cancel():
            with contextlib.suppress(Exception):
                proc = future.result()
                proc.kill()  # a contained script's namespace dies with it (kill-child)
                proc.wait()
        raise
