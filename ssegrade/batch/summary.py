"""A batch's own summary, `batch.json`, and when a graded run is graded again.

Pure core (SPEC §14). `batch_summary` builds the document a batch writes at the top of its
results folder when it ends (or is interrupted): what ran it, over which jobs file, when, and
the run folder of every job by outcome. `next_attempt` is the rule of resume: which finished
runs are graded again (`--force`, or an `error` grade within `--max-attempts`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from ssegrade.result import ErrorKind, Status

__all__ = [
    "KINDS",
    "RETRY_KINDS",
    "BatchCounts",
    "BatchRuns",
    "BatchSummary",
    "JobsFile",
    "RunKind",
    "batch_summary",
    "next_attempt",
]

RunKind = Literal["passed", "failed", "error", "cached", "skipped"]
"""What became of a job in a batch: graded (by its verdict), its grade reused (`cached`), or
left as an earlier batch graded it or as another live grading holds it (`skipped`)."""

KINDS: tuple[RunKind, ...] = ("passed", "failed", "error", "cached", "skipped")


class _Frozen(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid", strict=True)


class JobsFile(_Frozen):
    """The jobs of a batch: the file (`<python>` for jobs given in Python), the sha256 of
    its bytes (of their JSON lines, for jobs given in Python), and how many jobs it holds."""

    path: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    count: int = Field(ge=0)


class BatchCounts(_Frozen):
    """How many jobs of each kind (each the length of its list in `BatchRuns`)."""

    passed: int = Field(ge=0)
    failed: int = Field(ge=0)
    error: int = Field(ge=0)
    cached: int = Field(ge=0)
    skipped: int = Field(ge=0)


class BatchRuns(_Frozen):
    """The run folders (relative to the results folder) of each kind, in the jobs' order."""

    passed: tuple[str, ...]
    failed: tuple[str, ...]
    error: tuple[str, ...]
    cached: tuple[str, ...]
    skipped: tuple[str, ...]


class BatchSummary(_Frozen):
    """`batch.json`: ssegrade's version, the batch's label, engine, workers and containment,
    its jobs file, when it started and ended, whether it was interrupted, and its runs by
    kind with their counts. A job killed by a second interrupt is in no list (its folder was
    removed), nor is a job that never started."""

    ssegrade: str
    label: str | None
    engine: Literal["local", "ray"]
    workers: int = Field(ge=1)
    containment: str
    jobs: JobsFile
    started_at: AwareDatetime
    ended_at: AwareDatetime
    interrupted: bool
    counts: BatchCounts
    runs: BatchRuns
    errors: dict[ErrorKind, tuple[str, ...]] = {}
    """The `error` runs (graded by this batch or found so) by the kind of their error."""

    @model_validator(mode="after")
    def _counted(self) -> BatchSummary:
        for kind in KINDS:
            listed = len(getattr(self.runs, kind))
            if getattr(self.counts, kind) != listed:
                raise ValueError(f"counts.{kind} is not the number of runs.{kind} ({listed})")
        return self

    @property
    def duration(self) -> timedelta:
        """How long the batch ran."""
        return self.ended_at - self.started_at

    def to_json(self) -> bytes:
        """The document as written: JSON, keys in the model's order, a final newline."""
        return self.model_dump_json(indent=1).encode() + b"\n"


def batch_summary(
    *,
    version: str,
    label: str | None,
    engine: Literal["local", "ray"],
    workers: int,
    containment: str,
    jobs: JobsFile,
    started_at: AwareDatetime,
    ended_at: AwareDatetime,
    interrupted: bool,
    outcomes: Iterable[tuple[str, RunKind]],
    errors: Iterable[tuple[str, ErrorKind]] = (),
) -> BatchSummary:
    """The summary of a batch whose jobs ended as `outcomes` (run folder, kind), in order,
    with the `errors` among them (run folder, kind of error; a skipped run's too).

    >>> from datetime import datetime, timezone
    >>> now = datetime(2026, 11, 30, 10, tzinfo=timezone.utc)
    >>> doc = batch_summary(version="1.0", label="nightly", engine="local", workers=2,
    ...     containment="PID namespace", jobs=JobsFile(path="jobs.jsonl", sha256="0" * 64,
    ...     count=2), started_at=now, ended_at=now, interrupted=False,
    ...     outcomes=[("t/m/a/r1", "passed"), ("t/m/a/r2", "error")])
    >>> doc.counts.error, doc.runs.error
    (1, ('t/m/a/r2',))
    """
    lists: dict[RunKind, list[str]] = {kind: [] for kind in KINDS}
    for folder, kind in outcomes:
        lists[kind].append(folder)
    return BatchSummary(
        ssegrade=version,
        label=label,
        engine=engine,
        workers=workers,
        containment=containment,
        jobs=jobs,
        started_at=started_at,
        ended_at=ended_at,
        interrupted=interrupted,
        counts=BatchCounts(**{kind: len(found) for kind, found in lists.items()}),
        runs=BatchRuns(**{kind: tuple(found) for kind, found in lists.items()}),
        errors=_by_kind(errors),
    )


def _by_kind(errors: Iterable[tuple[str, ErrorKind]]) -> dict[ErrorKind, tuple[str, ...]]:
    found: dict[ErrorKind, list[str]] = {}
    for folder, kind in errors:
        found.setdefault(kind, []).append(folder)
    return {kind: tuple(folders) for kind, folders in sorted(found.items())}


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
