"""The Ray engine: each grading a Ray task on whichever node of the cluster takes it, its run
folder streamed back into the driver's.

Interpreter layer (processes). A grading is submitted as a streaming Ray task
(`interpreters.batch.transit.grade_on_node`): the patch travels with it, the node grades into
a folder of its own and sends the files back in pieces, which the driver writes into the run
folder it holds (`interpreters.batch.landing`) as they come, a few at a time for each
grading, so that no node needs to write where the driver writes, and the driver never holds
a whole file. A grading whose worker or node dies, or whose pieces break the rules of a run
folder, is an `error` in its folder (`--max-attempts` grades it again). Ray runs its
workers apart from the terminal: a local Ray is started with SIGINT ignored. An engine given
a `node` function submits it in place of `grade_on_node` (`interpreters.engine.on_ray`: each
image job in a container on its node), its pieces landing the same way.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from interpreters.batch.landing import Arrival, Landing, TransitError
from interpreters.batch.transit import IN_FLIGHT, Piece, grade_on_node
from interpreters.batch.work import Done, GradeFunction, Work
from ssegrade.internal.errors import SsegradeError
from ssegrade.internal.verdict import Crashed, not_graded

__all__ = ["NO_RAY", "EngineUnavailable", "NodeFunction", "RayEngine", "check_reachable"]

NodeFunction = Callable[[Work, str], Iterator[Piece | Done]]
"""What grades one work on a node, given the driver's token, and yields its run folder's
pieces then its `Done` (`interpreters.engine.on_ray.ContainersOnNode`: in a container)."""

NO_RAY = "the ray engine needs Ray: pip install 'ssegrade[ray]'"
_WORKER_ENV = {"RAY_kill_child_processes_on_worker_exit": "false"}
"""A Ray worker that exits (its task killed) leaves its children to themselves: the guardian
of its gradings must outlive it, to kill their scripts and remove their folders."""
_CONNECT = 10.0
"""Seconds to wait for the cluster's address to answer."""
_SLICE = 0.5
"""Seconds one grading's pieces may take of one look at the running gradings."""


class EngineUnavailable(SsegradeError):
    """The engine asked for cannot run here (e.g. Ray is not installed); one-line message."""


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@dataclass(slots=True)
class _Flow:
    """A grading under way: its work, its stream of pieces, where they land (None: the
    driver does not hold its folder, the pieces are dropped)."""

    work: Work
    stream: Any
    arrival: Arrival | None
    start: float = field(default_factory=time.monotonic)


