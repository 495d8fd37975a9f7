"""Where gradings run: a pool of local worker processes, or Ray tasks on a cluster.

Interpreter layer. A `Work` is one grading (a task folder, the patch bytes, the grading repo
and the folder to write); an engine runs it with a grading function (production:
`interpreters.grade_patch`; tests inject their own) and hands back a `Done`;
`interpreters.batch.driving` feeds an engine and owns the interrupt rules.

Workers never take the terminal's SIGINT as theirs: local workers start with SIGINT ignored
and move to a process group of their own; Ray runs its workers apart from the terminal.
"""

from __future__ import annotations

import contextlib
import importlib.util
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from interpreters.batch.spawning import worker_context
from interpreters.real import files
from ssegrade import EvaluationResult, PatchResult, RuntimeResult

__all__ = [
    "Done",
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


class GradeFunction(Protocol):
    """The grading entry point's shape (`interpreters.grade_patch`)."""

    def __call__(
        self,
        task: Path,
        patch: Path | bytes,
        repo: Path,
        results: Path,
        *,
        timeout: int = ...,
        script_timeout: int | None = ...,
        runner_user: str | None = ...,
        runtime: RuntimeResult | None = ...,
        force: bool = ...,
        say: Callable[[str], None] | None = ...,
    ) -> EvaluationResult: ...


class EngineUnavailable(Exception):
    """The engine asked for cannot run here (e.g. Ray is not installed); one-line message."""


@dataclass(frozen=True, slots=True)
class Work:
    """One grading to run: `key` identifies it to its submitter."""

    key: int
    task: str
    patch: bytes
    repo: str
    results: str
    runtime: RuntimeResult
    timeout: int = 3600
    script_timeout: int | None = None
    runner_user: str | None = None


@dataclass(frozen=True, slots=True)
class Done:
    """A finished grading: its result (None when it was killed) and how long it took."""

    key: int
    result: EvaluationResult | None
    seconds: float


def run_work(grade: GradeFunction, work: Work) -> Done:
    """Run one grading with `grade`; an exception it raises becomes an `error` result written
    into the results folder (the grade of a job that could not be graded)."""
    start = time.monotonic()
    result = _grade(grade, work, Path(work.results))
    return Done(work.key, result, time.monotonic() - start)


def _run_in_worker(grade: GradeFunction, work: Work) -> Done:
    """`run_work` in a local worker, which then kills what the grading left below it."""
    try:
        return run_work(grade, work)
    finally:
        _kill_descendants()


def _checks_said(work: Work) -> Callable[[str], None]:
    """Progress lines of one grading (a check starts, a check ends with its log), on this
    worker's stderr, named by the run's results folder."""
    where = work.results

    def say(message: str) -> None:
        print(f"{where}: {message}", file=sys.stderr, flush=True)

    return say


def _grade(grade: GradeFunction, work: Work, results: Path) -> EvaluationResult:
    try:
        return grade(
            Path(work.task),
            work.patch,
            Path(work.repo),
            results,
            timeout=work.timeout,
            script_timeout=work.script_timeout,
            runner_user=work.runner_user,
            runtime=work.runtime,
            say=_checks_said(work),
        )
    except Exception as exc:  # noqa: BLE001 - the job's error belongs in its result.json
        result = EvaluationResult(
            patch_result=PatchResult(status="error", error_msg=f"Exception: {exc}"),
            runtime_result=work.runtime,
        )
        results.mkdir(parents=True, exist_ok=True)
        files.atomic_write(results / "result.json", result.to_json())
        return result


def _kill_descendants() -> None:
    """Kill whatever a grading left below this worker (e.g. a script started just as an
    interrupt arrived) and reap it. A worker runs one grading at a time and starts nothing
    else, so its descendants are that grading's, and no other process is touched."""
    me = os.getpid()
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(name))
    todo, found = [me], []
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    for pid in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    for pid in children.get(me, []):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


class Engine(Protocol):
    """What `drive` needs of an engine."""

    capacity: int

    def start(self, work: Work) -> None:
        """Start one grading."""

    def running(self) -> int:
        """How many gradings are running."""

    def poll(self, timeout: float) -> list[Done]:
        """Wait up to `timeout` seconds; the gradings that finished meanwhile."""

    def kill(self) -> list[int]:
        """Stop every running grading, wait for their workers; the keys of those stopped."""

    def close(self) -> None:
        """Release the workers."""


# ---------------------------------------------------------------------------- local


def _worker_start() -> None:
    # SIGINT is already ignored (inherited from the parent while it started us); a process
    # group of our own keeps the terminal's Ctrl-C away for good.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@dataclass
class LocalEngine:
    """A pool of `capacity` worker processes on this machine, one grading per worker."""

    grade: GradeFunction
    capacity: int
    _pool: ProcessPoolExecutor | None = None
    _futures: dict[Future[Done], int] = field(default_factory=dict)

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=self.capacity,
                mp_context=worker_context(self.grade),
                initializer=_worker_start,
            )
        return self._pool

    def start(self, work: Work) -> None:
        """Hand one grading to a worker (started with SIGINT ignored)."""
        with _sigint_ignored():
            future = self._executor().submit(_run_in_worker, self.grade, work)
        self._futures[future] = work.key

    def running(self) -> int:
        """Gradings handed out and not yet collected."""
        return len(self._futures)

    def poll(self, timeout: float) -> list[Done]:
        """Collect finished gradings; a worker that died leaves its grading killed (None)."""
        if not self._futures:
            time.sleep(timeout)
            return []
        finished, _ = wait_futures(
            list(self._futures), timeout=timeout, return_when=FIRST_COMPLETED
        )
        return [self._collect(future) for future in finished]

    def _collect(self, future: Future[Done]) -> Done:
        key = self._futures.pop(future)
        try:
            return future.result()
        except Exception:  # noqa: BLE001 - a worker killed under us: nothing was graded
            return Done(key, None, 0.0)

    def kill(self) -> list[int]:
        """SIGTERM every worker (grading ends at once, its scripts killed), then collect."""
        keys = list(self._futures.values())
        for child in multiprocessing.active_children():
            if child.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pid, signal.SIGTERM)
        deadline = time.monotonic() + _KILL_GRACE
        while self._futures and time.monotonic() < deadline:
            self.poll(_POLL)
        for child in multiprocessing.active_children():
            child.kill()
        self._futures.clear()
        return keys

    def close(self) -> None:
        """Stop the workers."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


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
