"""The checks: one table of everything the core says about each check.

Pure core. A task has up to four checks (SPEC §2). Each row of `CHECKS` says, for one check,
what the rest of ssegrade needs: the bencher action that runs it (`Bench`, the daemon), the
`error_msg` of its failure and its `patch_result` fields (the verdict), its place in the order
`test_patch` runs and lists checks and in the precedence of its headline, the highest
difficulty level that lets the agent run it (the gate of SPEC §9), whether it proves the fix
(task verification), and its names in texts and in the report. The rows are in grading order
(SPEC §3), which is also the order of the report's columns and of the daemon's lists.

Everything that depends on a check reads it here, through the functions below (they read
`CHECKS` when called): the verdict, the grading program's order, the daemon protocol, the
difficulty levels, the preview, task verification and the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "CHECKS",
    "Action",
    "Check",
    "CheckSpec",
    "grading_order",
    "preview_order",
    "preview_precedence",
    "scripts_after",
    "spec",
    "spec_of_action",
]

Check = Literal["build", "poc", "function_test", "intent_test"]
"""A check a task may have."""

Action = Literal["build", "run_poc", "function_test", "intent_test"]
"""A bencher action: what runs one check (one PoC for `run_poc`)."""


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """One check, as every part of ssegrade names and orders it.

    `failure` is the `error_msg` of its failure (`{poc}` stands for the PoC's absolute path);
    `fields` are its `patch_result` fields in document order, the last of which is null when
    the check did not run. `preview_rank` and `precedence_rank` place it in the order
    `test_patch` runs and lists the checks and in the precedence of a failed check in its
    headline (SPEC §10); `gate` is the highest difficulty level at which the agent may run it
    (SPEC §9). `proves_fix` says it passes only once the bug is fixed (it fails on the unfixed
    project). In the report, `label` names it in documents (the field of a row) and `title`
    heads its columns (`short_title` where the terminal is narrow). `text` names it in
    sentences (`test_patch`, task verification); `reason` is the headline of a `test_patch`
    that it failed.
    """

    name: Check
    action: Action
    failure: str
    fields: tuple[str, ...]
    preview_rank: int
    precedence_rank: int
    gate: int
    proves_fix: bool
    label: str
    title: str
    short_title: str
    text: str
    reason: str

    def failure_message(self, poc: str | None = None) -> str:
        """The `error_msg` of this check's failure; `poc` is the failing PoC's absolute path.

        >>> spec("poc").failure_message("/ssebench/pocs/a.bin")
        'PoC failed: /ssebench/pocs/a.bin'
        """
        return self.failure.format(poc=poc)


CHECKS: tuple[CheckSpec, ...] = (
    CheckSpec(
        name="build",
        action="build",
        failure="Build failed",
        fields=("build_success",),
        preview_rank=0,
        precedence_rank=0,
        gate=3,
        proves_fix=False,
        label="build",
        title="Build",
        short_title="Build",
        text="build",
        reason=(
            "The project does not build with your patch. "
            "Please reassess your patch: no other check can run until the build succeeds."
        ),
    ),
    CheckSpec(
        name="poc",
        action="run_poc",
        failure="PoC failed: {poc}",
        fields=("pov_passed", "pov_total"),
        preview_rank=1,
        precedence_rank=2,
        gate=1,
        proves_fix=True,
        label="poc",
        title="PoCs",
        short_title="PoCs",
        text="PoCs",
        reason=(
            "At least one proof of concept still triggers the vulnerability. "
            "Please reassess whether your patch fixes it."
        ),
    ),
    CheckSpec(
        name="function_test",
        action="function_test",
        failure="Function test failed",
        fields=("func_test_success",),
        preview_rank=3,
        precedence_rank=1,
        gate=2,
        proves_fix=False,
        label="func",
        title="Functional",
        short_title="Func",
        text="functional tests",
        reason=(
            "The functional tests failed, so your patch may break existing behaviour. "
            "Please reassess your patch."
        ),
    ),
    CheckSpec(
        name="intent_test",
        action="intent_test",
        failure="Intent test failed",
        fields=("intent_test_success",),
        preview_rank=2,
        precedence_rank=3,
        gate=0,
        proves_fix=True,
        label="intent",
        title="Intent",
        short_title="Intent",
        text="intent tests",
        reason=(
            "The intent tests failed, so your patch does not behave the way the fix is expected "
            "to. Please reassess your patch."
        ),
    ),
)
"""The checks, in grading order (SPEC §3)."""


def grading_order() -> tuple[CheckSpec, ...]:
    """The checks in the order grading runs them, the report shows them and the daemon lists
    them.

    >>> [check.name for check in grading_order()]
    ['build', 'poc', 'function_test', 'intent_test']
    """
    return CHECKS


def scripts_after(has: frozenset[Check], pocs: int, label: str) -> int:
    """How many task scripts grading runs after the run labelled `label` (`build`, `poc-N`
    from 1, `function_test`, `intent_test`) for a task with the checks `has` and `pocs` PoCs;
    0 for a label it does not run.

    >>> scripts_after(frozenset({"build", "poc", "intent_test"}), 2, "poc-1")
    2
    >>> scripts_after(frozenset({"build"}), 0, "intent_test")
    0
    """
    order = ["build"] if "build" in has else []
    order += [f"poc-{n}" for n in range(1, pocs + 1)] if "poc" in has else []
    order += [name for name in ("function_test", "intent_test") if name in has]
    return len(order) - order.index(label) - 1 if label in order else 0


def spec(check: Check) -> CheckSpec:
    """The row of one check.

    >>> spec("function_test").failure_message()
    'Function test failed'
    """
    for row in CHECKS:
        if row.name == check:
            return row
    raise KeyError(check)


def spec_of_action(action: Action) -> CheckSpec:
    """The check a bencher action runs.

    >>> spec_of_action("run_poc").name
    'poc'
    """
    for row in CHECKS:
        if row.action == action:
            return row
    raise KeyError(action)


def preview_order() -> tuple[CheckSpec, ...]:
    """The order `test_patch` runs the checks in, which is also the order of its lines.

    >>> [check.text for check in preview_order()]
    ['build', 'PoCs', 'intent tests', 'functional tests']
    """
    return tuple(sorted(CHECKS, key=lambda row: row.preview_rank))


def preview_precedence() -> tuple[CheckSpec, ...]:
    """When several checks failed, `test_patch` speaks of the first one here.

    >>> [check.name for check in preview_precedence()]
    ['build', 'function_test', 'poc', 'intent_test']
    """
    return tuple(sorted(CHECKS, key=lambda row: row.precedence_rank))
