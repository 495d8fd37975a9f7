"""`run_batch`: grade many recorded patches into run folders, resuming and reusing grades.

Interpreter layer (SPEC §14). The jobs are checked first (nothing runs while one is bad); each
job then lands in `RESULTS/<task>/<model…>/<agent>/<run id>/`:

- a folder whose `summary.json` has the job's digest is skipped; another digest is refused
  unless `force`;
- a job whose digest an earlier graded run in RESULTS has is cached: its grade is reused and
  `cached_from` names that run folder (`cache=False` grades it again);
- every other job is graded by the engine. While a folder is being written it holds a
  `.incomplete` marker, removed once `summary.json` (written last, atomically) is there; a
  folder with the marker and no summary is the leftover of a crash and is graded again.
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from interpreters.batch.driving import drive
from interpreters.batch.engines import (
    Done,
    EngineName,
    GradeFunction,
    Work,
    check_engine,
    make_engine,
)
from interpreters.batch.jobs import (
    BadJobs,
    Planned,
    check_runner,
    plan_jobs,
    read_jobs,
    validate_jobs,
)
from interpreters.batch.progress import Reporter, make_reporter
from interpreters.grading import grade_patch
from interpreters.real import files
from interpreters.script_options import ScriptOptions
from ssegrade import PatchResult, Status
from ssegrade.batch import Job, Tally, cached_result, summary_document

__all__ = ["INCOMPLETE", "BatchReport", "JobOutcome", "run_batch"]

INCOMPLETE = ".incomplete"
"""The marker file of a run folder being written."""

SUMMARY = "summary.json"

Outcome = Literal["graded", "cached", "skipped", "killed"]


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """What became of one job: its run folder, how it ended and its status (None: killed)."""

    label: str
    folder: Path
    outcome: Outcome
    status: Status | None
    cached_from: str | None = None


@dataclass(frozen=True, slots=True)
class BatchReport:
    """What a batch did: the counts, one outcome per job, whether it was interrupted."""

    tally: Tally
    jobs: tuple[JobOutcome, ...]
    interrupted: bool
    seconds: float

    @property
    def exit_code(self) -> int:
        """130 when interrupted, 1 when a job could not be graded (`error`), else 0."""
        if self.interrupted:
            return 130
        return 1 if self.tally.ungraded else 0

    @property
    def last_line(self) -> str:
        """`N graded, P passed, F failed, E error, C cached, S skipped in T s`."""
        return self.tally.line(self.seconds)


def _default_grade() -> GradeFunction:
    return grade_patch


def run_batch(
    jobs: Path | Iterable[Job | Mapping[str, Any]],
    results: Path,
    *,
    base: Path | None = None,
    workers: int | None = None,
    engine: EngineName = "local",
    ray_address: str | None = None,
    cache: bool = True,
    force: bool = False,
    timeout: int = 3600,
    script_timeout: int | None = None,
    runner_user: str | None = None,
    reporter: Reporter | None = None,
    grade: GradeFunction | None = None,
    scripts: ScriptOptions | None = None,
) -> BatchReport:
    """Grade every job into `results` (SPEC §14) and answer what happened.

    `jobs` is a JSON Lines jobs file (paths relative to it) or job lines given in Python
    (paths relative to `base`, default the current folder). Raises `BadJobs` (one line per
    problem) before anything runs when a job is invalid or its folder holds a grade with
    another digest (unless `force`), and `EngineUnavailable` when the engine cannot run.
    SIGINT (or SIGTERM): the first starts no new job, the second kills the running ones
    (their folders are removed); the report then says `interrupted`. `scripts`: the options
    of every job's scripts.
    """
    start = time.monotonic()
    check_engine(engine)
    if isinstance(jobs, Path):
        lines, where, base = read_jobs(jobs), str(jobs), jobs.absolute().parent
    else:
        lines, where, base = validate_jobs(jobs), "job", (base or Path.cwd()).absolute()
    try:
        results.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadJobs([f"results folder {results}: {exc.strerror}"]) from None
    results = results.absolute()
    planned = plan_jobs(lines, base, results, where=where)
    check_runner(runner_user)
    batch = _Batch(
        results,
        reporter or make_reporter(),
        Tally(total=len(planned)),
        timeout=timeout,
        script_timeout=script_timeout,
        runner_user=runner_user,
        scripts=scripts,
    )
    todo = batch.sort(planned, force=force, where=where, cache=cache)
    batch.reporter.begin(batch.tally)
    for job, source in batch.cache_hits:
        batch.write_cached(job, source)
    works = [batch.work(job) for job in todo]
    interrupted = False
    if works:
        running = make_engine(engine, grade or _default_grade(), workers, ray_address)
        try:
            driven = drive(
                running,
                works,
                batch.on_done,
                say=batch.reporter.note,
                tick=lambda: batch.reporter.tick(batch.tally),
                on_start=lambda work: _prepare(Path(work.results)),
            )
        finally:
            running.close()
        interrupted = driven.interrupted
        for key in driven.killed:
            batch.killed(key)
    report = BatchReport(batch.tally, tuple(batch.outcomes), interrupted, time.monotonic() - start)
    batch.reporter.end(report.last_line)
    return report


@dataclass
class _Batch:
    results: Path
    reporter: Reporter
    tally: Tally
    timeout: int
    script_timeout: int | None
    runner_user: str | None
    scripts: ScriptOptions | None = None
    outcomes: list[JobOutcome] = field(default_factory=list)
    cache_hits: list[tuple[Planned, str]] = field(default_factory=list)
    by_key: dict[int, Planned] = field(default_factory=dict)
    followers: dict[str, deque[Planned]] = field(default_factory=dict)

    # ------------------------------------------------------------------ before running

    def sort(
        self, planned: list[Planned], *, force: bool, where: str, cache: bool
    ) -> list[Planned]:
        """Skip what is done, refuse what holds another grade, find cache hits; the jobs to
        grade (one per digest when caching: the others follow it)."""
        refused: list[str] = []
        fresh: list[Planned] = []
        for job in planned:
            found = _summary(job.folder)
            if found is not None and found.get("digest") == job.digest:
                self.finish(job, "skipped", _status(found))
            elif (found is not None or _foreign(job.folder)) and not force:
                what = "a grade with another digest" if found is not None else "other files"
                refused.append(
                    f"{where}:{job.line}: {job.folder} holds {what} (--force grades it again)"
                )
            else:
                fresh.append(job)
        if refused:
            raise BadJobs(refused)
        if not cache:
            return fresh
        index = _graded_index(self.results)
        todo: list[Planned] = []
        for job in fresh:
            if job.digest in index:
                self.cache_hits.append((job, index[job.digest]))
            elif job.digest in self.followers:
                self.followers[job.digest].append(job)
            else:
                self.followers[job.digest] = deque()
                todo.append(job)
        return todo

    def work(self, job: Planned) -> Work:
        """Describe the job's grading (its folder is made ready when it starts)."""
        key = len(self.by_key)
        self.by_key[key] = job
        return Work(
            key=key,
            task=str(job.task_dir),
            patch=job.patch,
            repo=str(job.repo),
            results=str(job.folder),
            runtime=job.job.runtime(),
            timeout=self.timeout,
            script_timeout=self.script_timeout,
            runner_user=self.runner_user,
            scripts=self.scripts,
        )

    # ------------------------------------------------------------------ while running

    def on_done(self, done: Done) -> list[Work]:
        """Write the summary of a finished grading, then its followers' cached folders (or,
        when it ended in `error`, hand the next follower to the engine)."""
        job = self.by_key[done.key]
        if done.result is None:
            self.killed(done.key)
            return []
        _write(
            job.folder / SUMMARY,
            summary_document(
                job.task, job.job, job.run_id, done.result, job.digest, containment=done.containment
            ),
        )
        _unmark(job.folder)
        status = done.result.patch_result.status
        self.finish(job, "graded", status, seconds=done.seconds)
        waiting = self.followers.get(job.digest, deque())
        if status == "error" and waiting:
            return [self.work(waiting.popleft())]
        source = _relative(job.folder, self.results)
        while waiting:
            self.write_cached(waiting.popleft(), source)
        return []

    def write_cached(self, job: Planned, source: str) -> None:
        """Fill a cached job's folder from the graded run `source` (relative to results)."""
        graded = self.results / source
        doc = _summary(graded)
        assert doc is not None  # the index and on_done only name runs with a summary
        patch = PatchResult.model_validate(doc["patch_result"])
        runtime = doc.get("runtime_result") or {}
        result = cached_result(patch, job.job, bool(runtime.get("evaluator_timeout")))
        _prepare(job.folder)
        _write_bytes(job.folder / "result.json", result.to_json())
        try:
            patch_bytes = (graded / "final.patch").read_bytes()
        except OSError:
            patch_bytes = job.patch
        _write_bytes(job.folder / "final.patch", patch_bytes)
        mode = doc.get("containment") if doc.get("containment") in ("full", "weak") else None
        summary = summary_document(
            job.task, job.job, job.run_id, result, job.digest, source, containment=mode
        )
        _write(job.folder / SUMMARY, summary)
        _unmark(job.folder)
        self.finish(job, "cached", patch.status, cached_from=source)

    def killed(self, key: int) -> None:
        """A grading killed by the second interrupt: its folder is removed."""
        job = self.by_key.get(key)
        if job is None or any(o.folder == job.folder for o in self.outcomes):
            return
        files.remove_tree(job.folder)
        self.outcomes.append(JobOutcome(job.label, job.folder, "killed", None))
        self.reporter.note(f"killed {job.label}: its folder was removed")

    def finish(
        self,
        job: Planned,
        outcome: Literal["graded", "cached", "skipped"],
        status: Status,
        *,
        seconds: float | None = None,
        cached_from: str | None = None,
    ) -> None:
        """Count one finished job and say so."""
        self.tally.add(outcome, status)
        self.outcomes.append(JobOutcome(job.label, job.folder, outcome, status, cached_from))
        if outcome == "graded":
            detail = f"({seconds or 0.0:.1f} s)"
        elif outcome == "cached":
            detail = f"(cached from {cached_from})"
        else:
            detail = "(already graded)"

        self.reporter.finished(self.tally, f"{status} {job.label} {detail}")