@dataclass
class RayEngine:
    """Each grading a Ray task on the cluster at `address` (None: a local Ray started here
    and stopped by `close`), its run folder landing as `landing` says. With `node`, each
    grading is `node(work, token)` on its node rather than `grade` there."""

    grade: GradeFunction | None
    capacity: int
    landing: Landing
    address: str | None = None
    node: NodeFunction | None = None
    _ray: Any = None
    _remote: Any = None
    _flows: dict[Any, _Flow] = field(default_factory=dict)
    _ready: list[Done] = field(default_factory=list)

    def __post_init__(self) -> None:
        try:
            import ray  # noqa: PLC0415 - optional extra
        except ImportError:
            raise EngineUnavailable(NO_RAY) from None
        self._ray = ray
        with _sigint_ignored():
            if self.address is None:
                ray.init(
                    address="local",
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            else:
                check_reachable(self.address)
                try:
                    ray.init(address=self.address, log_to_driver=False, configure_logging=False)
                except ConnectionError as exc:
                    raise EngineUnavailable(
                        f"no Ray cluster at {self.address}: {_line(exc)}"
                    ) from None
        self._remote = self._ray.remote(
            max_retries=0,
            num_returns="streaming",
            _generator_backpressure_num_objects=IN_FLIGHT,
            runtime_env={"env_vars": _WORKER_ENV},
        )(grade_on_node if self.node is None else _on_node)
        if self.capacity <= 0:
            self.capacity = max(1, int(self._ray.cluster_resources().get("CPU", 1)))

    def start(self, work: Work) -> None:
        """Submit one grading as a Ray task (none when the driver does not hold its run
        folder: that grading is an `error` at once)."""
        arrival = self.landing.arrival(work)
        if arrival is None:
            lost = Crashed(f"{work.results}: not held", kind="infrastructure")
            result = not_graded(lost, work.runtime)
            self._ready.append(Done(work.key, result, 0.0))
            return
        how = self.node or self.grade
        stream = self._remote.remote(how, work, self.landing.token)
        self._flows[stream] = _Flow(work, stream, arrival)

    def running(self) -> int:
        """Gradings submitted and not yet collected."""
        return len(self._flows) + len(self._ready)

    def poll(self, timeout: float) -> list[Done]:
        """Write the pieces that arrived; the gradings whose folder is whole (or lost)."""
        found, self._ready = self._ready, []
        if found or not self._flows:
            if not found:
                time.sleep(timeout)
            return found
        streams = list(self._flows)
        ready, _ = self._ray.wait(streams, num_returns=1, timeout=timeout)
        if ready:
            ready, _ = self._ray.wait(streams, num_returns=len(streams), timeout=0)
        for stream in ready:
            done = self._advance(self._flows[stream])
            if done is not None:
                del self._flows[stream]
                found.append(done)
        return found

    def _advance(self, flow: _Flow) -> Done | None:
        """Take the pieces of `flow` that are there (for at most `_SLICE` seconds); its
        `Done` once it ended."""
        until = time.monotonic() + _SLICE
        while True:
            try:
                item = self._ray.get(next(flow.stream))
            except StopIteration:
                return self._lost(flow, "its stream ended before its result")
            except Exception as exc:  # noqa: BLE001 - the worker or its node died, or it raised
                return self._lost(flow, _line(getattr(exc, "cause", None) or exc))
            if isinstance(item, Done):
                return replace(item, key=flow.work.key)
            try:
                if flow.arrival is not None:
                    flow.arrival.take(item)
            except TransitError as exc:
                self._ray.cancel(flow.stream, force=True)
                return self._lost(flow, str(exc))
            if time.monotonic() > until:
                return None
            more, _ = self._ray.wait([flow.stream], num_returns=1, timeout=0)
            if not more:
                return None

    def _lost(self, flow: _Flow, why: str) -> Done:
        message = f"lost on its Ray node: {why}"
        seconds = time.monotonic() - flow.start
        if flow.arrival is None:
            result = not_graded(Crashed(message, kind="infrastructure"), flow.work.runtime)
            return Done(flow.work.key, result, seconds)
        return Done(flow.work.key, flow.arrival.lost(message), seconds)

    def kill(self) -> list[int]:
        """Kill every running grading: its Ray worker is killed, as a local worker killed
        with -9 (the worker's guardian then kills its scripts and removes its folders on the
        node; an interrupt would land only once the script under way ends); what arrived of
        it is dropped."""
        keys = [flow.work.key for flow in self._flows.values()]
        keys += [done.key for done in self._ready]
        self._ready.clear()
        for flow in self._flows.values():
            if flow.arrival is not None:
                flow.arrival.close()
            with contextlib.suppress(Exception):
                self._ray.cancel(flow.stream, force=True)
        self._flows.clear()
        return keys

    def close(self) -> None:
        """Drop what has not arrived and disconnect (stopping the local Ray this engine
        started)."""
        for flow in self._flows.values():
            if flow.arrival is not None:
                flow.arrival.close()
        self._flows.clear()
        self._ray.shutdown()


def _on_node(node: NodeFunction, work: Work, token: str) -> Iterator[Piece | Done]:
    """The Ray task of a grading that `node` runs."""
    yield from node(work, token)


def check_reachable(address: str) -> None:
    """`EngineUnavailable` at once when nothing listens at `address` (`HOST:PORT`), where
    Ray would try for minutes; other forms of address are left to Ray."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or "/" in host:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=_CONNECT).close()
    except OSError as exc:
        raise EngineUnavailable(f"no Ray cluster at {address}: {exc.strerror or exc}") from None


def _line(exc: BaseException) -> str:
    """An exception in one line: its class and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
