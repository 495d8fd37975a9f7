"""Contract suite: the same scenarios graded by the fake world and by the real interpreter.

A scenario says how each script ends; it is realised once as `FakeWorld` data and once as real
shell scripts in a real task folder. Both must produce the same grade and run the same scripts
in the same order, so the fake cannot drift from reality.
"""

from __future__ import annotations

import shlex
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from returns.pipeline import is_successful

from interpreters.fake import FakeWorld, Script
from interpreters.real import git as realgit
from interpreters.real.files import remove_tree
from interpreters.real.local import LocalSystem, Places
from interpreters.real.runner import resolve_runner
from interpreters.taskfolder import load_task
from ssegrade import (
    BenchSession,
    Effect,
    EvaluationResult,
    GradeOptions,
    RunScript,
    Task,
    bencher_interpreter,
    grade,
    run,
)
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
        local = LocalSystem(places, runner, timeout=120, say=lambda _: None, ahead=ahead)
        system = Recording(local)
        session = BenchSession(task=task, folder=str(made.task))
        options = GradeOptions(task=task, folder=str(made.task), timeout=120)
        try:
            result = run(grade(options), bencher_interpreter(session, system))
        finally:
            local.close()
        if ahead:  # the archive is whole before result.json, and nothing is left behind
            assert (made.results / "source.tar.gz").is_file()
            assert not any((scratch / "work" / "private").iterdir())
        return result, _labels(system.trace)
    finally:
        remove_tree(scratch)


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
    fake = world.grade(task, folder=str(made.task))

    assert real.patch_result == fake.patch_result
    assert real.runtime_result == fake.runtime_result
    assert real_labels == world.script_labels()
