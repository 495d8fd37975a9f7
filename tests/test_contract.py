"""Contract suite: the same scenarios graded by the fake world and by the real interpreter.

A scenario says how each script ends; it is realised once as `FakeWorld` data and once as real
shell scripts in a real task folder. Both must produce the same grade and run the same scripts
in the same order, so the fake cannot drift from reality. Every answer either interpreter
gives, at both layers, is checked against the answer type its effect declares (`Checked`).
"""

from __future__ import annotations

import shlex
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import ValidationError
from returns.pipeline import is_successful
from returns.result import Failure, Success

from interpreters.real import git as realgit
from interpreters.real.files import remove_tree
from interpreters.real.local import LocalSystem, Places
from interpreters.real.runner import resolve_runner
from interpreters.taskfolder import load_task
from ssegrade import (
    Archive,
    Bench,
    BenchSession,
    CaptureTree,
    Deadline,
    Effect,
    EvaluationResult,
    FreshCopy,
    GradeOptions,
    GradingEffect,
    Notify,
    Prepared,
    PrepareGrading,
    RunScript,
    ScriptResult,
    Staged,
    StageFiles,
    SystemEffect,
    Task,
    Workspace,
    bencher_interpreter,
    grade,
    run,
)
from ssegrade.testing import FakeWorld, Script
from ssegrade.trace import check_answer
from tests.realtask import RealTask, make_task

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Scenario:
    """How each script ends, by run label; a missing label exits 0 silently."""

    name: str
    scripts: dict[str, Script] = field(default_factory=dict)
    pocs: int = 2
    changed: bool = True


SCENARIOS = [
    Scenario("all pass"),
    Scenario("empty patch", changed=False),
    Scenario("build fails", {"build": Script(2, "compiling", "error: x")}),
    Scenario("second poc triggers", {"poc-2": Script(1, "", "AddressSanitizer: overflow")}),
    Scenario("both pocs trigger", {"poc-1": Script(1, "a", ""), "poc-2": Script(7, "", "b")}),
    Scenario("functional tests fail", {"function_test": Script(1, "FAIL: test_x", "")}),
    Scenario("intent tests fail", {"intent_test": Script(1, "", "expected fixed")}),
    Scenario(
        "everything after build fails",
        {"poc-1": Script(1), "function_test": Script(1), "intent_test": Script(1)},
    ),
    Scenario("no pocs", pocs=0),
]


def _script_body(kind: str, spec: dict[str, Script]) -> str:
    def branch(label: str) -> str:
        s = spec.get(label, Script())
        out = f"printf %s {shlex.quote(s.stdout)}; " if s.stdout else ""
        err = f"printf %s {shlex.quote(s.stderr)} >&2; " if s.stderr else ""
        return f"{out}{err}exit {s.code}"

    if kind == "test":
        intent, function = branch("intent_test"), branch("function_test")
        return f"#!/bin/sh\nif [ -f tests/intent.sh ]; then {intent}; fi\n{function}\n"
    if kind == "run":
        cases = " ".join(f"poc{i}.bin) {branch(f'poc-{i}')};;" for i in range(1, 10))
        return f'#!/bin/sh\ncase "$(basename "$1")" in {cases} esac\n'
    return f"#!/bin/sh\n{branch(kind)}\n"


@dataclass
class Recording:
    """Wraps an interpreter and remembers the effects it answered."""

    inner: Any
    trace: list[Effect[Any]] = field(default_factory=list)

    def __call__(self, effect: Effect[Any]) -> object:
        self.trace.append(effect)
        return self.inner(effect)


@dataclass
class Checked:
    """Wraps an interpreter and checks every answer it gives against the answer type the
    effect declares (`Effect[A]`); what does not fit is kept in `wrong`, not thrown into the
    program (which would turn it into an `error` grade)."""

    inner: Any
    answered: int = 0
    wrong: list[str] = field(default_factory=list)

    def __call__(self, effect: Effect[Any]) -> object:
        answer = self.inner(effect)
        self.answered += 1
        try:
            check_answer(effect, answer)
        except ValidationError as exc:
            self.wrong.append(f"{type(effect).__name__}: {exc.errors()[0]}")
        return answer


def _labels(trace: list[Effect[Any]]) -> list[str]:
    return [e.label for e in trace if isinstance(e, RunScript)]


def _grade_real(
    made: RealTask, task: Task, base: realgit.Baseline, *, ahead: bool
) -> tuple[EvaluationResult, list[str]]:
    scratch = Path(tempfile.mkdtemp(prefix="ssegrade-contract-"))
    scratch.chmod(0o711)
    try:
        repo = scratch / "repo"
        assert is_successful(realgit.checkout_baseline(base, repo))
        places = Places(made.task, made.source, base, repo, made.results, scratch / "work")
        runner = resolve_runner(None).unwrap()
        deadline = Deadline.starting(120, time.monotonic)
        local = LocalSystem(places, runner, deadline=deadline, say=lambda _: None, ahead=ahead)
        real = Checked(local)
        system = Recording(real)
        session = BenchSession(task=task, folder=str(made.task))
        options = GradeOptions(task=task, folder=str(made.task), timeout=120)
        graded = Checked(bencher_interpreter(session, system, deadline))
        try:
            result = run(grade(options), graded, deadline)
        finally:
            local.close()
        _all_fit(real, graded)
        if ahead:  # the archive is whole before result.json, and nothing is left behind
            assert (made.results / "source.tar.gz").is_file()
            assert not any((scratch / "work" / "private").iterdir())
        return result, _labels(system.trace)
    finally:
        remove_tree(scratch)


def _all_fit(system: Checked, graded: Checked) -> None:
    assert system.answered > 0
    assert graded.answered > 0
    assert system.wrong == []
    assert graded.wrong == []


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ssegrade-contract-") as folder:
        Path(folder).chmod(0o755)
        yield Path(folder)


@pytest.mark.parametrize("ahead", [False, True], ids=["in-order", "ahead"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_fake_and_real_agree(scenario: Scenario, workdir: Path, *, ahead: bool) -> None:
    made = make_task(workdir, pocs=scenario.pocs)
    for kind, name in (("build", "build.sh"), ("run", "run.sh"), ("test", "test.sh")):
        made.script(name, _script_body(kind, scenario.scripts))
    task = load_task(made.task).unwrap()
    base = realgit.record_baseline(made.source, made.baseline)
    assert is_successful(base), base
    if scenario.changed:
        made.set_value("fixed")
    real, real_labels = _grade_real(made, task, base.unwrap(), ahead=ahead)

    patch = (made.results / "final.patch").read_bytes()
    world = FakeWorld(patch=patch, scripts=dict(scenario.scripts))
    fake_system = Checked(world)
    fake_graded = Checked(bencher_interpreter(world.session(task, str(made.task)), fake_system))
    options = GradeOptions(task=task, folder=str(made.task), timeout=world.timeout)
    fake = run(grade(options), fake_graded)
    _all_fit(fake_system, fake_graded)

    assert real.patch_result == fake.patch_result
    assert real.runtime_result == fake.runtime_result
    assert real_labels == world.script_labels()


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
