"""The plan in the vocabulary: the grading program says first what may run ahead
(`MayRunAhead`); the fake ignores it and its trace records it; the real interpreter uses it,
and the verdict is the same whether it does or not."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from returns.pipeline import is_successful

from interpreters.app.setup import Sources, grading_setup, hold_results, load_inputs
from interpreters.real import git as realgit
from interpreters.real.archive import child as archive_child
from interpreters.real.local import LocalSystem
from ssegrade import (
    BenchSession,
    Deadline,
    Effect,
    EvaluationResult,
    GradeOptions,
    bencher_interpreter,
    grade,
    run,
)
from ssegrade.internal.effects import FreshCopy, MayRunAhead, PrepareGrading
from ssegrade.internal.program import plan
from ssegrade.internal.run import Interpreter
from ssegrade.internal.task import Files, Scripts, Task
from ssegrade.testing import SCENARIOS, FakeWorld, Recording, Scenario
from tests.support.realtask import make_task, scenario_scripts

FULL = Task(
    id="plan-1",
    scripts=Scripts(build="b.sh", run="r.sh", test="t.sh"),
    files=Files(poc=("pocs/a", "pocs/b"), future_test="f.diff"),
)


def test_the_fake_trace_shows_the_plan_first_and_the_fake_ignores_it() -> None:
    world = FakeWorld(patch=b"diff --git a/x b/x\n")
    recording = Recording(bencher_interpreter(world.session(FULL, "/t"), world))
    result = run(grade(GradeOptions(task=FULL, folder="/t")), recording)
    assert recording.trace[0] == MayRunAhead(fresh_copies=3, patch_check=True, archive=True)
    assert recording.answers[0] is None
    assert isinstance(recording.trace[1], PrepareGrading)
    assert recording.of(MayRunAhead) == [recording.trace[0]]  # said once
    assert result.patch_result.status == "passed"


@given(
    build=st.booleans(),
    pocs=st.integers(0, 3),
    test=st.booleans(),
    hidden=st.booleans(),
)
def test_the_plan_names_one_copy_per_check_that_asks_for_one(
    build: bool, pocs: int, test: bool, hidden: bool
) -> None:
    task = Task(
        id="plan-2",
        scripts=Scripts(
            build="b" if build else None, run="r" if pocs else None, test="t" if test else None
        ),
        files=Files(
            poc=tuple(f"p{i}" for i in range(pocs)), future_test="f.diff" if hidden else None
        ),
    )
    world = FakeWorld(patch=b"diff --git a/x b/x\n")
    recording = Recording(bencher_interpreter(world.session(task, "/t"), world))
    run(grade(GradeOptions(task=task, folder="/t")), recording)
    (said,) = recording.of(MayRunAhead)
    assert said == plan(task)
    assert len(recording.of(FreshCopy)) <= said.fresh_copies


@contextmanager
def _real(root: Path, scenario: Scenario) -> Iterator[tuple[LocalSystem, Any, Path]]:
    """A real grading of `scenario` set up in `root` as every entry point sets one up."""
    made = make_task(root, pocs=scenario.pocs)
    scenario_scripts(made, scenario)
    assert is_successful(realgit.record_baseline(made.source, made.baseline))
    if scenario.changed:
        made.set_value("fixed")
    inputs = load_inputs(made.task, made.source, None)
    held = hold_results(made.results)
    try:
        with grading_setup(inputs, Sources(baseline=made.baseline), held.path) as ready:
            deadline = Deadline.starting(120, time.monotonic)
            local = LocalSystem(ready.places, inputs.runner, deadline=deadline, ahead=True)
            try:
                yield local, inputs, held.path
            finally:
                local.close()
    finally:
        held.release()


def _ignoring(inner: Interpreter) -> Interpreter:
    """`inner`, never told the plan: it is answered here, as the fake answers it."""

    def interpret(effect: Effect[Any]) -> object:
        return None if isinstance(effect, MayRunAhead) else inner(effect)

    return interpret


def _graded(root: Path, scenario: Scenario, *, use_plan: bool) -> EvaluationResult:
    with _real(root, scenario) as (local, inputs, _results):
        task, folder = inputs.task, str(inputs.task_dir)
        system: Interpreter = local if use_plan else _ignoring(local)
        session = BenchSession(task=task, folder=folder)
        deadline = Deadline.starting(120, time.monotonic)
        interpret = bencher_interpreter(session, system, deadline)
        return run(grade(GradeOptions(task=task, folder=folder)), interpret, deadline)


@pytest.mark.slow
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=st.sampled_from(SCENARIOS))
def test_the_verdict_is_the_same_whether_the_plan_is_used_or_ignored(scenario: Scenario) -> None:
    graded = []
    with tempfile.TemporaryDirectory(prefix="ssegrade-plan-") as folder:
        top = Path(folder)
        top.chmod(0o755)
        for use_plan in (True, False):  # in the same folder: the documents name its paths
            (top / "g").mkdir(mode=0o755)
            graded.append(_graded(top / "g", scenario, use_plan=use_plan))
            shutil.rmtree(top / "g")
    used, ignored = graded
    assert used.patch_result == ignored.patch_result
    assert used.runtime_result.error_kind == ignored.runtime_result.error_kind


@pytest.mark.slow
def test_the_archive_child_starts_when_the_plan_says_it_may(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    scenario = SCENARIOS[0]
    with _real(tmp_path, scenario) as (local, inputs, results):
        assert archive_child.take_warm() is None
        local(MayRunAhead(fresh_copies=0, patch_check=False, archive=True))
        warm = archive_child.take_warm()
        assert warm is not None  # started by the effect, before any capture
        archive_child._warm = warm  # left for the archive to hand its job to
        session = BenchSession(task=inputs.task, folder=str(inputs.task_dir))
        prepared = bencher_interpreter(session, local)(PrepareGrading())
        assert is_successful(prepared)  # type: ignore[arg-type]
        assert archive_child.take_warm() is None  # handed its job at the capture
        assert [p for p in results.iterdir() if p.name.startswith(".source.tar.gz")]


@pytest.mark.slow
def test_a_child_started_by_the_plan_ends_with_its_grading_if_never_given_its_job(
    tmp_path: Path,
) -> None:
    """The attack: a grading that ends before its capture (a time limit, an interrupt) must
    not leave its warm child for the next archive of the same process (a daemon, a worker),
    which would take a child begun on another tree as its own."""
    tmp_path.chmod(0o755)
    with _real(tmp_path, SCENARIOS[0]) as (local, _inputs, _results):
        local(MayRunAhead(fresh_copies=0, patch_check=False, archive=True))
    left = archive_child.take_warm()
    if left is not None:
        left.kill()
    assert left is None
