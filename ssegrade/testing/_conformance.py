"""The contract every grading interpreter keeps, as a check any interpreter can be put to.

Pure core, part of the testing kit. A scenario says how each script of a grading ends;
`check_interpreter(make, scenarios)` asks `make` for a grading ready to run each scenario with
the interpreter under test, grades it, and holds what it did to what the fake world does with
the same scenario: the same grade, the same checks run in the same order, every answer of
the type its effect declares, the document written once. The real interpreter, the one
backed by the daemon and the fake itself all pass it; a new interpreter is checked the same
way (see docs/testing.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from ssegrade.internal.bencher import bencher_interpreter
from ssegrade.internal.effects import Bench, Effect, WriteResult
from ssegrade.internal.errors import SsegradeError
from ssegrade.internal.program import GradeOptions, grade
from ssegrade.internal.result import EvaluationResult
from ssegrade.internal.run import Deadline, Interpreter, run
from ssegrade.internal.task import Files, Scripts, Task
from ssegrade.testing._combinators import Checked, Recording
from ssegrade.testing._fake import FakeWorld, Script

__all__ = [
    "SCENARIOS",
    "Conformance",
    "Grading",
    "NonConformance",
    "Scenario",
    "check_interpreter",
]

_CHANGED = b"diff --git a/lib.sh b/lib.sh\n--- a/lib.sh\n+++ b/lib.sh\n@@ -1 +1 @@\n-a\n+b\n"
"""The patch the reference grades when the agent changed its tree (the grade never depends
on what the patch says, only on whether there is one)."""


@dataclass(frozen=True)
class Scenario:
    """How each script of one grading ends, by run label (`build`, `poc-1`, `poc-2`, …,
    `function_test`, `intent_test`; a missing label exits 0 and prints nothing); `pocs`, how
    many PoCs the task has; `changed`, whether the agent changed its tree (else the patch
    is empty)."""

    name: str
    scripts: Mapping[str, Script] = field(default_factory=dict)
    pocs: int = 2
    changed: bool = True

    def task(self, task_id: str = "conformance-1") -> Task:
        """A task of this scenario's shape: a build, a run and a test script, `pocs` PoCs
        (`pocs/poc1.bin`, …) and hidden tests (`future.diff`), as a task folder would name
        them."""
        return Task(
            id=task_id,
            scripts=Scripts(build="scripts/build.sh", run="scripts/run.sh", test="scripts/test.sh"),
            files=Files(
                poc=tuple(f"pocs/poc{n}.bin" for n in range(1, self.pocs + 1)),
                future_test="future.diff",
            ),
        )


SCENARIOS: tuple[Scenario, ...] = (
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
)
"""The scenarios the contract is checked on: every way a check can end that changes the
grade."""


@dataclass
class Grading:
    """One grading ready to run with the interpreter under test: `interpret` answers the
    grading effects (`GradingEffect`) for `options.task` in `options.folder`, within
    `deadline` (none: no limit)."""

    interpret: Interpreter
    options: GradeOptions
    deadline: Deadline | None = None


@dataclass(frozen=True)
class Conformance:
    """What one scenario gave: the interpreter's document and the grading effects it was
    asked (`trace`), and the fake world that graded the same scenario as the reference."""

    scenario: Scenario
    result: EvaluationResult
    trace: tuple[Effect[Any], ...]
    reference: FakeWorld


class NonConformance(SsegradeError, AssertionError):
    """An interpreter broke the contract: `problems` says how, one line each, by scenario."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


Make = Callable[[Scenario], AbstractContextManager[Grading]]
"""Sets up a grading of a scenario, and cleans it up when the grading is over."""


def _benches(trace: Iterable[Effect[Any]]) -> list[tuple[str, str | None]]:
    return [(effect.action, effect.poc) for effect in trace if isinstance(effect, Bench)]


def _reference(
    scenario: Scenario, grading: Grading
) -> tuple[FakeWorld, Recording, EvaluationResult]:
    """The fake world's grading of `scenario`, with the same options and time limit."""
    limit = grading.deadline.seconds if grading.deadline is not None else 3600
    world = FakeWorld(
        patch=_CHANGED if scenario.changed else b"", scripts=dict(scenario.scripts), timeout=limit
    )
    options = grading.options
    deadline = Deadline.starting(limit, world.clock)
    recorded = Recording(
        bencher_interpreter(world.session(options.task, options.folder), world, deadline)
    )
    return world, recorded, run(grade(options), recorded, deadline)


def _differences(result: EvaluationResult, expected: EvaluationResult) -> list[str]:
    theirs, ours = result.model_dump(), expected.model_dump()
    return [
        f"{part}.{key} is {theirs[part].get(key)!r}, the fake's {value!r}"
        for part in ("patch_result", "runtime_result")
        for key, value in ours[part].items()
        if theirs[part].get(key) != value
    ]


def _check_one(make: Make, scenario: Scenario) -> tuple[Conformance | None, list[str]]:
    with make(scenario) as grading:
        checked = Checked(grading.interpret)
        recorded = Recording(checked)
        result: EvaluationResult | Exception
        try:
            result = run(grade(grading.options), recorded, grading.deadline)
        except Exception as exc:  # noqa: BLE001 - an escaped exception breaks the contract
            result = exc
    if isinstance(result, Exception):
        return None, [f"grading raised {type(result).__name__}: {result}"]
    problems = [f"a wrong answer to {line}" for line in checked.wrong]
    pocs = len(grading.options.task.files.poc)
    if pocs != scenario.pocs:
        problems.append(f"the task has {pocs} PoCs, the scenario {scenario.pocs}")
    world, reference, expected = _reference(scenario, grading)
    problems += _differences(result, expected)
    ran, wanted = _benches(recorded.trace), _benches(reference.trace)
    if ran != wanted:
        problems.append(f"the checks run were {ran}, the fake's {wanted}")
    written = [effect.result for effect in recorded.of(WriteResult)]
    if len(written) != 1:
        problems.append(f"the document was written {len(written)} times, not once")
    elif written[0] != result:
        problems.append("the document written is not the one returned")
    return Conformance(scenario, result, tuple(recorded.trace), world), problems


def check_interpreter(
    make: Make, scenarios: Iterable[Scenario] = SCENARIOS
) -> tuple[Conformance, ...]:
    """Grade each scenario with the grading `make` sets up, and hold it to the fake world's
    grading of the same scenario; raise `NonConformance` naming every problem found, or
    return what each scenario gave.

    The contract: grading ends with a document (no exception escapes the program); its
    `patch_result` and `runtime_result` are the fake's; the checks run (the `Bench` effects)
    are the fake's, in the same order; every answer is of the type its effect declares; the
    document is written once, and it is the one returned.
    """
    found: list[Conformance] = []
    problems: list[str] = []
    for scenario in scenarios:
        conformed, wrong = _check_one(make, scenario)
        problems += [f"{scenario.name}: {line}" for line in wrong]
        if conformed is not None:
            found.append(conformed)
    if problems:
        raise NonConformance(problems)
    return tuple(found)
