"""The verdict: a pure fold from check outcomes to the `patch_result` of `result.json`.

Everything else in ssegrade only produces outcomes; the grading rules of SPEC §3 live here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ssegrade.checks import Check, grading_order, spec
from ssegrade.result import PatchResult, status_of

__all__ = [
    "ApplyFailed",
    "CheckOutcome",
    "Crashed",
    "Ending",
    "Finished",
    "Interrupted",
    "Outcomes",
    "TimedOut",
    "bound_log",
    "decide",
    "escaped",
]

LOG_LIMIT = 1 << 20


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """One finished check run; `poc` is the PoC's absolute path for a `poc` run."""

    check: Check
    passed: bool
    log: str = ""
    poc: str | None = None


@dataclass(frozen=True, slots=True)
class ApplyFailed:
    """The captured patch did not apply; `log` is git's message."""

    log: str


@dataclass(frozen=True, slots=True)
class Finished:
    """Grading ran to its end."""


@dataclass(frozen=True, slots=True)
class TimedOut:
    """The evaluation's time limit ended grading."""

    seconds: int


@dataclass(frozen=True, slots=True)
class Crashed:
    """An unexpected exception ended grading."""

    message: str
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class Interrupted:
    """A signal (`SIGINT`, `SIGTERM`) ended grading."""

    signal: str


Ending = Finished | TimedOut | Crashed | Interrupted


@dataclass(frozen=True, slots=True)
class Outcomes:
    """What grading observed: the checks the task has, its PoCs and the finished runs."""

    has: frozenset[Check]
    pocs: tuple[str, ...] = ()
    runs: tuple[CheckOutcome, ...] = ()
    apply_failed: ApplyFailed | None = None
    ending: Ending = Finished()


def bound_log(text: str, limit: int = LOG_LIMIT) -> str:
    """Keep the last `limit` bytes of a log, prefixed by a line saying how much was cut.

    >>> bound_log("abcdef", limit=4)
    '[2 bytes cut]\\ncdef'
    >>> bound_log("short")
    'short'
    """
    data = text.encode("utf-8", "surrogateescape")
    if len(data) <= limit:
        return text
    cut = len(data) - limit
    tail = data[cut:].decode("utf-8", "ignore")
    return f"[{cut} bytes cut]\n{tail}"


def _first_failure(runs: tuple[CheckOutcome, ...]) -> CheckOutcome | None:
    return next((run for run in runs if not run.passed), None)


def _message(run: CheckOutcome) -> str:
    return spec(run.check).failure_message(run.poc)


def _single(runs: tuple[CheckOutcome, ...], check: Check) -> bool | None:
    found = [run.passed for run in runs if run.check == check]
    return found[-1] if found else None


def decide(outcomes: Outcomes) -> PatchResult:
    """Fold outcomes into the grade: first failure wins `error_msg`, checks the task lacks
    stay null, an unfinished grading is `error` with the finished checks kept.

    >>> decide(Outcomes(has=frozenset({"build"}), runs=(CheckOutcome("build", False, "oops"),)))
    ... # doctest: +NORMALIZE_WHITESPACE
    PatchResult(status='failed', build_success=False, pov_passed=None, pov_total=None,
                func_test_success=None, intent_test_success=None,
                error_msg='Build failed', error_log='oops')
    >>> decide(Outcomes(has=frozenset())).error_msg
    'No check ran'
    """
    if outcomes.apply_failed is not None:
        # Every check the task has is failed, but for the PoCs, which never ran: their
        # fields stay null.
        failed = {
            check.fields[0]: False
            for check in grading_order()
            if check.name in outcomes.has and check.name != "poc"
        }
        return PatchResult(
            status="failed",
            **failed,
            error_msg="Patch apply failed",
            error_log=bound_log(outcomes.apply_failed.log),
        )
    runs = tuple(run for run in outcomes.runs if run.check in outcomes.has)
    poc_runs = [run for run in runs if run.check == "poc"]
    pocs_done = "poc" in outcomes.has and len(poc_runs) == len(outcomes.pocs)
    fields: dict[str, Any] = {}
    for check in grading_order():
        if check.name == "poc":
            passed = sum(run.passed for run in poc_runs) if pocs_done else None
            total = len(outcomes.pocs) if pocs_done else None
            fields.update(zip(check.fields, (passed, total), strict=True))
        else:
            fields[check.fields[0]] = _single(runs, check.name)
    first = _first_failure(tuple(run for run in runs if run.check != "poc" or pocs_done))
    error_msg = _message(first) if first else None
    error_log = bound_log(first.log) if first else None
    ending = outcomes.ending
    if isinstance(ending, TimedOut):
        error_msg, error_log = f"Timeout ({ending.seconds}s)", None
    elif isinstance(ending, Crashed):
        error_msg = f"Exception: {ending.message}"
        error_log = bound_log(ending.detail) if ending.detail is not None else None
    elif isinstance(ending, Interrupted):
        error_msg, error_log = f"Interrupted ({ending.signal})", None
    status = status_of(**fields, unfinished=not isinstance(ending, Finished))
    if status == "error" and error_msg is None:
        error_msg = "No check ran"
    return PatchResult(status=status, **fields, error_msg=error_msg, error_log=error_log)


def escaped(ending: Crashed | Interrupted) -> PatchResult:
    """The grade when an exception escapes the grading program itself, so that it returned no
    document: `decide` over no outcomes (none is known), ended by `ending`. The evaluator
    writes it (with the traceback as `Crashed.detail`), and a replay of such a grading derives
    it again (without one).

    >>> escaped(Interrupted("SIGTERM")).error_msg
    'Interrupted (SIGTERM)'
    >>> escaped(Crashed("disk full", "Traceback …")).model_dump(exclude_none=True)
    {'status': 'error', 'error_msg': 'Exception: disk full', 'error_log': 'Traceback …'}
    """
    return decide(Outcomes(has=frozenset(), ending=ending))
