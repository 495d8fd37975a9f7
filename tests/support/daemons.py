"""Daemons as real processes on real sockets: `ssegrade daemon` started for a task in a short
private folder, its clients, and waiting for what its scripts make.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from interpreters.daemon.client import DaemonClient
from ssegrade.protocol import PREFIX
from tests.support.waiting import wait_until

TOP = Path(__file__).resolve().parents[2]


@dataclass
class RunningDaemon:
    """One `ssegrade daemon` process and its sockets (in a short private folder)."""

    proc: subprocess.Popen[bytes]
    folder: Path
    agent: Path
    admin: Path
    log: Path
    clients: list[DaemonClient] = field(default_factory=list)

    def client(self, listener: str = "agent", timeout: float | None = 60.0) -> DaemonClient:
        """A client of the agent-facing or the admin socket."""
        made = DaemonClient(self.agent if listener == "agent" else self.admin, timeout=timeout)
        self.clients.append(made)
        return made

    def http(self, listener: str = "agent", prefix: str = PREFIX) -> httpx.Client:
        """A raw httpx client of one socket, to look at statuses and bodies as they are: of
        ssegrade's API by default, of SSEBench's wire with `prefix` ""."""
        path = self.agent if listener == "agent" else self.admin
        transport = httpx.HTTPTransport(uds=str(path))
        return httpx.Client(transport=transport, base_url=f"http://daemon{prefix}", timeout=60)

    def wait_ready(self, seconds: float = 60) -> None:
        """Wait until the daemon answers on its admin socket; fail with its output if not."""

        def answers() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"the daemon exited {self.proc.returncode}:\n{self.output()}")
            if self.admin.exists() and self.agent.exists():
                with contextlib.suppress(Exception), self.http("admin") as probe:
                    return probe.get("/version").status_code == 200
            return False

        try:
            wait_until(answers, "the daemon to answer", seconds, 0.05, self.output)
        except AssertionError:
            if self.proc.poll() is None:
                self.cleanup()
            raise

    def output(self) -> str:
        """What the daemon printed so far."""
        return self.log.read_text(errors="replace")

    def ask_to_stop(self, signum: int = signal.SIGTERM) -> None:
        """Send `signum` if the daemon still runs."""
        if self.proc.poll() is None:
            self.proc.send_signal(signum)

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 60) -> int:
        """Send `signum` and wait for the exit status."""
        for made in self.clients:
            made.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        return self.proc.wait(timeout)

    def cleanup(self) -> None:
        """Stop the process whatever happened, and remove the socket folder."""
        with contextlib.suppress(Exception):
            self.stop(timeout=60)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        shutil.rmtree(self.folder, ignore_errors=True)


def daemon_command(task: Path, source: Path, results: Path, *args: str) -> list[str]:
    """The argv of `ssegrade daemon` for a task, a source tree and a results folder, through
    the console script's entry (which binds the admin socket first)."""
    return [
        sys.executable,
        "-c",
        "from interpreters.cli.entry import main; main()",
        "daemon",
        "--task",
        str(task),
        "--source",
        str(source),
        "--results",
        str(results),
        *args,
    ]


def start_daemon(
    task: Path,
    source: Path,
    results: Path,
    *args: str,
    level: str | None = "0",
    wait: bool = True,
    env: dict[str, str] | None = None,
    stderr: int | None = None,
) -> RunningDaemon:
    """Start `ssegrade daemon` with sockets in a new short folder; wait until it answers.
    `env` is added to the environment; `stderr` (a descriptor) takes the daemon's output
    instead of the log file."""
    folder = Path(tempfile.mkdtemp(prefix="sse-", dir="/tmp"))
    folder.chmod(0o755)
    agent, admin, log = folder / "agent.sock", folder / "admin" / "admin.sock", folder / "log"
    environment = {k: v for k, v in os.environ.items() if k != "SSE_DIFFICULTY"}
    if level is not None:
        environment["SSE_DIFFICULTY"] = level
    environment.update(env or {})
    command = daemon_command(task, source, results, *args)
    command += ["--agent-socket", str(agent), "--admin-socket", str(admin)]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command,
            cwd=TOP,
            env=environment,
            stdout=out if stderr is None else stderr,
            stderr=subprocess.STDOUT,
        )
    running = RunningDaemon(proc, folder, agent, admin, log)
    if wait:
        running.wait_ready()
    return running


@contextlib.contextmanager
def running_daemon(
    task: Path, source: Path, results: Path, *args: str, level: str | None = "0"
) -> Iterator[RunningDaemon]:
    """A daemon for the duration of a `with` block."""
    running = start_daemon(task, source, results, *args, level=level)
    try:
        yield running
    finally:
        running.cleanup()


def post_bencher(client: httpx.Client, action: str, **body: object) -> httpx.Response:
    """Call the bencher tool of SSEBench's wire with `action` and `body`."""
    return client.post("/tool/bencher", params={"action": action}, json=body)


def wait_for_file(path: Path, running: RunningDaemon, seconds: float = 60) -> None:
    """Wait until a script has made `path`; fail with the daemon's output if it never does."""

    def made() -> bool:
        assert running.proc.poll() is None, running.output()
        return path.exists()

    wait_until(made, f"a script to make {path}", seconds, detail=running.output)