# ---------------------------------------------------------------------------- folders


def _prepare(folder: Path) -> None:
    if folder.exists() or folder.is_symlink():
        files.remove_tree(folder)
    folder.mkdir(parents=True)
    (folder / INCOMPLETE).touch()


def _unmark(folder: Path) -> None:
    (folder / INCOMPLETE).unlink(missing_ok=True)


def _write(path: Path, doc: Mapping[str, Any]) -> None:
    _write_bytes(path, json.dumps(doc, indent=1).encode() + b"\n")


def _write_bytes(path: Path, data: bytes) -> None:
    files.atomic_write(path, data)


def _summary(folder: Path) -> dict[str, Any] | None:
    """The run folder's summary; None when it has none (or it is not a JSON object)."""
    try:
        with open(folder / SUMMARY, "rb") as handle:
            doc = json.load(handle)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _status(doc: Mapping[str, Any]) -> Status:
    patch = doc.get("patch_result")
    status = patch.get("status") if isinstance(patch, dict) else None
    return status if status in ("passed", "failed") else "error"


def _foreign(folder: Path) -> bool:
    """The folder holds something other than the leftover of an interrupted batch job."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return bool(names) and INCOMPLETE not in names


def _relative(folder: Path, results: Path) -> str:
    return folder.relative_to(results).as_posix()


def _graded_index(results: Path) -> dict[str, str]:
    """digest → run folder (relative) of every graded, non-error run under `results`."""
    index: dict[str, str] = {}
    for here, dirs, names in os.walk(results):
        if SUMMARY not in names:
            continue
        dirs[:] = []  # nothing below a run folder is a run
        folder = Path(here)
        if INCOMPLETE in names:
            continue
        doc = _summary(folder)
        if doc is None or doc.get("cached_from") is not None or _status(doc) == "error":
            continue
        digest = doc.get("digest")
        if isinstance(digest, str) and (folder / "result.json").is_file():
            index.setdefault(digest, _relative(folder, results))
    return index
