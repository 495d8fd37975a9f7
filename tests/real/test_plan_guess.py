"""The real interpreter guesses nothing from effect arguments: what runs ahead is what the
grading program's plan names (`MayRunAhead`), and without a plan nothing does.

Written as the attack: an interpreter that starts work because it saw `CaptureTree` (the
archive of the source tree, a copy ahead, the patch check) does work no one asked for, on a
tree a caller that is not grading may still be changing. This file imports nothing of the plan,
so that it runs against an interpreter from before it.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from returns.pipeline import is_successful

from interpreters.app.setup import Sources, grading_setup, hold_results, load_inputs
from interpreters.real import git as realgit
from interpreters.real.local import LocalSystem
from ssegrade import BenchSession, Deadline, bencher_interpreter
from ssegrade.internal.effects import PrepareGrading
from tests.support.realtask import make_task

pytestmark = pytest.mark.slow


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ssegrade-plan-guess-") as folder:
        Path(folder).chmod(0o755)
        yield Path(folder)


def test_without_a_plan_nothing_runs_ahead_of_the_capture(workdir: Path) -> None:
    made = make_task(workdir, pocs=1)
    assert is_successful(realgit.record_baseline(made.source, made.baseline))
    made.set_value("fixed")
    inputs = load_inputs(made.task, made.source, None)
    held = hold_results(made.results)
    try:
        with grading_setup(inputs, Sources(baseline=made.baseline), held.path) as ready:
            deadline = Deadline.starting(120, time.monotonic)
            local = LocalSystem(ready.places, inputs.runner, deadline=deadline, ahead=True)
            try:
                session = BenchSession(task=inputs.task, folder=str(inputs.task_dir))
                interpret = bencher_interpreter(session, local, deadline)
                prepared = interpret(PrepareGrading())
                assert is_successful(prepared)  # type: ignore[arg-type]
                started = sorted(p.name for p in held.path.iterdir() if p.name.startswith("."))
                private = ready.places.scratch / "private"
                ahead = sorted(p.name for p in private.iterdir() if p.name.startswith("copy-"))
            finally:
                local.close()
    finally:
        held.release()
    assert [name for name in started if name.startswith(".source.tar.gz")] == []
    assert ahead == []
