"""A results folder's own summary, `batch.json`.

Pure core (SPEC §14). `batch.json` is one answer for the **whole folder**, whatever number
of batch commands (resumes included) wrote there: `batch_summary` builds it from the summary
the folder held before (its commands and jobs files), the command that just ran, and the state
of every run folder read from its `summary.json` (the source of truth: `run_state`), so a
crash loses nothing that was graded. Each run is counted once, with the outcome it carries
(a cached run too): passed, passed and flagged by the patch guard, failed, error (by kind),
or not yet graded (a job of a jobs file whose folder holds no grade). The rule of resume
(`next_attempt`: which finished runs are graded again) and the record of earlier attempts
are `ssegrade.batch.attempts`', re-exported here.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any, Literal, TypeVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from ssegrade.batch._attempts import RETRY_KINDS, earlier_attempts, next_attempt, retry_options
from ssegrade.guard._model import flag_kinds
from ssegrade.internal.result import ErrorKind, Status, error_kind_of

__all__ = [
    "KINDS",
    "OUTCOMES",
    "PYTHON_JOBS",
    "RETRY_KINDS",
    "BatchCommand",
    "BatchCounts",
    "BatchRuns",
    "BatchSummary",
    "JobsFile",
    "Outcome",
    "RunKind",
    "RunState",
    "batch_summary",
    "earlier_attempts",
    "next_attempt",
    "ray_cluster",
    "retry_options",
    "run_state",
]

RunKind = Literal["passed", "failed", "error", "cached", "skipped"]
"""What became of a job in one batch command: graded (by its verdict), its grade reused
(`cached`), or left as an earlier batch graded it or as another live grading holds it
(`skipped`). The progress lines count these; `batch.json` counts `Outcome`s."""

KINDS: tuple[RunKind, ...] = ("passed", "failed", "error", "cached", "skipped")

Outcome = Literal["passed", "flagged", "failed", "error", "not_graded"]
"""What a run of the folder carries: passed (no guard flag), passed and flagged by the patch
guard, failed, error, or no grade yet."""

OUTCOMES: tuple[Outcome, ...] = ("passed", "flagged", "failed", "error", "not_graded")

_T = TypeVar("_T")

PYTHON_JOBS = "<python>"
"""The path of the jobs of a batch given in Python (no command grades them again)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid", strict=True)


class RunState(_Frozen):
    """One graded run as its `summary.json` says: its folder (relative to the results
    folder), its outcome, the kind of its error, whether its grade was reused, and whether
    the same command grades it again (an `error` of a kind resume retries, attempts left)."""

    folder: str
    outcome: Outcome
    error_kind: ErrorKind | None = None
    cached: bool = False
    retry: bool = False


class JobsFile(_Frozen):
    """A jobs file a command of the folder graded: its path (`<python>` for jobs given in
    Python), the sha256 of its bytes (of their JSON lines, for jobs given in Python), how
    many jobs it holds, and their run folders (relative to the results folder)."""

    path: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    count: int = Field(ge=0)
    runs: tuple[str, ...] = ()


LOCAL_RAY = "local"
"""The cluster of a command that ran on a Ray started for the batch alone."""


def ray_cluster(address: str | None) -> str:
    """The Ray cluster at `address` as `batch.json` records it: `local` (None: a Ray started
    for the batch), else the address without what could be a credential (a user part, a
    path, a query).

    >>> ray_cluster(None), ray_cluster("head:6379")
    ('local', 'head:6379')
    >>> ray_cluster("ray://ops:s3cret@head:10001/?token=t0k")
    'ray://head:10001'
    """
    if address is None:
        return LOCAL_RAY
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "", address
    place = re.split(r"[/?#]", rest, maxsplit=1)[0].rpartition("@")[2]
    return f"{scheme}://{place}" if sep else place


class BatchCommand(_Frozen):
    """One batch command that wrote in the folder: ssegrade's version, engine, the Ray
    cluster that ran its gradings (`ray_cluster`; None: none did), workers, containment,
    its jobs file (path), when it started and ended, whether it was interrupted."""

    ssegrade: str
    engine: Literal["local", "ray", "podman", "docker"]
    ray: str | None = None
    workers: int = Field(ge=1)
    containment: str
    jobs: str
    started_at: AwareDatetime
    ended_at: AwareDatetime
    interrupted: bool


