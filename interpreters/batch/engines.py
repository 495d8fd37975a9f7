"""Where gradings run: local worker processes (`workers.LocalEngine`), or Ray tasks on a
cluster (`RayEngine`).

Interpreter layer. A `Work` is one grading (a task folder, the patch bytes, the grading repo
and the folder to write, the scripts' options); an engine runs it with a grading function
(production: `interpreters.grade_patch`; tests inject their own) and hands back a `Done`
(see `work`); `interpreters.batch.driving` feeds an engine and owns the interrupt rules. Ray
runs its workers apart from the terminal.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from interpreters.batch.work import Done, Engine, GradeFunction, Work, run_work
from interpreters.batch.workers import LocalEngine

__all__ = [
    "Done",
    "Engine",
    "EngineName",
    "EngineUnavailable",
    "GradeFunction",
    "LocalEngine",
    "RayEngine",
    "Work",
    "check_engine",
    "make_engine",
    "run_work",
]

EngineName = Literal["local", "ray"]

_POLL = 0.2
_NO_RAY = "the ray engine needs Ray: pip install 'ssegrade[ray]'"
_KILL_GRACE = 30.0


class EngineUnavailable(Exception):
    """The engine asked for cannot run here (e.g. Ray is not installed); one-line message."""


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


# ---------------------------------------------------------------------------- ray


@dataclass
class RayEngine:
    """Each grading a Ray task on the cluster at `address` (None: a local Ray started here
    and stopped by `close`)."""

    grade: GradeFunction
    capacity: int
    address: str | None = None
    _ray: Any = None
    _remote: Any = None
    _refs: dict[Any, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        try:
            import ray  # noqa: PLC0415 - optional extra
        except ImportError:
            raise EngineUnavailable(_NO_RAY) from None
        self._ray = ray
        with _sigint_ignored():
            if self.address is None:
                ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
            else:
                ray.init(address=self.address, log_to_driver=False, configure_logging=False)
        self._remote = ray.remote(max_retries=0)(run_work)
        if self.capacity <= 0:
            self.capacity = max(1, int(self._ray.cluster_resources().get("CPU", 1)))

    def start(self, work: Work) -> None:
        """Submit one grading as a Ray task."""
        self._refs[self._remote.remote(self.grade, work)] = work.key

    def running(self) -> int:
        """Gradings submitted and not yet collected."""
        return len(self._refs)

    def poll(self, timeout: float) -> list[Done]:
        """Collect finished Ray tasks; a cancelled or lost one is killed (None)."""
        if not self._refs:
            time.sleep(timeout)
            return []
        ready, _ = self._ray.wait(list(self._refs), num_returns=1, timeout=timeout)
        if ready:
            ready, _ = self._ray.wait(list(self._refs), num_returns=len(self._refs), timeout=0)
        return [self._collect(ref) for ref in ready]

    def _collect(self, ref: Any) -> Done:
        key = self._refs.pop(ref)
        try:
            done: Done = self._ray.get(ref)
        except Exception:  # noqa: BLE001 - cancelled or lost: nothing was graded
            return Done(key, None, 0.0)
        return done

    def kill(self) -> list[int]:
        """Cancel every running Ray task (an interrupt in the grading, which kills its
        scripts), then collect."""
        keys = list(self._refs.values())
        for ref in list(self._refs):
            with contextlib.suppress(Exception):
                self._ray.cancel(ref)
        deadline = time.monotonic() + _KILL_GRACE
        while self._refs and time.monotonic() < deadline:
            self.poll(_POLL)
        for ref in list(self._refs):
            with contextlib.suppress(Exception):
                self._ray.cancel(ref, force=True)
        self._refs.clear()
        return keys

    def close(self) -> None:
        """Disconnect (and stop the local Ray this engine started)."""
        self._ray.shutdown()


def check_engine(name: EngineName) -> None:
    """`EngineUnavailable` when the engine called `name` cannot run here."""
    if name == "ray" and importlib.util.find_spec("ray") is None:
        raise EngineUnavailable(_NO_RAY)


def make_engine(
    name: EngineName, grade: GradeFunction, workers: int | None, address: str | None = None
) -> Engine:
    """The engine called `name` with `workers` gradings at a time (default: the CPUs of this
    machine, or of the Ray cluster)."""
    if name == "ray":
        return RayEngine(grade, workers or 0, address)
    return LocalEngine(grade, workers or os.cpu_count() or 1)
