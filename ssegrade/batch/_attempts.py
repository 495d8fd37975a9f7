"""When a graded run is graded again: the rule of resume (`next_attempt`), the options of
`ssegrade batch` that say it (`retry_options`), and what a run graded again keeps of its
earlier attempts (`earlier_attempts`).

Pure core (SPEC §3, §14). A run graded `error` of a kind resume retries (`RETRY_KINDS` by
default: the host's and ssegrade's) is graded again while it took fewer than
`--max-attempts` attempts; each earlier attempt stays on record in its `summary.json`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ssegrade.internal.result import ErrorKind, Status, error_kind_of

__all__ = ["RETRY_KINDS", "earlier_attempts", "next_attempt", "retry_options"]


_MAX_EARLIER = 100
"""The most earlier attempts a run's summary keeps (the newest)."""


def earlier_attempts(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What a run graded again keeps of its earlier attempts (`earlier_attempts` in its
    `summary.json`), from `doc`, the summary of its last attempt: the attempts that one kept,
    then that one (its attempt number, status, error kind and message, and whether its
    grading ran out of time).

    >>> earlier_attempts({"attempts": 1, "patch_result": {"status": "error",
    ...     "error_msg": "OSError: No space left on device"},
    ...     "runtime_result": {"error_kind": "infrastructure"}})
    ... # doctest: +NORMALIZE_WHITESPACE
    [{'attempt': 1, 'status': 'error', 'error_kind': 'infrastructure',
      'error_msg': 'OSError: No space left on device', 'evaluator_timeout': False}]
    """
    kept = doc.get("earlier_attempts")
    before = [item for item in kept if isinstance(item, dict)] if isinstance(kept, list) else []
    patch, runtime = doc.get("patch_result"), doc.get("runtime_result")
    patch = patch if isinstance(patch, dict) else {}
    runtime = runtime if isinstance(runtime, dict) else {}
    said = patch.get("status")
    status: Status = "passed" if said == "passed" else "failed" if said == "failed" else "error"
    message = patch.get("error_msg") if isinstance(patch.get("error_msg"), str) else None
    attempts = doc.get("attempts")
    made = attempts if isinstance(attempts, int) and not isinstance(attempts, bool) else 1
    this = {
        "attempt": max(made, 1),
        "status": status,
        "error_kind": error_kind_of(status, message, runtime.get("error_kind")),
        "error_msg": message,
        "evaluator_timeout": runtime.get("evaluator_timeout") is True,
    }
    return [*before, this][-_MAX_EARLIER:]


RETRY_KINDS: frozenset[ErrorKind] = frozenset({"infrastructure", "grader"})
"""The kinds of `error` resume grades again by default: the host's and ssegrade's. A patch
that ran out of time (`timeout`) or a broken task (`task`) would only do it again."""


def next_attempt(
    status: Status,
    attempts: int,
    *,
    force: bool,
    retry: bool,
    max_attempts: int,
    kind: ErrorKind | None = None,
    kinds: frozenset[ErrorKind] = RETRY_KINDS,
) -> int | None:
    """The attempt number of a new grading of a run already graded `status` in `attempts`
    attempts, or None to keep it: `force` grades any run again (attempt 1, a new series); an
    `error` of one of the `kinds` (its `kind`; unknown: `grader`) is graded again while
    fewer than `max_attempts` attempts were made, unless `retry` is off; any other grade is
    kept.

    >>> next_attempt("error", 1, force=False, retry=True, max_attempts=2, kind="grader")
    2
    >>> next_attempt("error", 1, force=False, retry=True, max_attempts=2, kind="timeout") is None
    True
    >>> next_attempt("error", 2, force=False, retry=True, max_attempts=2) is None
    True
    >>> next_attempt("passed", 1, force=True, retry=False, max_attempts=1)
    1
    """
    if force:
        return 1
    wanted = (kind or "grader") in kinds
    if status == "error" and retry and wanted and attempts < max_attempts:
        return attempts + 1
    return None


def retry_options(kinds: frozenset[ErrorKind], max_attempts: int) -> tuple[str, ...]:
    """The options of `ssegrade batch` that grade again the `error` runs of `kinds` within
    `max_attempts` (none: no retry), as few as say it (the defaults are left out).

    >>> retry_options(RETRY_KINDS, 2), retry_options(frozenset(), 2)
    ((), ('--no-retry',))
    >>> retry_options(frozenset({"timeout", "grader"}), 3)
    ('--retry-kinds', 'grader,timeout', '--max-attempts', '3')
    """
    if not kinds:
        return ("--no-retry",)
    named = () if kinds == RETRY_KINDS else ("--retry-kinds", ",".join(sorted(kinds)))
    return (*named, *(("--max-attempts", str(max_attempts)) if max_attempts != 2 else ()))