class BatchCounts(_Frozen):
    """How many runs carry each outcome (each the length of its list in `BatchRuns`)."""

    passed: int = Field(ge=0)
    flagged: int = Field(ge=0)
    failed: int = Field(ge=0)
    error: int = Field(ge=0)
    not_graded: int = Field(ge=0)


class BatchRuns(_Frozen):
    """The run folders (relative to the results folder) of each outcome, sorted."""

    passed: tuple[str, ...]
    flagged: tuple[str, ...]
    failed: tuple[str, ...]
    error: tuple[str, ...]
    not_graded: tuple[str, ...]


class BatchSummary(_Frozen):
    """`batch.json`: the folder's label, the ssegrade versions, engines, Ray clusters (`ray`)
    and containment modes of the commands that wrote it, its jobs files, the commands (first
    start to last end, whether the last was interrupted), every run by outcome with the
    counts, the `error` runs by kind, the runs whose grade was reused (`cached`, counted with
    their outcome), and the commands that grade what is left (`resume`)."""

    label: str | None
    ssegrade: tuple[str, ...]
    engines: tuple[Literal["local", "ray", "podman", "docker"], ...]
    ray: tuple[str, ...] = ()
    containment: tuple[str, ...]
    jobs: tuple[JobsFile, ...]
    commands: tuple[BatchCommand, ...] = Field(min_length=1)
    started_at: AwareDatetime
    ended_at: AwareDatetime
    interrupted: bool
    counts: BatchCounts
    runs: BatchRuns
    errors: dict[ErrorKind, tuple[str, ...]] = {}
    cached: tuple[str, ...] = ()
    resume: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _counted(self) -> BatchSummary:
        for kind in OUTCOMES:
            listed = len(getattr(self.runs, kind))
            if getattr(self.counts, kind) != listed:
                raise ValueError(f"counts.{kind} is not the number of runs.{kind} ({listed})")
        return self

    @property
    def duration(self) -> timedelta:
        """From the first command's start to the last one's end."""
        return self.ended_at - self.started_at

    @property
    def graded(self) -> int:
        """How many runs carry a grade."""
        return sum(getattr(self.counts, kind) for kind in OUTCOMES if kind != "not_graded")

    def to_json(self) -> bytes:
        """The document as written: JSON, keys in the model's order, a final newline."""
        return self.model_dump_json(indent=1).encode() + b"\n"


def run_state(
    folder: str,
    doc: Mapping[str, Any],
    *,
    retry_kinds: frozenset[ErrorKind] | None = None,
    max_attempts: int = 2,
) -> RunState:
    """The state of the run in `folder` whose `summary.json` is `doc`: its status (`error`
    when it records none that is valid), flagged when it passed and the guard raised a flag,
    the kind of its error, cached when it names `cached_from`, and whether resume grades it
    again (by `next_attempt`'s default rule).

    >>> run_state("t/m/a/r1", {"patch_result": {"status": "passed"},
    ...     "guard": {"checked": True, "flags": [{"kind": "sanitizer"}]}}).outcome
    'flagged'
    >>> s = run_state("t/m/a/r2", {"patch_result": {"status": "error",
    ...     "error_msg": "Timeout (3s)"}, "cached_from": "t/m/a/r1"})
    >>> s.outcome, s.error_kind, s.cached, s.retry
    ('error', 'timeout', True, False)
    """
    patch, runtime = doc.get("patch_result"), doc.get("runtime_result")
    said = patch.get("status") if isinstance(patch, dict) else None
    status: Status = "passed" if said == "passed" else "failed" if said == "failed" else "error"
    message = patch.get("error_msg") if isinstance(patch, dict) else None
    kind = error_kind_of(
        status, message, runtime.get("error_kind") if isinstance(runtime, dict) else None
    )
    outcome: Outcome = status
    if status == "passed" and flag_kinds(doc.get("guard")):
        outcome = "flagged"
    attempts = doc.get("attempts")
    made = attempts if isinstance(attempts, int) and not isinstance(attempts, bool) else 1
    again = next_attempt(
        status,
        max(made, 1),
        force=False,
        retry=True,
        max_attempts=max_attempts,
        kind=kind,
        kinds=RETRY_KINDS if retry_kinds is None else retry_kinds,
    )
    return RunState(
        folder=folder,
        outcome=outcome,
        error_kind=kind,
        cached=isinstance(doc.get("cached_from"), str),
        retry=again is not None,
    )


