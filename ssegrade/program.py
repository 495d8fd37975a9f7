"""The grading program (SPEC §3): prepare, then the checks in grading order (build, PoCs,
functional and intent tests, as `ssegrade.checks` orders them), archive, write `result.json`;
then the patch guard (SPEC §15), which only writes `guard.json` beside it.

Pure core: it speaks only in grading effects; `decide` turns what it observed into the grade.
"""

from __future__ import annotations

import contextlib
import traceback
from dataclasses import dataclass, field

from returns.pipeline import is_successful

from ssegrade.bencher import task_path
from ssegrade.checks import CheckSpec, grading_order
from ssegrade.effects import (
    ApplyError,
    Archive,
    Bench,
    CheckFinished,
    CheckRecord,
    CheckStarted,
    Notify,
    PrepareGrading,
    ScriptNotStarted,
    TimeLimitReached,
    WriteResult,
)
from ssegrade.guarding import guard_step
from ssegrade.result import EvaluationResult, RuntimeResult
from ssegrade.task import Task
from ssegrade.verdict import (
    ApplyFailed,
    CheckOutcome,
    Crashed,
    Ending,
    Finished,
    Interrupted,
    Outcomes,
    TimedOut,
    decide,
)

__all__ = ["GradeOptions", "GradingInterrupted", "grade"]


class GradingInterrupted(Exception):
    """Raised by an interpreter into the program when a signal (`SIGINT`, `SIGTERM`) asks
    grading to stop: the finished checks are kept, the result is written."""

    def __init__(self, signal: str) -> None:
        super().__init__(f"interrupted by {signal}")
        self.signal = signal


@dataclass(frozen=True, slots=True)
class GradeOptions:
    """What grading needs besides its effects: the task, its folder, the limit, agent facts."""

    task: Task
    folder: str
    timeout: int = 3600
    runtime: RuntimeResult = field(default_factory=RuntimeResult)


@dataclass(slots=True)
class _Log:
    runs: list[CheckOutcome] = field(default_factory=list)
    apply_failed: ApplyFailed | None = None
    patch: bytes | None = None  # the patch graded, once prepared


async def _check(
    log: _Log, check: CheckSpec, poc: str | None = None, poc_path: str | None = None
) -> bool:
    await CheckStarted(check.name, poc_path)
    result = await Bench(check.action, poc)
    if result.not_started is not None:
        raise ScriptNotStarted(result.not_started, result.log)
    log.runs.append(CheckOutcome(check.name, result.passed, result.log, poc_path))
    await CheckFinished(CheckRecord.of_run(check.name, poc_path, result))
    return result.passed


def _prepare_record(
    log_file: str | None, *, passed: bool, left_out: tuple[str, ...]
) -> CheckRecord:
    return CheckRecord(
        name="prepare",
        poc=None,
        exit_code=0 if passed else 1,
        seconds=0.0,
        killed=False,
        log_file=log_file,
        passed=passed,
        left_out=left_out,
    )


async def _checks(options: GradeOptions, log: _Log) -> Ending:
    has = options.task.checks
    prepared = await PrepareGrading()
    if not is_successful(prepared):
        error = prepared.failure()
        if isinstance(error, ApplyError):
            await CheckFinished(_prepare_record(error.log_file, passed=False, left_out=()))
            log.apply_failed = ApplyFailed(error.log)
            return Finished()
        return Crashed(error.message)
    ready = prepared.unwrap()
    log.patch = ready.patch
    await CheckFinished(_prepare_record(ready.log_file, passed=True, left_out=ready.left_out))
    if ready.empty:
        await Notify("the patch is empty: grading the unmodified project")
    for check in grading_order():
        if check.name not in has:
            continue
        if check.name == "poc":
            for poc in options.task.files.poc:
                await _check(log, check, poc, task_path(options.folder, poc))
        elif not await _check(log, check) and check.name == "build":
            return Finished()  # nothing runs after a failed build
    return Finished()


async def grade(options: GradeOptions) -> EvaluationResult:
    """Grade the captured patch and write `result.json`; always returns the document written.

    A time limit, an interrupt or an exception during the checks keeps the checks that
    finished; the archive and the result are written in every case, and a time limit or an
    interrupt during them keeps the grade. The patch guard runs once the result is written,
    and nothing it does or fails to do reaches the grade.
    """
    log = _Log()
    ending: Ending
    try:
        ending = await _checks(options, log)
    except TimeLimitReached:
        ending = TimedOut(options.timeout)
    except GradingInterrupted as interrupt:
        ending = Interrupted(interrupt.signal)
    except ScriptNotStarted as broken:  # a broken task: its log says why, not a traceback
        ending = Crashed(str(broken), broken.log)
    except Exception as exc:  # noqa: BLE001 - any failure becomes an `error` grade
        detail = "".join(traceback.format_exception(exc))
        ending = Crashed(str(exc) or type(exc).__name__, detail)
    try:
        archived = await Archive()
        if not is_successful(archived):
            await Notify(f"source.tar.gz not written: {archived.failure().message}")
    except (GradingInterrupted, TimeLimitReached) as stopped:  # a finished grade is kept
        await Notify(f"source.tar.gz not written: {stopped}")
    outcomes = Outcomes(
        has=options.task.checks,
        pocs=tuple(task_path(options.folder, p) for p in options.task.files.poc),
        runs=tuple(log.runs),
        apply_failed=log.apply_failed,
        ending=ending,
    )
    runtime = options.runtime.model_copy(update={"evaluator_timeout": isinstance(ending, TimedOut)})
    result = EvaluationResult(patch_result=decide(outcomes), runtime_result=runtime)
    try:
        await WriteResult(result)
    except (GradingInterrupted, TimeLimitReached):  # perhaps not in place: once more, whole
        await WriteResult(result)
    with contextlib.suppress(Exception):  # advisory: the grade is written and stays
        await guard_step(options.task, log.patch, observe=isinstance(ending, Finished))
    return result
