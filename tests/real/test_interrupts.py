"""Interrupts (SPEC §8): SIGINT or SIGTERM while grading writes an `error` result.json that
keeps the finished checks, exits 130 or 143, and leaves no process of the scripts behind; a
signal during the archive or the result writing keeps a grade that had finished.

The program against a fake world that raises the interrupt where a signal would land, and the
`ssegrade evaluate` command on a real task, signalled while a script runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interpreters.real.files import remove_tree
from ssegrade import (
    BenchSession,
    Effect,
    EvaluationResult,
    GradeOptions,
    Task,
    bencher_interpreter,
    grade,
    run,
)
from ssegrade.internal.effects import Archive, RunScript, WriteResult
from ssegrade.internal.program import SignalArrived
from ssegrade.internal.task import Files, Scripts
from ssegrade.internal.verdict import Outcomes, Signalled, decide
from ssegrade.testing import FakeWorld, Throwing, matching
from ssegrade.testing.strategies import outcomes
from tests.support.processes import live_with, unique
from tests.support.realtask import RealTask, git, make_task
from tests.support.waiting import wait_until

FULL = Task(
    id="demo-1",
    scripts=Scripts(build="scripts/build.sh", run="scripts/run.sh", test="scripts/test.sh"),
    files=Files(poc=("pocs/a.bin",), future_test="tests/future.diff"),
)


@given(outcomes(), st.sampled_from(["SIGINT", "SIGTERM"]))
def test_an_interrupted_grading_keeps_its_checks_and_a_failed_one_decides(
    observed: Outcomes, name: str
) -> None:
    finished = decide(observed)
    stopped = decide(
        Outcomes(observed.has, observed.pocs, observed.runs, observed.apply_failed, Signalled(name))
    )
    if any(not run.passed for run in observed.runs):  # a failed check is decisive
        assert stopped == finished
    elif observed.apply_failed is None:
        assert (stopped.status, stopped.error_msg, stopped.error_log) == (
            "error",
            f"Interrupted ({name})",
            None,
        )
    assert stopped.build_success == finished.build_success
    assert stopped.func_test_success == finished.func_test_success


def interrupting(world: FakeWorld, at: type[Effect[Any]], label: str | None = None) -> Throwing:
    """The fake world, in which a signal lands at the first effect of one kind (and label)."""
    where = matching(at) if label is None else matching(at, label=label)
    return Throwing(world, {0: SignalArrived("SIGTERM")}, where)


def grade_with(world: FakeWorld, interpreter: Throwing) -> EvaluationResult:
    session = BenchSession(task=FULL, folder="/task")
    return run(
        grade(GradeOptions(task=FULL, folder="/task")), bencher_interpreter(session, interpreter)
    )


def test_a_signal_during_a_check_keeps_the_finished_ones() -> None:
    world = FakeWorld(patch=b"diff --git a/x b/x\n")
    result = grade_with(world, interrupting(world, RunScript, label="poc-1"))
    patch = result.patch_result
    assert (patch.status, patch.error_msg, patch.build_success) == (
        "error",
        "Interrupted (SIGTERM)",
        True,
    )
    assert world.leaks().unwrap() is None  # the staged PoC was removed all the same
    assert world.script_labels() == ["build"]


@pytest.mark.parametrize("at", [Archive, WriteResult], ids=["archive", "write"])
def test_a_signal_after_the_checks_keeps_the_grade(at: type[Effect[Any]]) -> None:
    world = FakeWorld(patch=b"diff --git a/x b/x\n")
    result = grade_with(world, interrupting(world, at))
    assert result.patch_result.status == "passed"
    written = [e for e in world.trace if isinstance(e, WriteResult)]
    assert [e.result for e in written] == [result]


# ---------------------------------------------------------------------------- end to end


RUN = """#!/bin/sh
sleep 300 0.{t} &
touch ready-{t}
sleep 300 0.{t}
"""


@pytest.fixture
def scratch() -> Iterator[Path]:
    """The evaluator's temporary folder: one the runner can reach, and this test can search."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-interrupt-"))
    folder.chmod(0o755)
    yield folder
    remove_tree(folder)


def ready_file(scratch: Path, token: str, proc: subprocess.Popen[str]) -> Path:
    """Wait until the PoC script says it runs (a file it writes in its working tree: a fresh
    copy, or the own layer of a copy-on-write view)."""

    def found() -> list[Path]:
        try:
            ready = [
                *scratch.glob(f"ssegrade-*/work/copy-*/ready-{token}"),
                *scratch.glob(f"ssegrade-*/work/layers/upper-*/ready-{token}"),
            ]
        except FileNotFoundError:  # a folder went while it was read (another grading's)
            ready = []
        assert ready or proc.poll() is None, proc.communicate()
        return ready

    return wait_until(found, "the PoC script to start", 120)[0]


@pytest.mark.slow
@pytest.mark.parametrize("times", [1, 2], ids=["once", "twice"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_evaluate_interrupted_while_a_script_runs(
    tmp_path: Path, scratch: Path, sig: signal.Signals, times: int
) -> None:
    task: RealTask = make_task(tmp_path, pocs=1)
    token = unique()
    task.script("run.sh", RUN.format(t=token))
    task.set_value("fixed")
    git(task.source, "commit", "-qam", "fix")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from interpreters.cli.entry import main; main()",
            "evaluate",
            "--task",
            str(task.task),
            "--source",
            str(task.source),
            "--results",
            str(task.results),
        ],
        env={**os.environ, "TMPDIR": str(scratch)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready_file(scratch, token, proc)
        for _ in range(times):
            proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()  # its pipes closed too
    assert proc.returncode == 128 + sig, stderr
    assert "Traceback" not in stderr
    assert f"interrupted by {sig.name}" in stderr
    document = json.loads((task.results / "result.json").read_bytes())
    patch = document["patch_result"]
    assert patch["status"] == "error"
    assert patch["error_msg"] == f"Interrupted ({sig.name})"
    assert patch["error_log"] is None
    assert patch["build_success"] is True  # the finished check is kept
    assert not live_with(token)
    assert not list(task.results.glob(".result.json.*"))  # no half-written file