def batch_summary(
    *,
    previous: BatchSummary | None,
    command: BatchCommand,
    jobs: JobsFile,
    label: str | None,
    states: Iterable[RunState],
    results: str,
    retry: tuple[str, ...] = (),
) -> BatchSummary:
    """The summary of the folder `results` once `command` graded `jobs` (named `label`, or
    as `previous` was): the `previous` summary's commands and jobs files (a jobs file at the
    same path is replaced) with this one, and every run by the outcome its summary carries
    (`states`: every graded run of the folder); a run of a jobs file with no state is not
    yet graded. `resume` holds a command per jobs file with runs not graded or to be graded
    again, on the engine (and Ray cluster) of the last command that graded that file, with
    the options `retry` that chose the runs to grade again (`retry_options`).

    >>> from datetime import datetime, timezone
    >>> now = datetime(2026, 11, 30, 10, tzinfo=timezone.utc)
    >>> run = BatchCommand(ssegrade="1.0", engine="local", workers=2, containment="full",
    ...     jobs="jobs.jsonl", started_at=now, ended_at=now, interrupted=True)
    >>> jobs = JobsFile(path="jobs.jsonl", sha256="0" * 64, count=2,
    ...     runs=("t/m/a/r1", "t/m/a/r2"))
    >>> doc = batch_summary(previous=None, command=run, jobs=jobs, label=None,
    ...     states=[RunState(folder="t/m/a/r1", outcome="passed")], results="out")
    >>> doc.runs.passed, doc.runs.not_graded, doc.resume
    (('t/m/a/r1',), ('t/m/a/r2',), ('ssegrade batch jobs.jsonl --results out',))
    """
    graded = {state.folder: state for state in states}
    before = previous.jobs if previous is not None else ()
    files = (*(f for f in before if f.path != jobs.path), jobs)
    commands = (*(previous.commands if previous is not None else ()), command)
    lists: dict[Outcome, set[str]] = {kind: set() for kind in OUTCOMES}
    errors: dict[ErrorKind, list[str]] = {}
    for state in graded.values():
        lists[state.outcome].add(state.folder)
        if state.error_kind is not None:
            errors.setdefault(state.error_kind, []).append(state.folder)
    lists["not_graded"] = {run for f in files for run in f.runs if run not in graded}
    last = {c.jobs: c for c in commands}
    resume = tuple(
        _command(f.path, results, label, last.get(f.path, command))
        + "".join(f" {shlex.quote(option)}" for option in retry)
        for f in files
        if f.path != PYTHON_JOBS and any(run not in graded or graded[run].retry for run in f.runs)
    )
    return BatchSummary(
        label=label if label is not None else previous.label if previous is not None else None,
        ssegrade=_distinct(c.ssegrade for c in commands),
        engines=_distinct(c.engine for c in commands),
        ray=_distinct(c.ray for c in commands if c.ray is not None),
        containment=_distinct(c.containment for c in commands),
        jobs=files,
        commands=commands,
        started_at=min(c.started_at for c in commands),
        ended_at=max(c.ended_at for c in commands),
        interrupted=command.interrupted,
        counts=BatchCounts(**{kind: len(found) for kind, found in lists.items()}),
        runs=BatchRuns(**{kind: tuple(sorted(found)) for kind, found in lists.items()}),
        errors={kind: tuple(sorted(found)) for kind, found in sorted(errors.items())},
        cached=tuple(sorted(s.folder for s in graded.values() if s.cached)),
        resume=resume,
    )


def _command(jobs: str, results: str, label: str | None, last: BatchCommand) -> str:
    """The command that grades what is left of `jobs`, on the engine (and Ray cluster) of
    the `last` command that graded it."""
    named = f" --label {shlex.quote(label)}" if label else ""
    engine = f" --engine {last.engine}" if last.engine != "local" else ""
    if last.ray is not None and last.ray != LOCAL_RAY:
        engine += f" --ray-address {shlex.quote(last.ray)}"
    elif last.ray is not None and last.engine != "ray":
        engine += " --cluster ray"
    return f"ssegrade batch {shlex.quote(jobs)} --results {shlex.quote(results)}{engine}{named}"


def _distinct(items: Iterable[_T]) -> tuple[_T, ...]:
    return tuple(dict.fromkeys(items))
