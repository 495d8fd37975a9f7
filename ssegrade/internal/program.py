"""The grading program (SPEC §3): prepare, then the checks in grading order (build, PoCs,
functional and intent tests, as `ssegrade.internal.checks` orders them), archive, write
`result.json`; then the patch guard (SPEC §15), which only writes `guard.json` beside it.

Pure core: it speaks only in grading effects; `decide` turns what it observed into the grade.
"""

from __future__ import annotations

import contextlib
import traceback
from dataclasses import dataclass, field

from returns.pipeline import is_successful

from ssegrade._guarding import guard_step
from ssegrade.internal.bencher import fresh_copies, task_path
from ssegrade.internal.checks import Check, CheckSpec, grading_order
from ssegrade.internal.effects import (
    ApplyError,
    Archive,
    Bench,
    CheckFinished,
    CheckRecord,
    CheckStarted,
    MayRunAhead,
    Notify,
    PrepareGrading,
    ScriptNotStarted,
    TimeLimitReached,
    WriteResult,
)
from ssegrade.internal.errors import SsegradeError
from ssegrade.internal.result import ErrorKind, EvaluationResult, RuntimeResult
from ssegrade.internal.task import Task
from ssegrade.internal.verdict import (
    ApplyFailed,
    CheckOutcome,
    Crashed,
    Ending,
    Finished,
    Outcomes,
    Signalled,
    TimedOut,
    document,
    ended,
)

__all__ = ["GradeOptions", "Seen", "SignalArrived", "crashed", "grade", "plan"]


class SignalArrived(SsegradeError):
    """Raised by an interpreter into the program when a signal (`SIGINT`, `SIGTERM`) asks
    grading to stop: the finished checks are kept, the result is written."""

    def __init__(self, signal: str) -> None:
        super().__init__(f"interrupted by {signal}")
        self.signal = signal


@dataclass(frozen=True, slots=True)
class GradeOptions:
    """What grading needs besides its effects: the task, its folder, agent facts. Its time
    limit is the run loop's `Deadline`, whose `TimeLimitReached` says how long it was."""

    task: Task
    folder: str
    runtime: RuntimeResult = field(default_factory=RuntimeResult)


@dataclass(slots=True)
class Seen:
    """What a grading has observed so far, kept by whoever runs it: when an exception escapes
    the grading program (so that it returns no document), the checks that finished still
    decide the grade (`ssegrade.internal.verdict.not_graded`)."""

    has: frozenset[Check] = frozenset()
    pocs: tuple[str, ...] = ()
    runs: list[CheckOutcome] = field(default_factory=list)
    apply_failed: ApplyFailed | None = None
    patch: bytes | None = None  # the patch graded, once prepared

    def outcomes(self, ending: Ending | None = None) -> Outcomes:
        """The outcomes seen, ended by `ending` (none: grading ran to its end)."""
        return Outcomes(
            has=self.has,
            pocs=self.pocs,
            runs=tuple(self.runs),
            apply_failed=self.apply_failed,
            ending=ending if ending is not None else Finished(),
        )


def crashed(exc: BaseException) -> Crashed:
    """The ending an unexpected exception gives, with its traceback: an `OSError` (a full
    disk, a lost file system) is the host's (`infrastructure`), anything else ssegrade's
    (`grader`); a task script that cannot start is the task's."""
    if isinstance(exc, ScriptNotStarted):  # a broken task: its log says why, not a traceback
        return Crashed(str(exc), exc.log, kind="task")
    detail = "".join(traceback.format_exception(exc))
    kind: ErrorKind = "infrastructure" if isinstance(exc, OSError) else "grader"
    return Crashed(str(exc) or type(exc).__name__, detail, kind=kind)


