"""The worker threads of one listener: a fixed number, started with it (`SSE_DAEMON_WORKERS`).

Interpreter layer. The service blocks, so a route hands its work to a thread. A listener's
quick reads (the task's files, the results folder, the dialog) go to its own `Workers`: a fixed
pool of threads started when the listener starts serving, as SSEBench's daemon keeps a fixed
number of workers per listener (`SSE_DAEMON_WORKERS`, 4 by default). Work that waits for its
turn (the tool calls, the captures, grading) never runs on them, but on threads of its own
(`interpreters.daemon.asking`), so that a long build or shell command never keeps a listener
from answering its reads, however few its workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["DEFAULT_WORKERS", "MAX_WORKERS", "Workers", "worker_count"]

T = TypeVar("T")

DEFAULT_WORKERS = 4
"""Worker threads per listener unless `SSE_DAEMON_WORKERS` says otherwise."""
MAX_WORKERS = 256
"""The most worker threads a listener takes."""

_Job = tuple[Callable[[], Any], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


def worker_count(value: str | None) -> tuple[int, str | None]:
    """The workers per listener `SSE_DAEMON_WORKERS` asks for, and a warning when its value is
    not a whole number from 1 to `MAX_WORKERS` (the default is then used, as SSEBench's daemon
    does for a value that is not a positive integer).

    >>> worker_count(None), worker_count("1")
    ((4, None), (1, None))
    >>> worker_count("zero")
    (4, "ignoring SSE_DAEMON_WORKERS='zero': not a whole number from 1 to 256")
    """
    if value is None:
        return DEFAULT_WORKERS, None
    stripped = value.strip()
    if stripped.isdigit() and stripped.isascii() and 0 < int(stripped) <= MAX_WORKERS:
        return int(stripped), None
    why = f"not a whole number from 1 to {MAX_WORKERS}"
    return DEFAULT_WORKERS, f"ignoring SSE_DAEMON_WORKERS={value!r}: {why}"


def _settle(future: asyncio.Future[Any], failed: bool, value: Any) -> None:
    if future.cancelled():
        return
    if failed:
        future.set_exception(value)
    else:
        future.set_result(value)


def _work(jobs: queue.SimpleQueue[_Job | None]) -> None:
    while (job := jobs.get()) is not None:
        work, loop, future = job
        try:
            value, failed = work(), False
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, whatever it is
            value, failed = exc, True
        with contextlib.suppress(RuntimeError):  # the caller's loop has closed
            loop.call_soon_threadsafe(_settle, future, failed, value)


def _stop(jobs: queue.SimpleQueue[_Job | None], count: int) -> None:
    for _ in range(count):
        jobs.put(None)


class Workers:
    """A fixed pool of `count` threads, started by `start` (or by the first `run`)."""

    def __init__(self, count: int = DEFAULT_WORKERS) -> None:
        if count < 1:
            raise ValueError("a listener needs one worker at least")
        self.count = count
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._started = False
        self._closed = weakref.finalize(self, _stop, self._jobs, count)

    def start(self) -> None:
        """Start the threads, once."""
        with self._lock:
            if self._started:
                return
            self._started = True
            for index in range(self.count):
                threading.Thread(
                    target=_work, args=(self._jobs,), name=f"worker-{index}", daemon=True
                ).start()

    async def run(self, work: Callable[[], T]) -> T:
        """`work()` in one of the threads; its value or its exception."""
        self.start()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put((work, loop, future))
        return await future

    def close(self) -> None:
        """Let the threads end once the work queued before is done."""
        self._closed()
