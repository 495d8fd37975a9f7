"""The patch guard's step of the grading program: observe, examine, write `guard.json`.

Pure core. `guard_step` runs after `result.json` is written, so nothing it does can change or
delay the verdict: it asks the interpreter for the facts (`ObserveGuard`, skipped when grading
did not finish: the time limit is spent or it was interrupted), applies the guard's rules
(`ssegrade.guard`) and writes the report (`WriteGuard`). Whatever fails in it becomes a note.
"""

from __future__ import annotations

from ssegrade.effects import Notify, ObserveGuard, WriteGuard
from ssegrade.guard import GuardFacts, GuardReport, guard_report
from ssegrade.task import Task

__all__ = ["guard_step"]


async def guard_step(task: Task, patch: bytes | None, *, observe: bool) -> GuardReport | None:
    """Examine the graded `patch` (None: none was prepared) and write `guard.json`; the report
    written, or None when it could not be. `observe`: ask the interpreter for its facts."""
    facts: GuardFacts | None = None
    if observe and patch is not None:
        try:
            facts = await ObserveGuard()
        except Exception as exc:  # noqa: BLE001 - advisory: the patch alone is still examined
            await Notify(f"the patch guard observed nothing: {exc}")
    try:
        report = guard_report(patch, task, facts)
    except Exception as exc:  # noqa: BLE001 - advisory: never a grade change
        await Notify(f"the patch guard failed: {type(exc).__name__}: {exc}")
        return None
    try:
        await WriteGuard(report)
    except Exception as exc:  # noqa: BLE001 - advisory: a time limit or an interrupt too
        await Notify(f"guard.json not written: {exc}")
        return None
    return report
