"""How soon `ssegrade daemon` answers on each socket after it starts.

The daemon is started N times (default 5) for a small shell task (`tests.support.realtask`: a
source tree at one commit, five scripts), exactly as an entrypoint starts it (the console
script `ssegrade daemon`, root or not). Times from the process's start:

- **connects**: the socket exists and takes a connection;
- **answers**: `GET /version`, asked at once, has its reply (200);
- **serves** (agent-facing socket): `GET /ssegrade/version`, asked at once, has its reply,
  which only the server gives.

The admin socket is bound first, before the daemon's libraries are loaded and before the
baseline is recorded; the agent-facing socket only once the baseline is recorded (SPEC §9: an
entrypoint starts the agent once that socket exists, and the agent's tree cannot change before
the baseline), so its times include the baseline. Each answers `GET /version` the moment it
is bound and holds the rest until the server takes it; the server's libraries load only once
the agent-facing socket is bound, so **serves** follows **answers** by their import.
`--files` adds files to the source tree, for a baseline that takes longer. The floor, measured
in the same run, is what any Python program costs to start here (`python -c pass`), and the
load average is printed with the figures: the host is shared. Run against other code (the
start-up before a change) with `PYTHONPATH` naming that tree: the daemon inherits it.

    .venv/bin/python benchmarks/bench_daemon_start.py [--runs 5] [--files 0]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.realtask import make_task


def _connects(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    return sock


_PROBES = (
    ("admin", "answers", "/version"),
    ("agent", "answers", "/version"),
    ("agent", "serves", "/ssegrade/version"),
)
"""What is asked on each socket the moment it takes a connection: `GET /version` (answered at
once), and on the agent-facing one also ssegrade's own `/ssegrade/version`, which only the
server answers (held meanwhile)."""


def _one_start(task: Path, source: Path, results: Path, folder: Path) -> dict[str, float]:
    sockets = {"agent": folder / "agent.sock", "admin": folder / "admin" / "admin.sock"}
    ssegrade = Path(sys.executable).parent / "ssegrade"
    command = [str(ssegrade), "daemon", "--task", str(task), "--source", str(source)]
    command += ["--results", str(results), "--agent-socket", str(sockets["agent"])]
    command += ["--admin-socket", str(sockets["admin"]), "-q"]
    env = {**os.environ, "SSE_DIFFICULTY": "2"}
    started = time.monotonic()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen: dict[str, float] = {}
    held: dict[str, socket.socket] = {}
    reply: dict[str, bytes] = {}
    try:
        while len(seen) < 2 + len(_PROBES):
            if proc.poll() is not None:
                raise SystemExit(
                    f"the daemon exited: {proc.stderr.read().decode() if proc.stderr else ''}"
                )
            now = time.monotonic() - started
            for name, path in sockets.items():
                if f"{name} connects" in seen:
                    continue
                made = _connects(path)
                if made is None:
                    continue
                seen[f"{name} connects"] = now
                made.close()
                for probe, what, asked in _PROBES:
                    if probe == name:
                        held[f"{name} {what}"] = _ask(path, asked)
                        reply[f"{name} {what}"] = b""
            for event, conn in held.items():
                if event in seen:
                    continue
                try:
                    chunk = conn.recv(4096)
                except BlockingIOError:
                    continue
                reply[event] += chunk
                if b"\r\n\r\n" in reply[event] or not chunk:
                    assert reply[event].startswith(b"HTTP/1.1 200"), reply[event]
                    seen[event] = time.monotonic() - started
            time.sleep(0.002)
    finally:
        for conn in held.values():
            conn.close()
        proc.terminate()
        proc.wait(60)
    return seen


def _ask(path: Path, target: str) -> socket.socket:
    """A connection to `path` that has asked `GET target`, set to be read without waiting."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(path))
    conn.sendall(f"GET {target} HTTP/1.1\r\nHost: daemon\r\nConnection: close\r\n\r\n".encode())
    conn.setblocking(False)
    return conn


def _add_files(source: Path, count: int) -> None:
    """Add `count` small files to the source tree's one commit."""
    if count == 0:
        return
    bulk = source / "bulk"
    bulk.mkdir()
    for index in range(count):
        (bulk / f"f{index}.txt").write_text(f"file {index}\n" * 8)
    git = ["git", "-C", str(source), "-c", "user.name=b", "-c", "user.email=b@b.invalid"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "--amend", "--no-edit"], check=True)


def _floor(runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.monotonic()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.monotonic() - started)
    return statistics.median(times)


def main() -> None:
    """Start the daemon `--runs` times and print the median time to each event."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--files", type=int, default=0)
    arguments = parser.parse_args()
    runs = arguments.runs
    work = Path(tempfile.mkdtemp(prefix="bench-daemon-start-"))
    work.chmod(0o755)
    try:
        made = make_task(work / "t")
        _add_files(made.source, arguments.files)
        floor = _floor(runs)
        measured: dict[str, list[float]] = {}
        for index in range(runs):
            folder = Path(tempfile.mkdtemp(prefix="sse-", dir="/tmp"))
            folder.chmod(0o755)
            try:
                results = work / f"results-{index}"
                for name, value in _one_start(made.task, made.source, results, folder).items():
                    measured.setdefault(name, []).append(value)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"ssegrade daemon start, median of {runs} runs (load average {load})")
        print(f"  floor (python -c pass)   {floor * 1000:7.0f} ms")
        names = ("admin connects", "admin answers", "agent connects", "agent answers")
        for name in (*names, "agent serves"):
            value = statistics.median(measured[name])
            print(f"  {name:<24} {value * 1000:7.0f} ms   ({value / floor:4.1f}x the floor)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
