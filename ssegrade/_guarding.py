"""The patch guard's step of the grading program: re-run, observe, examine, write `guard.json`.

Pure core. `guard_step` runs after `result.json` is written, so nothing it does can change or
delay the verdict. When grading finished (the time limit is not spent, it was not
interrupted), it runs each PoC that passed once more with the options pinned (`RerunPoc`,
`ssegrade.guard._pinning`; each a `guard` line of `checks.jsonl`, not a check) and asks the
interpreter for the facts (`ObserveGuard`); then it applies the guard's rules
(`ssegrade.guard`) and writes the report (`WriteGuard`). Whatever fails in it becomes a note.
"""

from __future__ import annotations

from ssegrade.guard import GuardFacts, GuardReport, guard_report
from ssegrade.guard._facts import Rerun
from ssegrade.guard._pinning import RERUN_LEAST, RERUN_SECONDS, pins
from ssegrade.internal.answers import CheckRecord, Containment
from ssegrade.internal.effects import CheckFinished, Notify, ObserveGuard, RerunPoc, WriteGuard
from ssegrade.internal.task import Task

__all__ = ["guard_step", "rerun_pocs"]


def _record(rerun: Rerun, path: str, containment: Containment | None) -> CheckRecord:
    """The `guard` line of `checks.jsonl` for one re-run (a guard run, not a check)."""
    return CheckRecord(
        name="guard",
        poc=path,
        exit_code=rerun.code,
        seconds=rerun.seconds,
        killed=rerun.killed,
        log_file=rerun.log_file,
        passed=rerun.code == 0,
        containment=containment,
    )


async def rerun_pocs(task: Task, passed: tuple[tuple[str, str], ...]) -> tuple[Rerun, ...]:
    """Run each PoC that passed in the grade (`passed`: config path, absolute path) once more
    with the options `task`'s sanitizer and language call for; nothing when they call for
    none. A re-run the interpreter refuses, or that it skips for lack of time, is kept with
    why (`Rerun.skipped`); a refusal stops the others."""
    pin = pins(task.sanitizer, task.language)
    if pin is None:
        return ()
    reruns: list[Rerun] = []
    for poc, path in passed:
        try:
            result = await RerunPoc(poc, pin.env, RERUN_SECONDS, RERUN_LEAST)
        except Exception as exc:  # noqa: BLE001 - advisory: an interpreter may refuse it
            reruns.append(Rerun(poc, code=-1, skipped=f"refused: {exc}"))
            break
        if result.not_started is not None:
            reruns.append(Rerun(poc, code=-1, skipped=result.not_started))
            continue
        rerun = Rerun(
            poc,
            code=result.code,
            output=f"{result.stdout}\n{result.stderr}",
            killed=result.killed,
            seconds=result.seconds,
            log_file=result.log_file,
        )
        reruns.append(rerun)
        try:
            await CheckFinished(_record(rerun, path, result.containment))
        except Exception as exc:  # noqa: BLE001 - a full disk must not lose the re-run
            await Notify(f"the pinned re-run of {poc} not recorded: {exc}")
    return tuple(reruns)


async def guard_step(
    task: Task,
    patch: bytes | None,
    *,
    observe: bool,
    passed: tuple[tuple[str, str], ...] = (),
) -> GuardReport | None:
    """Examine the graded `patch` (None: none was prepared) and write `guard.json`; the report
    written, or None when it could not be. `observe`: ask the interpreter for its facts and
    re-run the PoCs that `passed` (config path, absolute path) with the options pinned."""
    facts: GuardFacts | None = None
    reruns: tuple[Rerun, ...] = ()
    if observe and patch is not None:
        try:
            reruns = await rerun_pocs(task, passed)
        except Exception as exc:  # noqa: BLE001 - advisory: the rest is still examined
            await Notify(f"the pinned re-runs did not run: {exc}")
        try:
            facts = await ObserveGuard()
        except Exception as exc:  # noqa: BLE001 - advisory: the patch alone is still examined
            await Notify(f"the patch guard observed nothing: {exc}")
    try:
        report = guard_report(patch, task, facts, reruns)
    except Exception as exc:  # noqa: BLE001 - advisory: never a grade change
        await Notify(f"the patch guard failed: {type(exc).__name__}: {exc}")
        return None
    try:
        await WriteGuard(report)
    except Exception as exc:  # noqa: BLE001 - advisory: a time limit or an interrupt too
        await Notify(f"guard.json not written: {exc}")
        return None
    return report
