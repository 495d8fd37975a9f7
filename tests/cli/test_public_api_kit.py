"""The testing kit, `ssegrade.testing`: its public names, its combinators, the fake world's
preview, the contract check failing an interpreter that breaks it, and the rule that the
tests share the kit and the common modules of `tests/support/`, never each other."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure, Success

import ssegrade.testing
from ssegrade import Deadline, Effect, GradeOptions, TimeLimitReached, bencher_interpreter, run
from ssegrade.internal.effects import (
    Bench,
    CaptureError,
    ChangedFiles,
    Notify,
    ReadArtifact,
    ReadDialog,
    ScriptResult,
    SpillLog,
    WriteArtifact,
    WriteResult,
)
from ssegrade.internal.program import SignalArrived
from ssegrade.preview import preview
from ssegrade.protocol import LEVELS
from ssegrade.testing import (
    SCENARIOS,
    Checked,
    Clock,
    FakeWorld,
    Grading,
    NonConformance,
    Recording,
    Scenario,
    Script,
    Scripted,
    Throwing,
    Timed,
    check_interpreter,
    matching,
)

TESTS = Path(__file__).resolve().parents[1]

KIT = [
    "Checked",
    "Clock",
    "Conformance",
    "FakeWorld",
    "Grading",
    "NonConformance",
    "Recording",
    "SCENARIOS",
    "Scenario",
    "Script",
    "Scripted",
    "Throwing",
    "Timed",
    "check_interpreter",
    "matching",
]


def test_the_kit_is_exactly_the_snapshot_and_documented() -> None:
    assert sorted(ssegrade.testing.__all__) == KIT
    for name in ssegrade.testing.__all__:
        value = getattr(ssegrade.testing, name)
        if inspect.isfunction(value) or inspect.isclass(value):
            assert inspect.getdoc(value), f"{name} has no docstring"


def test_the_kit_works_without_hypothesis() -> None:
    code = "import sys, ssegrade.testing; print('hypothesis' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


# ---------------------------------------------------------------------------- combinators


def _echo(effect: Effect[Any]) -> object:
    assert isinstance(effect, Notify)
    if effect.message == "boom":
        raise OSError("boom")
    return effect.message


def test_recording_keeps_answers_and_exceptions_and_raises_them_again() -> None:
    recorded = Recording(_echo)
    assert recorded(Notify("a")) == "a"
    with pytest.raises(OSError, match="boom"):
        recorded(Notify("boom"))
    assert recorded.trace == [Notify("a"), Notify("boom")]
    assert recorded.answers[0] == "a"
    assert isinstance(recorded.answers[1], OSError)
    assert recorded.of(Notify) == recorded.trace
    assert recorded.of(Bench) == []
    assert recorded.steps()[0] == (Notify("a"), "a")


def test_checked_keeps_what_does_not_fit_and_answers_it_all_the_same() -> None:
    checked = Checked(lambda _effect: "noted")
    assert checked(Notify("x")) == "noted"
    assert checked(Bench("build")) == "noted"
    assert checked.answered == 2
    assert [line.split(":")[0] for line in checked.wrong] == ["Notify", "Bench"]


def test_throwing_counts_only_the_effects_it_is_told_to() -> None:
    throwing = Throwing(_echo, {1: TimeLimitReached(5)}, matching(Notify, message="b"))
    assert [throwing(Notify(m)) for m in ("a", "b", "c")] == ["a", "b", "c"]
    with pytest.raises(TimeLimitReached):
        throwing(Notify("b"))
    assert throwing(Notify("b")) == "b"
    assert throwing.seen == 3
    assert [(effect, type(exc)) for effect, exc in throwing.thrown] == [
        (Notify("b"), TimeLimitReached)
    ]


def test_scripted_answers_from_its_table_and_passes_the_rest_on() -> None:
    table: dict[Effect[Any], object] = {
        Bench("build"): ScriptResult(2),
        Bench("intent_test"): KeyError("x"),
    }
    scripted = Scripted(table)
    assert scripted(Bench("build")) == ScriptResult(2)
    with pytest.raises(KeyError):
        scripted(Bench("intent_test"))
    with pytest.raises(LookupError, match="no answer"):
        scripted(Bench("function_test"))
    assert Scripted(table, _echo)(Notify("n")) == "n"


def test_timed_effects_spend_the_deadline_on_the_clock() -> None:
    clock = Clock(50.0)
    deadline = Deadline.starting(10, clock)
    costs = {"a": 4.0, "b": 7.0}
    timed = Recording(Timed(_echo, clock, lambda e: costs.get(str(_echo(e)), 0.0)))

    async def program() -> str:
        try:
            for name in ("a", "b", "c"):
                await Notify(name)
        except TimeLimitReached:
            return "timed out"
        return "done"

    assert run(program(), timed, deadline) == "timed out"
    assert [e.message for e in timed.of(Notify)] == ["a", "b"]
    assert clock() == 61.0
    clock.advance(-61.0)
    assert clock.now == 0.0


# ---------------------------------------------------------------------------- the fake world


def test_the_fake_world_answers_the_preview_given_its_task() -> None:
    scenario = Scenario("second poc", {"poc-2": Script(1, "", "AddressSanitizer: x " * 6000)})
    task = scenario.task()
    world = FakeWorld(task=task, scripts=dict(scenario.scripts))
    found = run(preview(LEVELS[0], task.checks, task.files.poc), world)
    assert (found.passed, found.failed) == (False, "poc")
    assert [(e.action, e.poc) for e in world.trace if isinstance(e, Bench)] == [
        ("build", None),
        ("run_poc", "pocs/poc1.bin"),
        ("run_poc", "pocs/poc2.bin"),
        ("intent_test", None),
    ]
    assert world.script_labels() == ["build", "poc-1", "poc-2", "intent_test"]
    (spilled,) = [e for e in world.trace if isinstance(e, SpillLog)]
    assert world.spilled == {"/logs/test_patch-run_poc-1.log": spilled.text}
    assert "Full log available at /logs/test_patch-run_poc-1.log" in found.text
    assert world.leaks() == Success(None)


def test_a_spill_the_fake_cannot_write_and_a_world_without_its_task() -> None:
    world = FakeWorld(spill_error="disk full")
    assert world(SpillLog("test_patch-build", "log")) == Failure("disk full")
    with pytest.raises(TypeError, match="needs the world's task"):
        world(Bench("build"))


def test_the_fake_world_answers_the_daemons_reads() -> None:
    world = Checked(FakeWorld(changed=b"M\tlib.sh\0", dialog=b'{"role": "user"}\n'))
    world(WriteArtifact("final.patch", b"diff\n"))
    assert world(ReadArtifact("final.patch")) == b"diff\n"
    assert world(ReadArtifact("result.json")) is None
    assert world(ChangedFiles()) == Success(b"M\tlib.sh\0")
    assert world(ReadDialog()) == b'{"role": "user"}\n'
    assert FakeWorld()(ReadDialog()) is None
    broken = Checked(FakeWorld(capture_error="the tree cannot be listed"))
    assert broken(ChangedFiles()) == Failure(CaptureError("the tree cannot be listed"))
    assert world.wrong == broken.wrong == []


# ---------------------------------------------------------------------------- the contract


def _fake(**changes: Any) -> Any:
    """A maker of fake gradings, whose interpreter `changes` can break."""

    @contextmanager
    def make(scenario: Scenario) -> Iterator[Grading]:
        world = FakeWorld(patch=b"x\n" if scenario.changed else b"", scripts=dict(scenario.scripts))
        task = changes.get("task") or scenario.task()
        interpret = bencher_interpreter(world.session(task, "/task"), world)
        yield Grading(changes.get("wrap", lambda i: i)(interpret), GradeOptions(task, "/task"))

    return make


def test_the_fake_keeps_the_contract_on_every_scenario() -> None:
    conformed = check_interpreter(_fake())
    assert [c.scenario for c in conformed] == list(SCENARIOS)
    assert all(c.result == c.reference.result for c in conformed)
    assert [c.result.patch_result.status for c in conformed].count("passed") == 3


def _intent_passes(inner: Any) -> Any:
    def interpret(effect: Effect[Any]) -> object:
        return ScriptResult(0) if effect == Bench("intent_test") else inner(effect)

    return interpret


def _interrupts_the_write(inner: Any) -> Any:
    return Throwing(inner, {0: SignalArrived("SIGTERM")}, matching(WriteResult))


def _skips_the_build(inner: Any) -> Any:
    def interpret(effect: Effect[Any]) -> object:
        return ScriptResult(0) if effect == Bench("build") else inner(effect)

    return interpret


def _breaks(inner: Any) -> Any:
    def interpret(effect: Effect[Any]) -> object:
        if isinstance(effect, WriteResult):
            raise OSError("disk full")
        return inner(effect)

    return interpret


@pytest.mark.parametrize(
    ("wrap", "problem"),
    [
        (_intent_passes, "intent tests fail: patch_result.status is 'passed', the fake's 'failed'"),
        (_interrupts_the_write, "all pass: the document was written 2 times, not once"),
        (_skips_the_build, "build fails: the checks run were [('build', None), ('run_poc'"),
        (
            lambda i: lambda e: "x" if isinstance(e, Notify) else i(e),
            "empty patch: a wrong answer to Notify",
        ),
        (_breaks, "all pass: grading raised OSError: disk full"),
    ],
)
def test_an_interpreter_that_breaks_the_contract_is_named(wrap: Any, problem: str) -> None:
    with pytest.raises(NonConformance) as raised:
        check_interpreter(_fake(wrap=wrap))
    assert any(line.startswith(problem) for line in raised.value.problems), raised.value.problems


@pytest.mark.parametrize("wrap", [Recording, Checked, lambda i: Throwing(i, {})])
def test_wrappers_that_change_no_answer_keep_the_contract(wrap: Any) -> None:
    check_interpreter(_fake(wrap=wrap))


def test_a_task_of_another_shape_is_named() -> None:
    other = Scenario("no pocs", pocs=0).task()
    assert other.files.poc == ()
    with pytest.raises(NonConformance, match="the task has 0 PoCs, the scenario 2"):
        check_interpreter(_fake(task=other), [Scenario("all pass", pocs=2)])


# ---------------------------------------------------------------------------- the tests


def _imported(tree: ast.Module, package: str = "") -> set[str]:
    """The modules `tree` imports, and each name it imports from one; a relative import
    resolved from `package`, the importing module's."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join(parts) if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}
    return found


def test_no_test_module_imports_another() -> None:
    """The tests share the kit (`ssegrade.testing`) and common modules, never each other."""
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        package = ".".join(path.relative_to(TESTS.parent).parent.parts)
        imported = _imported(ast.parse(path.read_text()), package)
        tests = {name for name in imported if name.split(".")[-1].startswith("test_")}
        if any(name.startswith("tests.") for name in tests):
            offenders.append(f"{path.relative_to(TESTS)}: {sorted(tests)}")
    assert offenders == []


def test_the_rule_on_test_imports_finds_them() -> None:
    tree = ast.parse("from tests.test_contract import SCENARIOS\nimport tests.test_daemon\n")
    assert {"tests.test_contract", "tests.test_daemon"} <= _imported(tree)


def test_the_rule_resolves_relative_imports_in_a_wing() -> None:
    tree = ast.parse("from .test_contract import SCENARIOS\nfrom ..real import test_capture\n")
    assert {"tests.core.test_contract", "tests.real.test_capture"} <= _imported(tree, "tests.core")
