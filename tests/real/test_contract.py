"""Contract suite: the real interpreter, and the fake world itself, keep the contract that
`ssegrade.testing.check_interpreter` checks, on every scenario of `SCENARIOS`.

A scenario says how each script ends; it is realised as real shell scripts in a real task
folder, set up by `grading_setup` as every entry point sets a grading up, graded by
`LocalSystem` (in order and working ahead), and held to the fake world's grading of the same
scenario: the same grade, the same checks in the same order, every answer of its effect's
type. Here the answers of the system layer below are checked too, and the
scripts the real interpreter ran must be the fake's, in the same order.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import ValidationError
from returns.pipeline import is_successful
from returns.result import Failure, Success

from interpreters.app.setup import Sources, grading_setup, hold_results, load_inputs
from interpreters.real import git as realgit
from interpreters.real.local import LocalSystem
from ssegrade import (
    BenchSession,
    Deadline,
    Effect,
    GradeOptions,
    GradingEffect,
    bencher_interpreter,
)
from ssegrade.internal.effects import (
    Archive,
    Bench,
    CaptureTree,
    FreshCopy,
    Notify,
    Prepared,
    PrepareGrading,
    RunScript,
    ScriptResult,
    Staged,
    StageFiles,
    SystemEffect,
    Workspace,
)
from ssegrade.testing import (
    SCENARIOS,
    Checked,
    FakeWorld,
    Grading,
    Recording,
    Scenario,
    check_interpreter,
)
from ssegrade.trace import check_answer
from tests.support.realtask import make_task, scenario_scripts

pytestmark = pytest.mark.slow


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ssegrade-contract-") as folder:
        Path(folder).chmod(0o755)
        yield Path(folder)


def _all_fit(system: Checked) -> None:
    assert system.answered > 0
    assert system.wrong == []


@pytest.mark.parametrize("ahead", [False, True], ids=["in-order", "ahead"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_real_interpreter_keeps_the_contract(
    scenario: Scenario, workdir: Path, *, ahead: bool
) -> None:
    ran: list[str] = []

    @contextmanager
    def real(scenario: Scenario) -> Iterator[Grading]:
        made = make_task(workdir, pocs=scenario.pocs)
        scenario_scripts(made, scenario)
        recorded = realgit.record_baseline(made.source, made.baseline)
        assert is_successful(recorded), recorded
        if scenario.changed:
            made.set_value("fixed")
        inputs = load_inputs(made.task, made.source, None)
        held = hold_results(made.results)
        try:  # set up as every entry point sets a grading up
            with grading_setup(inputs, Sources(baseline=made.baseline), held.path) as ready:
                task, folder = inputs.task, str(inputs.task_dir)
                deadline = Deadline.starting(120, time.monotonic)
                local = LocalSystem(ready.places, inputs.runner, deadline=deadline, ahead=ahead)
                checked = Checked(local)
                system = Recording(checked)
                session = BenchSession(task=task, folder=folder)
                options = GradeOptions(task=task, folder=folder)
                try:
                    yield Grading(bencher_interpreter(session, system, deadline), options, deadline)
                finally:
                    local.close()
                _all_fit(checked)
                ran.extend(effect.label for effect in system.of(RunScript))
                if ahead:  # the archive is whole before result.json, and nothing is left behind
                    assert (held.path / "source.tar.gz").is_file()
                    assert not any((ready.places.scratch / "private").iterdir())
        finally:
            held.release()

    (conformed,) = check_interpreter(real, [scenario])
    assert ran == conformed.reference.script_labels()


def test_the_fake_world_keeps_the_contract() -> None:
    checked: list[Checked] = []

    @contextmanager
    def fake(scenario: Scenario) -> Iterator[Grading]:
        world = FakeWorld(patch=b"x\n" if scenario.changed else b"", scripts=dict(scenario.scripts))
        task = scenario.task()
        system = Checked(world)
        checked.append(system)
        interpret = bencher_interpreter(world.session(task, "/task"), system)
        yield Grading(interpret, GradeOptions(task=task, folder="/task"))

    check_interpreter(fake)
    assert len(checked) == len(SCENARIOS)
    for system in checked:
        _all_fit(system)


WRONG: list[tuple[Effect[Any], object]] = [
    (PrepareGrading(), Prepared(1, empty=False)),
    (PrepareGrading(), Success(ScriptResult(0))),
    (Bench("build"), Success(ScriptResult(0))),
    (Bench("build"), ScriptResult(code="0")),  # type: ignore[arg-type]
    (Archive(), None),
    (Archive(), Failure("disk full")),
    (Notify("x"), "noted"),
    (FreshCopy(), "/scratch/copy"),
    (StageFiles(()), Staged("/s", ["/s/0"])),  # type: ignore[arg-type]
    (CaptureTree(), Success(b"patch")),
    (RunScript("s", (), Workspace("/w"), "build"), ScriptResult(0, seconds="1")),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("effect", "answer"), WRONG, ids=[repr(a) for _, a in WRONG])
def test_an_answer_of_the_wrong_type_is_caught(effect: Effect[Any], answer: object) -> None:
    checked = Checked(lambda _effect: answer)
    assert checked(effect) is answer
    assert checked.answered == 1
    assert len(checked.wrong) == 1
    assert checked.wrong[0].startswith(f"{type(effect).__name__}: ")


def test_every_effect_declares_a_checkable_answer() -> None:
    for effect in {*get_args(GradingEffect), *get_args(SystemEffect)}:
        with pytest.raises(ValidationError):
            check_answer(effect.__new__(effect), object())
