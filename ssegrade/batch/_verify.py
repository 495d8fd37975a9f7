"""Task verification, the pure part: which problems a set of control runs shows (SPEC §13).

Pure core. A task is verified by grading two controls, each possibly several times: the
`empty` patch (the unfixed project) and the task's `reference` patch. `judge` compares what
every run observed with what each control must show and names each problem in one sentence;
running the controls is `interpreters.batch`'s job.

What each control must show, for the checks the task has:

| control | apply | build | each PoC | function_test | intent_test | grading |
|---|---|---|---|---|---|---|
| `empty` | — | passes | fails (still triggers) | passes | fails | finishes |
| `reference` | applies | passes | passes | passes | passes | finishes |

(The checks that fail on the unfixed project are those that prove the fix, `proves_fix` in
`ssegrade.internal.checks`.)

A check whose outcome is the same in every repeat of a control but not the expected one is a
problem (the task is `broken`); a check whose outcome differs between repeats is `flaky`,
named with its counts. Broken wins over flaky: a task with both is `broken`, and both lists
are kept. Each problem and each flaky check comes with its evidence: the run that shows it
and the log file of the failing check there (`Evidence`), which the interpreter quotes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, cast

from ssegrade.internal.bencher import task_path
from ssegrade.internal.checks import Check, grading_order, spec
from ssegrade.internal.effects import CheckRecord
from ssegrade.internal.result import PatchResult
from ssegrade.internal.task import Task

__all__ = [
    "CONTROLS",
    "Control",
    "ControlRun",
    "Evidence",
    "Verdict",
    "Verification",
    "expected_outcomes",
    "judge",
    "observed_outcomes",
]

Control = Literal["empty", "reference"]
Verdict = Literal["ok", "broken", "flaky"]

CONTROLS: tuple[Control, ...] = ("empty", "reference")
"""The controls, in the order they are graded and reported."""

_APPLY = "apply"
_FINISHED = "finished"
_WHERE: dict[Control, str] = {
    "empty": "on the unfixed project",
    "reference": "with the reference patch",
}


@dataclass(frozen=True, slots=True)
class ControlRun:
    """One graded run of a control: its number (from 1), its grade and its `checks.jsonl`."""

    control: Control
    n: int
    patch: PatchResult
    checks: tuple[CheckRecord, ...] = ()


@dataclass(frozen=True, slots=True)
class Evidence:
    """Where a problem or a flaky check shows: its sentence, the run (control, number), the
    check that failed there (`apply` for the reference patch, `grading` for a grading that
    ended in error, else the check's name) and that check's log file (None: it left none)."""

    about: str
    control: Control
    n: int
    check: str
    log: str | None


@dataclass(frozen=True, slots=True)
class Verification:
    """The verdict on a task, one sentence per problem and per flaky check, and the evidence
    of each (in the same order: the problems', then the flaky checks')."""

    verdict: Verdict
    problems: tuple[str, ...] = ()
    flaky: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()


def _poc_key(poc: str) -> str:
    return f"poc:{poc}"


def expected_outcomes(task: Task, control: Control) -> dict[str, bool]:
    """What each observable outcome must be for `control`: True = passes (a PoC passes when
    it no longer triggers), for the checks the task has, plus `finished` and, with the
    reference patch, `apply`.

    >>> from ssegrade.internal.task import Scripts
    >>> expected_outcomes(Task(id="t", scripts=Scripts(build="b", test="t")), "empty")
    {'finished': True, 'build': True, 'function_test': True}
    """
    fixed = control == "reference"
    has = task.checks
    want: dict[str, bool] = {_FINISHED: True}
    if fixed:
        want[_APPLY] = True
    for check in grading_order():
        if check.name not in has:
            continue
        outcome = fixed if check.proves_fix else True
        if check.name == "poc":
            want.update((_poc_key(poc), outcome) for poc in task.files.poc)
        else:
            want[check.name] = outcome
    return want


def observed_outcomes(task: Task, folder: str, run: ControlRun) -> dict[str, bool | None]:
    """What one run showed for each outcome `expected_outcomes` names; None: it did not run.

    PoCs are read from the run's check records (matched by the PoC's path in `folder`), or,
    when the grade says all or none of them passed, from the grade alone. A grading did not
    finish when it is `error` or its records hold an `end` (a failed check decides the grade
    of a grading that did not finish).
    """
    patch = run.patch
    ended = any(r.name == "end" for r in run.checks)  # a failed grade may not have finished
    seen: dict[str, bool | None] = {
        _FINISHED: patch.status != "error" and not ended,
        _APPLY: patch.error_msg != "Patch apply failed",
    }
    for check in grading_order():
        if check.name != "poc":
            seen[check.name] = getattr(patch, check.fields[0])
    ran = {r.poc: r.passed for r in run.checks if r.name == "poc" and r.poc is not None}
    for poc in task.files.poc:
        outcome = ran.get(task_path(folder, poc))
        if outcome is None and patch.pov_total:
            if patch.pov_passed == 0:
                outcome = False
            elif patch.pov_passed == patch.pov_total:
                outcome = True
        seen[_poc_key(poc)] = outcome
    return seen


def _name(key: str) -> str:
    return f"PoC {key.removeprefix('poc:')}" if key.startswith("poc:") else key


def _problem(key: str, control: Control, seen: bool | None, error: str | None) -> str:
    where = _WHERE[control]
    if key == _FINISHED:
        return f"grading {where} ended in error: {error or 'no message'}"
    if key == _APPLY:
        return "reference patch does not apply"
    if seen is None:
        return f"{_name(key)} did not run {where}"
    if key.startswith("poc:"):
        verb = "does not trigger" if seen else "still triggers"
        return f"{_name(key)} {verb} {where}"
    what = f"the {spec(cast(Check, key)).text}"
    if control == "reference":
        return f"reference patch fails {what}"
    verb = ("passes" if seen else "fails") if key == "build" else ("pass" if seen else "fail")
    return f"{what} {verb} {where}"


def _flaky(key: str, control: Control, seen: Sequence[bool | None]) -> str:
    count, of, where = sum(1 for s in seen if s), len(seen), _WHERE[control]
    if key == _FINISHED:
        return f"grading finished without error {count} of {of} times {where}"
    if key == _APPLY:
        return f"the reference patch applied {count} of {of} times"
    verb = "did not trigger" if key.startswith("poc:") and control == "empty" else "passed"
    return f"{_name(key)} {verb} {count} of {of} {where}"


def _witness(task: Task, folder: str, key: str, about: str, run: ControlRun) -> Evidence:
    """The evidence of `about` (an outcome `key`) in `run`: the check's record there."""
    records = run.checks
    if key == _FINISHED:  # the check that was running when grading stopped, if any
        checks = [r for r in records if r.name not in ("end", "guard")]
        found = checks[-1] if checks else None
        return Evidence(about, run.control, run.n, "grading", found.log_file if found else None)
    if key == _APPLY:
        name, poc = "prepare", None
    elif key.startswith("poc:"):
        name, poc = "poc", task_path(folder, key.removeprefix("poc:"))
    else:
        name, poc = key, None
    found = next((r for r in records if r.name == name and r.poc == poc), None)
    check = "apply" if key == _APPLY else "poc" if poc is not None else key
    return Evidence(about, run.control, run.n, check, found.log_file if found else None)


