"""What became of each job of a batch, and how its line says so.

Interpreter layer, beside `interpreters.batch.grader.BatchGrader`, which records a `JobOutcome`
for every job (for the progress lines, the last line and `batch.json`) under the `Retry` rules
of the command line; `job_verdict` gives a job line's verdict with the patch guard's flags and,
when it did not pass, why (its `error_msg`, task files named relative to the task folder).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ssegrade import Status
from ssegrade.batch import RETRY_KINDS, RunKind
from ssegrade.guard import flag_kinds
from ssegrade.internal.result import ErrorKind
from ssegrade.report import relative_message

__all__ = ["JobOutcome", "Outcome", "Retry", "job_verdict"]

Outcome = Literal["graded", "cached", "skipped", "held", "killed"]


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """What became of one job: its run folder, how it ended and its status (None: killed,
    or not graded here because another live grading holds its folder)."""

    label: str
    folder: Path
    outcome: Outcome
    status: Status | None
    cached_from: str | None = None
    line: int = 0
    error_kind: ErrorKind | None = None
    """The kind of its `error`, when it is one."""
    """Its line in the jobs file (or its number among the jobs given in Python)."""

    @property
    def kind(self) -> RunKind | None:
        """Its kind in `batch.json`: the verdict of a grading, `cached`, `skipped` (also
        when another grading holds its folder); None when it was killed."""
        if self.outcome == "graded":
            return self.status
        if self.outcome == "cached":
            return "cached"
        return None if self.outcome == "killed" else "skipped"


@dataclass(frozen=True, slots=True)
class Retry:
    """Which finished runs are graded again: all with `force`, an `error` one of the `kinds`
    while it took fewer than `max_attempts` attempts unless `retry` is off."""

    force: bool = False
    retry: bool = True
    max_attempts: int = 2
    kinds: frozenset[ErrorKind] = RETRY_KINDS


def job_verdict(status: Status, doc: Mapping[str, Any] | None) -> tuple[str, str]:
    """How a job's line names its verdict, with the kinds of flag the patch guard raised
    (`passed, flagged sanitizer`; `failed, flagged crash-handler`), and, after its run
    folder, why it did not pass (`: Timeout (3s)`)."""
    if doc is None:
        return status, ""
    flags = flag_kinds(doc.get("guard"))
    verdict = f"{status}, flagged {' '.join(flags)}" if flags else status
    patch, task = doc.get("patch_result"), doc.get("task")
    message = patch.get("error_msg") if isinstance(patch, dict) else None
    if status == "passed" or not isinstance(message, str) or not message:
        return verdict, ""
    return verdict, f": {relative_message(message, _task_files(task))}"


def _task_files(task: object) -> list[str]:
    """The files a summary's task config names (its scripts, PoCs, future test)."""
    if not isinstance(task, dict):
        return []
    scripts, files = task.get("scripts"), task.get("files")
    named = list(scripts.values()) if isinstance(scripts, dict) else []
    if isinstance(files, dict):
        pocs = files.get("poc")
        named += [*(pocs if isinstance(pocs, list) else ()), files.get("future_test")]
    return [name for name in named if isinstance(name, str)]
