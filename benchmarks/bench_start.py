"""The CPU time of `ssegrade` commands that only answer: the version, each command's help, and
one-line input errors, beside the floor (`python -c pass`) measured in the same run.

Each command runs N times (default 7) as the console script a user types (`.venv/bin/ssegrade`);
its user + system CPU time is read from the kernel's accounting of the finished child
(`os.wait4`: its waited-for children included, so `evaluate`'s archive child, started before
the command line is parsed, counts; the lines marked `*` give `--patch`, which starts none),
the median kept. The target is under 0.15 s of CPU for each: none of them loads the real
interpreter, the pydantic models (a rejected task's config is judged by
`ssegrade.internal.task_shape` before the task model), fastapi, rich, Jinja2 or Ray. The load
average is printed with the figures: the host is shared.

    .venv/bin/python benchmarks/bench_start.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TARGET = 0.15
"""Seconds of CPU each command may take."""


def _commands(scratch: Path) -> list[tuple[str, list[str]]]:
    """Each measured command: its label and its arguments."""
    bad = scratch / "bad-task"
    bad.mkdir()
    (bad / "config.yaml").write_text("id: t\nscripts: {build: 3}\n")
    not_yaml = scratch / "not-yaml"
    not_yaml.mkdir()
    (not_yaml / "config.yaml").write_text("id: [\n")
    no_id = scratch / "no-id"
    no_id.mkdir()
    (no_id / "config.yaml").write_text("scripts: {build: build.sh}\n")
    helps = ["evaluate", "baseline", "daemon", "test-patch", "verify", "batch", "report"]
    helps += ["replay", "schema", "bundle"]
    patch = ["--patch", "/dev/null"]
    commands = [("--version", ["--version"]), ("--help", ["--help"])]
    commands += [(f"{name} --help", [name, "--help"]) for name in helps]
    commands += [
        ("evaluate: bad option", ["evaluate", "--bogus"]),
        ("evaluate: missing task", ["evaluate", "--task", str(scratch / "none")]),
        ("evaluate: rejected task", ["evaluate", "--task", str(bad)]),
        ("evaluate: missing patch", ["evaluate", "--task", str(bad), "--patch", "/none"]),
        # With --patch, evaluate starts no archive child first (interpreters.cli.entry).
        ("evaluate: bad option *", ["evaluate", "--bogus", "--patch", "/dev/null"]),
        ("evaluate: missing task *", ["evaluate", "--task", str(scratch / "none"), *patch]),
        ("evaluate: rejected task *", ["evaluate", "--task", str(bad), *patch]),
        ("evaluate: not YAML *", ["evaluate", "--task", str(not_yaml), *patch]),
        ("evaluate: missing key *", ["evaluate", "--task", str(no_id), *patch]),
        ("verify: missing folder", ["verify", str(scratch / "none")]),
        ("report: bad option", ["report", str(scratch), "--format", "pdf"]),
        ("batch: bad option", ["batch", "jobs.jsonl"]),
        ("daemon: bad port", ["daemon", "--http-port", "0"]),
    ]
    return commands


def _cpu(argv: list[str]) -> float:
    """User + system CPU seconds of one run of `argv` (its children included)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0  # reaped here
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    """Run each command `--runs` times; print the median CPU time of each beside the floor."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    ssegrade = str(Path(sys.executable).parent / "ssegrade")
    with tempfile.TemporaryDirectory(prefix="bench-start-") as folder:
        commands = _commands(Path(folder))
        floor = statistics.median(_cpu([sys.executable, "-c", "pass"]) for _ in range(runs))
        measured = {
            label: statistics.median(_cpu([ssegrade, *args]) for _ in range(runs))
            for label, args in commands
        }
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"ssegrade start, CPU (user + sys), median of {runs} runs (load average {load})")
    print(f"  {'floor (python -c pass)':<28} {floor * 1000:6.0f} ms")
    over = 0
    for label, cpu in measured.items():
        mark = "" if cpu < TARGET else f"   over {TARGET * 1000:.0f} ms"
        over += cpu >= TARGET
        print(f"  {label:<28} {cpu * 1000:6.0f} ms   ({cpu / floor:4.1f}x the floor){mark}")
    print(f"  {len(measured) - over} of {len(measured)} under {TARGET * 1000:.0f} ms")
    print("  * with --patch, so without the archive child `evaluate` otherwise starts first")


if __name__ == "__main__":
    main()
