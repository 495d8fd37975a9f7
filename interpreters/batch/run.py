"""`run_batch`: grade many recorded patches into run folders, resuming and reusing grades.

Interpreter layer (SPEC §14). The jobs are checked first (nothing runs while one is bad); each
job then lands in `RESULTS/<task>/<model…>/<agent>/<run id>/` (`interpreters.batch.folders`:
private, reached without following a link, only our own files believed):

- a folder whose `summary.json` has the job's digest is skipped; another digest is refused
  unless `force`; a folder another live grading holds is skipped with a line;
- a job whose digest an earlier graded run in RESULTS has is cached: its grade is reused and
  `cached_from` names that run folder (`cache=False` grades it again);
- every other job is graded by the engine. Its folder is held by the driver from the moment
  its grading starts until its `summary.json` (written last, atomically) is there, and by the
  worker that grades it; meanwhile it holds a `.incomplete` marker. A folder with the marker
  is the leftover of a crash and is graded again, from a cleared folder.
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
from interpreters.batch.folders import SUMMARY, Found, RunFolders, summary_status
from interpreters.batch.jobs import (
    JobProblem,
    Planned,
    check_runner,
    plan_jobs,
    read_jobs,
    refuse,
    validate_jobs,
)
from interpreters.batch.progress import Reporter, make_reporter
from interpreters.grading import HeldGrade
from interpreters.real.holding import INCOMPLETE, FolderHeld, Hold
from interpreters.real.private import FolderRefused
from ssegrade import PatchResult, Status
from ssegrade.batch import Job, Tally, cached_result, summary_document

__all__ = ["INCOMPLETE", "BatchReport", "JobOutcome", "run_batch"]

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
) -> BatchReport:
    """Grade every job into `results` (SPEC §14) and answer what happened.

    `jobs` is a JSON Lines jobs file (paths relative to it) or job lines given in Python
    (paths relative to `base`, default the current folder). Raises `BadJobs` (one line per
    problem) before anything runs when a job is invalid, its folder holds a grade with
    another digest (unless `force`) or is not a run folder, or `results` is not private
    (a link, another user's, writable by group or others); `EngineUnavailable` when the
    engine cannot run. A run folder another live grading holds is skipped with a line.
    SIGINT: the first starts no new job, the second kills the running ones (their folders
    are removed); the report then says `interrupted`.
    """
    start = time.monotonic()
    check_engine(engine)
    if isinstance(jobs, Path):
        (lines, problems), where, base = read_jobs(jobs), str(jobs), jobs.absolute().parent
    else:
        (lines, problems), where = validate_jobs(jobs), "job"
        base = (base or Path.cwd()).absolute()
    runner = check_runner(runner_user)
    results = results.absolute()
    planned, more = plan_jobs(lines, base, results, runner)
    problems += more
    head: list[str] = []
    folders: RunFolders | None = None
    if not problems or os.path.lexists(results):  # a bad batch makes no results folder
        try:
            folders = RunFolders(results)
        except FolderRefused as exc:
            head.append(f"results folder {exc}")
    try:
        looked = _look(folders, planned, force=force, problems=problems)
        refuse(head, problems, where)
        assert folders is not None
        report = _run(
            folders,
            looked,
            _Options(engine, workers, ray_address, cache, timeout, script_timeout, runner_user),
            reporter or make_reporter(),
            grade,
            start,
        )
    finally:
        if folders is not None:
            folders.close()
    return report


def _look(
    folders: RunFolders | None,
    planned: list[Planned],
    *,
    force: bool,
    problems: list[JobProblem],
) -> list[tuple[Planned, Found]]:
    """What each job's run folder holds now; a folder that holds another grade (unless
    `force`) or is no run folder is one more problem of its line."""
    looked: list[tuple[Planned, Found]] = []
    if folders is None:
        return looked
    for job in planned:
        try:
            found = folders.look(job.parts)
        except FolderRefused as exc:
            problems.append(JobProblem(job.line, str(exc)))
            continue
        problem = found.refusal(job.folder, job.digest, force=force)
        if problem is not None:
            problems.append(JobProblem(job.line, problem))
        looked.append((job, found))
    return looked


@dataclass(frozen=True, slots=True)
class _Options:
    engine: EngineName
    workers: int | None
    ray_address: str | None
    cache: bool
    timeout: int
    script_timeout: int | None
    runner_user: str | None


def _run(
    folders: RunFolders,
    looked: list[tuple[Planned, Found]],
    options: _Options,
    reporter: Reporter,
    grade: GradeFunction | None,
    start: float,
) -> BatchReport:
    batch = _Batch(
        folders,
        reporter,
        Tally(total=len(looked)),
        timeout=options.timeout,
        script_timeout=options.script_timeout,
        runner_user=options.runner_user,
    )
    try:
        todo = batch.sort(looked, cache=options.cache)
        batch.reporter.begin(batch.tally)
        todo += [job for job, source in batch.cache_hits if not batch.write_cached(job, source)]
        interrupted = batch.grade(
            todo,
            options.engine,
            grade or HeldGrade(folders.token),
            options.workers,
            options.ray_address,
        )
    finally:
        batch.release()
    report = BatchReport(batch.tally, tuple(batch.outcomes), interrupted, time.monotonic() - start)
    batch.reporter.end(report.last_line)
    return report


@dataclass
class _Batch:
    folders: RunFolders
    reporter: Reporter
    tally: Tally
    timeout: int
    script_timeout: int | None
    runner_user: str | None
    outcomes: list[JobOutcome] = field(default_factory=list)
    cache_hits: list[tuple[Planned, str]] = field(default_factory=list)
    by_key: dict[int, Planned] = field(default_factory=dict)
    followers: dict[str, deque[Planned]] = field(default_factory=dict)
    holds: dict[int, Hold] = field(default_factory=dict)
    lost: set[int] = field(default_factory=set)

    # ------------------------------------------------------------------ before running

    def sort(self, looked: list[tuple[Planned, Found]], *, cache: bool) -> list[Planned]:
        """Skip what is done or held by another grading, find cache hits; the jobs to grade
        (one per digest when caching: the others follow it)."""
        fresh: list[Planned] = []
        for job, found in looked:
            if found.held:
                self.held(job)
            elif found.summary is not None and found.done(job.digest):
                self.finish(job, "skipped", summary_status(found.summary))
            else:
                fresh.append(job)
        if not cache:
            return fresh
        index = self.index()
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

    def index(self) -> dict[str, str]:
        """digest → run folder (relative) of every graded, non-error run of ours."""
        index: dict[str, str] = {}
        for relative, doc in self.folders.graded():
            digest = doc.get("digest")
            usable = doc.get("cached_from") is None and summary_status(doc) != "error"
            if usable and isinstance(digest, str):
                index.setdefault(digest, relative)
        return index

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
        )

    # ------------------------------------------------------------------ while running

    def grade(
        self,
        todo: list[Planned],
        engine: EngineName,
        grade: GradeFunction,
        workers: int | None,
        ray_address: str | None,
    ) -> bool:
        """Grade `todo` on the engine; whether it was interrupted."""
        works = [self.work(job) for job in todo]
        if not works:
            return False
        running = make_engine(engine, grade, workers, ray_address)
        try:
            driven = drive(
                running,
                works,
                self.on_done,
                say=self.reporter.note,
                tick=lambda: self.reporter.tick(self.tally),
                on_start=self.start,
            )
        finally:
            running.close()
        for key in driven.killed:
            self.killed(key)
        return driven.interrupted

    def start(self, work: Work) -> None:
        """Make the job's run folder ready and hold it, just before its grading starts; a
        folder another grading took meanwhile is left to it (the worker then writes
        nothing)."""
        job = self.by_key[work.key]
        try:
            self.holds[work.key] = self.folders.prepare(job.parts)
        except (FolderHeld, FolderRefused, OSError) as exc:
            self.lost.add(work.key)
            self.reporter.note(f"not graded {job.label}: {exc}")

    def on_done(self, done: Done) -> list[Work]:
        """Write the summary of a finished grading, then its followers' cached folders (or,
        when it ended in `error` or another grading took its folder, hand the next follower
        to the engine)."""
        job = self.by_key[done.key]
        waiting = self.followers.get(job.digest, deque())
        if done.key in self.lost:
            self.held(job)
            return [self.work(waiting.popleft())] if waiting else []
        if done.result is None:
            self.killed(done.key)
            return []
        held = self.holds.pop(done.key)
        try:
            doc = summary_document(job.task, job.job, job.run_id, done.result, job.digest)
            self.folders.write(held, SUMMARY, _json(doc))
            held.unmark()
        finally:
            held.release()
        status = done.result.patch_result.status
        self.finish(job, "graded", status, seconds=done.seconds)
        if status == "error" and waiting:
            return [self.work(waiting.popleft())]
        source = job.folder.relative_to(self.folders.root).as_posix()
        while waiting:
            follower = waiting.popleft()
            if not self.write_cached(follower, source):
                return [self.work(follower)]
        return []

    def write_cached(self, job: Planned, source: str) -> bool:
        """Fill a cached job's folder from the graded run `source` (relative to results);
        False when `source` holds no summary of ours any more: the job is to be graded."""
        doc = self.folders.summary(source)
        if doc is None:
            return False
        try:
            held = self.folders.prepare(job.parts)
        except (FolderHeld, FolderRefused, OSError) as exc:
            self.reporter.note(f"not graded {job.label}: {exc}")
            self.held(job)
            return True
        try:
            patch = PatchResult.model_validate(doc["patch_result"])
            runtime = doc.get("runtime_result") or {}
            result = cached_result(patch, job.job, bool(runtime.get("evaluator_timeout")))
            self.folders.write(held, "result.json", result.to_json())
            patch_bytes = self.folders.read(source, "final.patch")
            self.folders.write(
                held, "final.patch", job.patch if patch_bytes is None else patch_bytes
            )
            summary = summary_document(job.task, job.job, job.run_id, result, job.digest, source)
            self.folders.write(held, SUMMARY, _json(summary))
            held.unmark()
        finally:
            held.release()
        self.finish(job, "cached", patch.status, cached_from=source)
        return True

    def killed(self, key: int) -> None:
        """A grading killed by the second interrupt: its folder is removed."""
        job = self.by_key.get(key)
        held = self.holds.pop(key, None)
        if job is None or held is None or any(o.folder == job.folder for o in self.outcomes):
            return
        self.folders.remove(held)
        self.outcomes.append(JobOutcome(job.label, job.folder, "killed", None))
        self.reporter.note(f"killed {job.label}: its folder was removed")

    def held(self, job: Planned) -> None:
        """A job whose run folder another live grading holds: not graded here."""
        self.tally.add("skipped", "error")
        self.outcomes.append(JobOutcome(job.label, job.folder, "held", None))
        self.reporter.finished(self.tally, f"held {job.label} (being written by another grading)")

    def release(self) -> None:
        """Let go of every run folder still held."""
        for held in self.holds.values():
            held.release()
        self.holds.clear()

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


def _json(doc: Mapping[str, Any]) -> bytes:
    return json.dumps(doc, indent=1).encode() + b"\n"
