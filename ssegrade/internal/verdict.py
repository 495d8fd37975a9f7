"""The verdict: a pure fold from check outcomes to the `patch_result` of `result.json`.

Everything else in ssegrade only produces outcomes; the grading rules of SPEC §3 live here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ssegrade.internal.checks import Check, grading_order, spec
from ssegrade.internal.errors import SsegradeError
from ssegrade.internal.result import (
    ErrorKind,
    EvaluationResult,
    PatchResult,
    RuntimeResult,
    status_of,
)

__all__ = [
    "ApplyFailed",
    "CheckOutcome",
    "Crashed",
    "Ending",
    "Finished",
    "Outcomes",
    "OutcomesRefused",
    "Signalled",
    "TimedOut",
    "bound_log",
    "decide",
    "document",
    "ended",
    "error_kind",
    "escaped",
    "kind_of",
    "not_graded",
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
    """An unexpected exception ended grading; `kind` says whose it is (SPEC §3): `grader`
    (ssegrade's own), `task` (a script that cannot start), `infrastructure` (the host: a
    full disk outside a check's own work, a lost worker)."""

    message: str
    detail: str | None = None
    kind: ErrorKind = "grader"


@dataclass(frozen=True, slots=True)
class Signalled:
    """A signal (`SIGINT`, `SIGTERM`) ended grading."""

    signal: str


Ending = Finished | TimedOut | Crashed | Signalled


class OutcomesRefused(SsegradeError, ValueError):
    """Outcomes no grading of the task can give: a PoC run twice, a PoC run the task does not
    name, or a PoC missing from a grading that ran to its end."""


@dataclass(frozen=True, slots=True)
class Outcomes:
    """What grading observed: the checks the task has, its PoCs and the finished runs.

    The PoC runs match the task's PoCs (`OutcomesRefused` otherwise): each names one of
    `pocs`, none runs twice, and a grading that ran to its end (`Finished`, the patch
    applied, the build not failed) ran every one, so that `decide` can trust them.

    >>> try:
    ...     Outcomes(frozenset({"poc"}), ("/t/a",), (CheckOutcome("poc", True, "", "/t/b"),))
    ... except OutcomesRefused as refused:
    ...     print(refused)
    a PoC run names /t/b, which is not one of the task's PoCs
    """

    has: frozenset[Check]
    pocs: tuple[str, ...] = ()
    runs: tuple[CheckOutcome, ...] = ()
    apply_failed: ApplyFailed | None = None
    ending: Ending = Finished()

    def __post_init__(self) -> None:
        problem = _poc_problem(self)
        if problem is not None:
            raise OutcomesRefused(problem)


def _poc_problem(outcomes: Outcomes) -> str | None:
    """What makes the PoC runs of `outcomes` impossible, or None."""
    ran: set[str] = set()
    for run in outcomes.runs:
        if run.check != "poc":
            continue
        if run.poc is None:
            return "a PoC run names no PoC"
        if run.poc not in outcomes.pocs:
            return f"a PoC run names {run.poc}, which is not one of the task's PoCs"
        if run.poc in ran:
            return f"the PoC {run.poc} ran twice"
        ran.add(run.poc)
    stopped = (
        not isinstance(outcomes.ending, Finished)
        or outcomes.apply_failed is not None
        or "poc" not in outcomes.has
        or any(run.check == "build" and not run.passed for run in outcomes.runs)
    )
    missing = [poc for poc in outcomes.pocs if poc not in ran]
    if missing and not stopped:
        return f"grading ran to its end without running the PoC {missing[0]}"
    return None


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
    stay null, an unfinished grading is `error` with the finished checks kept, unless a
    finished check failed: a failed check is decisive, whatever ended grading (SPEC §3).

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
    # The PoC check is known once every PoC ran, or once one failed: a grading that stops
    # in a later PoC then counts the PoCs that did not finish as not passed.
    pocs_done = "poc" in outcomes.has and (
        len(poc_runs) == len(outcomes.pocs) or not all(run.passed for run in poc_runs)
    )
    fields: dict[str, Any] = {}
    for check in grading_order():
        if check.name == "poc":
            passed = sum(run.passed for run in poc_runs) if pocs_done else None
            total = len(outcomes.pocs) if pocs_done else None
            fields.update(zip(check.fields, (passed, total), strict=True))
        else:
            fields[check.fields[0]] = _single(runs, check.name)
    first = _first_failure(tuple(run for run in runs if run.check != "poc" or pocs_done))
    status = status_of(**fields, unfinished=not isinstance(ending := outcomes.ending, Finished))
    if first is not None:  # a failed check is decisive: it names the grade, whatever ended it
        return PatchResult(
            status=status, **fields, error_msg=_message(first), error_log=bound_log(first.log)
        )
    error_msg, error_log = _ended(ending)
    if status == "error" and error_msg is None:
        error_msg = "No check ran"
    return PatchResult(status=status, **fields, error_msg=error_msg, error_log=error_log)


def ended(ending: Ending) -> str | None:
    """How grading ended, as `error_msg` says it (None when it ran to its end).

    >>> ended(TimedOut(60)), ended(Finished())
    ('Timeout (60s)', None)
    """
    return _ended(ending)[0]


def _ended(ending: Ending) -> tuple[str | None, str | None]:
    if isinstance(ending, TimedOut):
        return f"Timeout ({ending.seconds}s)", None
    if isinstance(ending, Crashed):
        detail = bound_log(ending.detail) if ending.detail is not None else None
        return f"Exception: {ending.message}", detail
    if isinstance(ending, Signalled):
        return f"Interrupted ({ending.signal})", None
    return None, None


def kind_of(ending: Ending) -> ErrorKind:
    """The kind of `error` an ending gives when no finished check failed: a time limit is
    `timeout`, an interrupt (the host or the operator stopped grading) `infrastructure`, an
    exception its own kind; a grading that ran to its end with nothing to grade is `task`.

    >>> kind_of(TimedOut(5)), kind_of(Signalled("SIGTERM")), kind_of(Crashed("x"))
    ('timeout', 'infrastructure', 'grader')
    """
    if isinstance(ending, TimedOut):
        return "timeout"
    if isinstance(ending, Signalled):
        return "infrastructure"
    if isinstance(ending, Crashed):
        return ending.kind
    return "task"


def error_kind(outcomes: Outcomes) -> ErrorKind | None:
    """The kind of the grade's `error` (None when it is not `error`)."""
    return kind_of(outcomes.ending) if decide(outcomes).status == "error" else None


def document(outcomes: Outcomes, runtime: RuntimeResult) -> EvaluationResult:
    """The whole `result.json`: the grade `decide` gives, and the runtime facts with
    `evaluator_timeout` (the time limit ended grading, even when a failed check decides the
    grade) and `error_kind` (null unless the grade is `error`) set from the ending.

    >>> run = CheckOutcome("poc", False, "boom", "/t/p")
    >>> doc = document(Outcomes(frozenset({"poc"}), ("/t/p",), (run,), ending=TimedOut(9)),
    ...                RuntimeResult())
    >>> doc.patch_result.status, doc.patch_result.error_msg, doc.runtime_result.evaluator_timeout
    ('failed', 'PoC failed: /t/p', True)
    """
    patch = decide(outcomes)
    kind = kind_of(outcomes.ending) if patch.status == "error" else None
    timed_out = isinstance(outcomes.ending, TimedOut)
    facts = runtime.model_copy(update={"evaluator_timeout": timed_out, "error_kind": kind})
    return EvaluationResult(patch_result=patch, runtime_result=facts)


def escaped(ending: Crashed | Signalled, seen: Outcomes | None = None) -> PatchResult:
    """The grade when an exception escapes the grading program itself, so that it returned no
    document: `decide` over the outcomes seen so far (`seen`; none when unknown), ended by
    `ending`. The evaluator writes it (with the traceback as `Crashed.detail`), and a replay
    of such a grading derives it again (without one).

    >>> escaped(Signalled("SIGTERM")).error_msg
    'Interrupted (SIGTERM)'
    >>> escaped(Crashed("disk full", "Traceback …")).model_dump(exclude_none=True)
    {'status': 'error', 'error_msg': 'Exception: disk full', 'error_log': 'Traceback …'}
    """
    return decide(_ending_at(ending, seen))


def not_graded(
    ending: Crashed | Signalled, runtime: RuntimeResult, seen: Outcomes | None = None
) -> EvaluationResult:
    """The whole document of a grading that returned none (an exception escaped it, its
    worker or its transit failed): `document` over the outcomes seen (none when unknown),
    ended by `ending`. Every writer of such a document uses it, so that a check known to have
    failed still decides the grade and every `error` has its kind.

    >>> lost = not_graded(Crashed("lost", kind="infrastructure"), RuntimeResult())
    >>> lost.runtime_result.error_kind
    'infrastructure'
    """
    return document(_ending_at(ending, seen), runtime)


def _ending_at(ending: Ending, seen: Outcomes | None) -> Outcomes:
    base = seen if seen is not None else Outcomes(has=frozenset())
    return Outcomes(base.has, base.pocs, base.runs, base.apply_failed, ending)
