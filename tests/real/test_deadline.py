"""One deadline over the whole evaluation: capture, proof, copies, scripts and the archive all
honour `--timeout`, and `result.json` comes within 2 s of it whatever the tree holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from returns.pipeline import is_successful
from returns.result import Failure

from interpreters.real import files, git
from interpreters.real.local import LocalSystem, Places
from interpreters.real.runner import resolve_runner
from ssegrade import Deadline, TimeLimitReached
from ssegrade.internal.effects import CaptureTree
from tests.support.realtask import RealTask, make_task

pytestmark = pytest.mark.slow

LIMIT = 3
GRACE = 2.0
START = 15.0
"""Margin for the process start (interpreter, imports, task and baseline loading) only."""


def _evaluate(t: RealTask) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run `ssegrade evaluate --timeout LIMIT`; answer it and the seconds until result.json
    was written (from its mtime, measured from the moment the process was started)."""
    command = [
        sys.executable, "-c", "from interpreters.cli.entry import main; main()", "evaluate",
        "--task", str(t.task), "--source", str(t.source), "--baseline", str(t.baseline),
        "--results", str(t.results), "--timeout", str(LIMIT),
        # Past the grading's limit: the grading's own limit is what these tests time.
        "--script-timeout", "3600",
    ]  # fmt: skip
    started = time.time()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    written = (t.results / "result.json").stat().st_mtime - started
    return done, written


def _timed_out(t: RealTask) -> dict[str, object]:
    doc = json.loads((t.results / "result.json").read_bytes())
    patch = doc["patch_result"]
    assert patch["status"] == "error"
    assert patch["error_msg"] == f"Timeout ({LIMIT}s)"
    assert doc["runtime_result"]["evaluator_timeout"] is True
    archived = t.results / "source.tar.gz"
    if archived.exists():  # whole, or absent
        subprocess.run(["gzip", "-t", str(archived)], check=True)
    assert not [p for p in t.results.iterdir() if p.name.endswith(".tmp")]
    result: dict[str, object] = patch
    return result


@pytest.fixture
def task(tmp_path: Path) -> RealTask:
    made = make_task(tmp_path)
    assert is_successful(git.record_baseline(made.source, made.baseline))
    return made


def test_a_huge_sparse_file_and_a_fifo_cannot_hold_the_result_back(task: RealTask) -> None:
    huge = task.source / "huge.bin"
    huge.write_bytes(b"")
    os.truncate(huge, 8 << 30)  # 8 GiB of holes: hashing and archiving it takes minutes
    os.mkfifo(task.source / "pipe")
    done, written = _evaluate(task)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"error: Timeout ({LIMIT}s)"
    assert written <= START + LIMIT + GRACE
    patch = _timed_out(task)
    assert patch["build_success"] is None


def test_a_sleeping_build_is_cut_at_the_limit(task: RealTask) -> None:
    task.script("build.sh", "#!/bin/sh\nexec sleep 600\n")
    done, written = _evaluate(task)
    assert done.stdout.strip() == f"error: Timeout ({LIMIT}s)", done.stderr
    assert written <= START + LIMIT + GRACE
    patch = _timed_out(task)
    assert patch["build_success"] is None
    assert (task.results / "final.patch").exists()


# ---------------------------------------------------------------------------- the parts


def test_git_commands_are_killed_at_the_deadline(task: RealTask) -> None:
    task.set_value("fixed")
    base = git.load_baseline(task.baseline).unwrap()
    spent = git.capture(task.source, base, until=Deadline.starting(0, time.monotonic))
    assert "time limit" in spent.failure().message
    assert is_successful(
        git.capture(task.source, base, until=Deadline.starting(60, time.monotonic))
    )


def test_git_takes_its_time_from_the_deadlines_own_clock(task: RealTask, tmp_path: Path) -> None:
    """A deadline on a clock of its own (one that runs fast here: 20 s at each reading) ends
    the capture when that clock says so, not after its seconds on `time.monotonic`."""
    task.set_value("fixed")
    base = git.load_baseline(task.baseline).unwrap()
    readings = [0.0]

    def fast() -> float:
        readings[0] += 20.0
        return readings[0]

    places = Places(
        task=task.task,
        source=task.source,
        baseline=base,
        repo=task.source,
        results=tmp_path / "results",
        scratch=tmp_path / "scratch",
    )
    runner = resolve_runner(None).unwrap()
    system = LocalSystem(places, runner, deadline=Deadline.starting(60, fast))
    try:
        captured = system(CaptureTree())
    finally:
        system.close()
    assert isinstance(captured, Failure)
    assert "time limit" in captured.failure().message
    again = replace(places, scratch=tmp_path / "again")
    on_time = LocalSystem(again, runner, deadline=Deadline.starting(60, time.monotonic))
    try:
        assert is_successful(on_time(CaptureTree()))  # type: ignore[arg-type]
    finally:
        on_time.close()


def test_a_copy_stops_at_its_check(task: RealTask, tmp_path: Path) -> None:
    for index in range(300):  # more than one batch
        (task.source / f"f{index}").write_text("x")

    def spent() -> None:
        raise TimeLimitReached(LIMIT)

    with pytest.raises(TimeLimitReached):
        files.fresh_copy(task.source, tmp_path / "copy", None, check=spent)
    files.remove_tree(tmp_path / "copy")
