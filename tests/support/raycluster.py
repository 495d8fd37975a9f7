"""A Ray cluster of real nodes on this host, for the Ray engine's tests and its benchmark.

Each node is a `ray start --block` of its own, in a session of its own, with its own
temporary folder (`--temp-dir`), ports found free, and a token for the cluster alone (other
Rays of this host, and their tokens, are left alone). A node is stopped by killing the
processes of its session, never by `ray stop`, which would stop every Ray on the host (those
other tests run too). A node can be started in a mount namespace of its own where some
folders are hidden behind an empty tmpfs (as root): what it cannot see, it cannot write.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from interpreters.real.files import remove_tree

RAY = Path(sys.executable).with_name("ray")
NEEDS_RAY = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="Ray is not installed (pip install 'ssegrade[ray]')",
)
"""The mark of a test that starts a cluster: skipped, in one line, without Ray."""
START_TIMEOUT = 90.0
STOP_TIMEOUT = 15.0


@dataclass(frozen=True)
class NodeSpec:
    """How to start one node: its CPUs, its custom resources, its environment (e.g. its own
    `TMPDIR`), and folders it must not see (hidden in its own mount namespace)."""

    cpus: int
    resources: str = "{}"
    env: dict[str, str] = field(default_factory=dict)
    hidden: tuple[Path, ...] = ()


@dataclass
class Node:
    """One running node: its `ray start` (the leader of its session) and its folders."""

    process: subprocess.Popen[bytes]
    temp: Path
    log: Path

    def members(self) -> list[int]:
        """The live processes of the node's session (Ray's workers too)."""
        found = []
        for name in filter(str.isdigit, os.listdir("/proc")):
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()
                if int(fields[3]) == self.process.pid and fields[0] not in (b"Z", b"X"):
                    found.append(int(name))
        return found

    def stop(self) -> None:
        """Kill every process of the node's session until none is left, then remove its
        temporary folder."""
        deadline = time.monotonic() + STOP_TIMEOUT
        while members := self.members():
            for pid in members:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                raise AssertionError(f"Ray node {self.temp} left processes {members}")
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            self.process.wait(timeout=STOP_TIMEOUT)
        remove_tree(self.temp)


@dataclass
class Cluster:
    """A running cluster: the head's address, what a driver's environment needs (the
    cluster's token), its nodes (the head first)."""

    address: str
    env: dict[str, str]
    nodes: list[Node] = field(default_factory=list)


def free_port() -> int:
    """A port no one listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def free_ports(count: int, taken: set[int]) -> list[int]:
    """`count` ports no one listens on now, none of them in `taken`, which they join: each held
    while the others are found (a port let go at once may be found again the next time)."""
    with contextlib.ExitStack() as held:
        found: list[int] = []
        while len(found) < count:
            probe = held.enter_context(socket.socket())
            probe.bind(("127.0.0.1", 0))
            port: int = probe.getsockname()[1]
            if port not in taken:
                found.append(port)
                taken.add(port)
        return found


def _ports(taken: set[int]) -> list[str]:
    """The ports of one node, each found free and none in `taken`, which they join (Ray's
    defaults would meet other Rays', and a port used twice stops a node at its start)."""
    named = (
        "node-manager-port",
        "object-manager-port",
        "dashboard-agent-listen-port",
        "dashboard-agent-grpc-port",
        "runtime-env-agent-port",
        "metrics-export-port",
    )
    ports = free_ports(len(named) + 12, taken)
    workers = ",".join(map(str, ports[len(named) :]))
    chosen = zip(named, ports[: len(named)], strict=True)
    return [*(f"--{name}={port}" for name, port in chosen), f"--worker-port-list={workers}"]


def _wrapped(command: list[str], hidden: Sequence[Path]) -> list[str]:
    """`command` run in a mount namespace of its own where `hidden` are empty tmpfs."""
    if not hidden:
        return command
    mounts = " && ".join(
        f'mount -t tmpfs -o size=64k,mode=0700 ray-node-hidden "${index + 1}"'
        for index in range(len(hidden))
    )
    script = f'{mounts} && shift {len(hidden)} && exec "$@"'
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "--",
        "sh",
        "-c",
        script,
        "sh",
        *map(str, hidden),
        *command,
    ]


def _start(
    args: list[str], spec: NodeSpec, temp: Path, env: dict[str, str], taken: set[int]
) -> Node:
    log = temp.with_suffix(".log")
    command = [str(RAY), "start", *args, f"--num-cpus={spec.cpus}", f"--resources={spec.resources}"]
    command += [f"--temp-dir={temp}", "--node-ip-address=127.0.0.1", "--disable-usage-stats"]
    command += [*_ports(taken), "--block"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            _wrapped(command, spec.hidden),
            env={**env, **spec.env},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Node(process, temp, log)


def _wait_started(node: Node, deadline: float) -> None:
    while b"Ray runtime started" not in node.log.read_bytes():
        if node.process.poll() is not None or time.monotonic() > deadline:
            tail = node.log.read_bytes()[-3000:].decode(errors="replace")
            raise AssertionError(f"the Ray node did not start:\n{tail}")
        time.sleep(0.1)


@contextlib.contextmanager
def ray_cluster(head: NodeSpec, *others: NodeSpec) -> Iterator[Cluster]:
    """A head node and `others` joined to it; every node stopped and its folders removed
    at the end, however the block ends."""
    root = Path(tempfile.mkdtemp(prefix="rayc-"))  # short: Ray's socket paths must fit
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    taken: set[int] = set()
    (port,) = free_ports(1, taken)
    cluster = Cluster(f"127.0.0.1:{port}", {k: env[k] for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")})
    try:
        deadline = time.monotonic() + START_TIMEOUT
        args = ["--head", f"--port={port}", "--include-dashboard=false"]
        cluster.nodes.append(_start(args, head, root / "head", env, taken))
        _wait_started(cluster.nodes[0], deadline)
        for index, spec in enumerate(others):
            joining = [f"--address={cluster.address}"]
            node = _start(joining, spec, root / f"node{index}", env, taken)
            cluster.nodes.append(node)
        for node in cluster.nodes[1:]:
            _wait_started(node, deadline)
        yield cluster
    finally:
        try:
            for node in reversed(cluster.nodes):
                node.stop()
        finally:
            remove_tree(root)