def judge(
    task: Task, folder: str, runs: Sequence[ControlRun], *, has_reference: bool = True
) -> Verification:
    """Decide whether a task tells a fix from no fix, from its control runs (SPEC §13).

    `folder` is the task folder as grading saw it (PoC records are matched through it);
    `has_reference` is False for a task without `files.patch`, which is `broken` whatever its
    runs show. A control without runs is not judged.

    >>> from ssegrade.internal.task import Scripts
    >>> task = Task(id="t", scripts=Scripts(test="t.sh"))
    >>> ok = PatchResult(status="passed", func_test_success=True)
    >>> judge(task, "/t", [ControlRun("empty", 1, ok), ControlRun("reference", 1, ok)]).verdict
    'ok'
    >>> bad = PatchResult(status="failed", func_test_success=False)
    >>> judge(task, "/t", [ControlRun("empty", 1, ok), ControlRun("reference", 1, bad)]).problems
    ('reference patch fails the functional tests',)
    """
    problems: list[str] = [] if has_reference else ["the task has no reference patch"]
    flaky: list[str] = []
    shown: dict[str, Evidence] = {}
    for control in CONTROLS:
        mine = sorted((r for r in runs if r.control == control), key=lambda r: r.n)
        if not mine:
            continue
        want = expected_outcomes(task, control)
        seen = [observed_outcomes(task, folder, r) for r in mine]
        found: list[str] = []
        not_run: list[str] = []
        for key, expected in want.items():
            values = [s[key] for s in seen]
            if any(v != values[0] for v in values):
                about = _flaky(key, control, values)
                flaky.append(about)
                bad = next(i for i, v in enumerate(values) if v != expected)
                shown[about] = _witness(task, folder, key, about, mine[bad])
            elif values[0] != expected:
                error = next((r.patch.error_msg for r in mine if r.patch.error_msg), None)
                target = not_run if values[0] is None else found
                about = _problem(key, control, values[0], error)
                target.append(about)
                shown[about] = _witness(task, folder, key, about, mine[0])
        # A check that did not run because an earlier one stopped grading, or that failed
        # because the patch did not apply, is not a problem of its own: the cause is named.
        apply_failed = _problem(_APPLY, control, False, None)
        problems += [apply_failed] if apply_failed in found else found or not_run
    verdict: Verdict = "broken" if problems else "flaky" if flaky else "ok"
    evidence = tuple(shown[about] for about in (*problems, *flaky) if about in shown)
    return Verification(verdict, tuple(problems), tuple(flaky), evidence)