async def _check(
    log: Seen, check: CheckSpec, poc: str | None = None, poc_path: str | None = None
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


async def _checks(options: GradeOptions, log: Seen) -> Ending:
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


def _end_record(result: EvaluationResult, how: str) -> CheckRecord:
    """The `end` line of `checks.jsonl`: how a grading that did not run to its end ended, the
    grade it got all the same, and the kind of its `error` if it is one."""
    return CheckRecord(
        name="end",
        poc=None,
        exit_code=0 if result.patch_result.status == "passed" else 1,
        seconds=0.0,
        killed=result.runtime_result.evaluator_timeout,
        log_file=None,
        passed=result.patch_result.status == "passed",
        ended=how,
        error_kind=result.runtime_result.error_kind,
    )


async def _say_end(result: EvaluationResult, ending: Ending) -> None:
    """Record in `checks.jsonl` and the notes how grading ended, when it did not finish."""
    how = ended(ending)
    if how is None:
        return
    patch, kind = result.patch_result, result.runtime_result.error_kind
    said = f"error ({kind})" if patch.status == "error" else f"{patch.status}: {patch.error_msg}"
    try:
        await Notify(f"grading ended early: {how}; the grade is {said}")
        await CheckFinished(_end_record(result, how))
    except Exception as exc:  # noqa: BLE001 - a full disk here must not undo the grade
        with contextlib.suppress(Exception):
            await Notify(f"the end of grading not recorded: {exc}")


def plan(task: Task) -> MayRunAhead:
    """What grading `task` lets an interpreter start ahead: the fresh copies its checks ask
    for (`ssegrade.internal.bencher.fresh_copies`), the patch check, the archive (always written).

    >>> from ssegrade.internal.task import Files, Scripts
    >>> plan(Task(id="t", scripts=Scripts(run="r"), files=Files(poc=("p",))))
    MayRunAhead(fresh_copies=1, patch_check=True, archive=True)
    """
    return MayRunAhead(fresh_copies(task), patch_check=True, archive=True)


async def grade(options: GradeOptions, seen: Seen | None = None) -> EvaluationResult:
    """Grade the captured patch and write `result.json`; always returns the document written.
    Its first effect is its `plan`: what may run ahead.

    A time limit, an interrupt or an exception during the checks keeps the checks that
    finished, and a failed one among them decides the grade; the archive and the result are
    written in every case, and a time limit or an interrupt during them keeps the grade. The
    patch guard runs once the result is written, and nothing it does or fails to do reaches
    the grade. `seen` (the caller's) holds what grading observed, for the caller to grade
    with when an exception escapes this program all the same.
    """
    log = seen if seen is not None else Seen()
    log.has = options.task.checks
    log.pocs = tuple(task_path(options.folder, p) for p in options.task.files.poc)
    ending: Ending
    try:
        await plan(options.task)
        ending = await _checks(options, log)
    except TimeLimitReached as spent:
        ending = TimedOut(spent.seconds)
    except SignalArrived as interrupt:
        ending = Signalled(interrupt.signal)
    except Exception as exc:  # noqa: BLE001 - any failure becomes an `error` grade
        ending = crashed(exc)
    try:
        archived = await Archive()
        if not is_successful(archived):
            await Notify(f"source.tar.gz not written: {archived.failure().message}")
    except (SignalArrived, TimeLimitReached) as stopped:  # a finished grade is kept
        await Notify(f"source.tar.gz not written: {stopped}")
    result = document(log.outcomes(ending), options.runtime)
    await _say_end(result, ending)
    try:
        await WriteResult(result)
    except (SignalArrived, TimeLimitReached):  # perhaps not in place: once more, whole
        await WriteResult(result)
    with contextlib.suppress(Exception):  # advisory: the grade is written and stays
        await guard_step(
            options.task,
            log.patch,
            observe=isinstance(ending, Finished),
            passed=_passed_pocs(options, log),
        )
    return result


def _passed_pocs(options: GradeOptions, log: Seen) -> tuple[tuple[str, str], ...]:
    """The PoCs that passed in the grade (config path, absolute path): the guard re-runs them."""
    passed = {run.poc for run in log.runs if run.check == "poc" and run.passed}
    pocs = ((poc, task_path(options.folder, poc)) for poc in options.task.files.poc)
    return tuple((poc, path) for poc, path in pocs if path in passed)
