"""One batch's jobs as they are sorted, graded, cached and counted.

Interpreter layer, behind `interpreters.batch.run.run_batch` (SPEC §14). `BatchGrader` takes
the planned jobs with what their run folders hold: it skips the finished ones (unless they
are to be graded again: `--force`, or an `error` within `--max-attempts`), reuses the grades
of identical jobs, hands the rest to an engine, and writes each run's `summary.json` (or its
cached folder) as its grading ends; every job's outcome is kept, for the progress lines, the
last line and `batch.json`.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from interpreters.batch.driving import drive
from interpreters.batch.engines import (
    Done,
    Engine,
    EngineName,
    GradeFunction,
    Landing,
    Work,
    make_engine,
)
from interpreters.batch.jobs import Planned
from interpreters.batch.outcomes import JobOutcome, Retry, job_verdict
from interpreters.batch.progress import Reporter
from interpreters.real.resultsfolder.holding import FolderHeld, Hold
from interpreters.real.resultsfolder.private import FolderRefused
from interpreters.real.resultsfolder.runs import (
    SUMMARY,
    Found,
    RunFolders,
    summary_error_kind,
    summary_status,
)
from interpreters.real.resultsfolder.writer import GUARD_NAME, parse_guard
from interpreters.real.runner.options import ScriptOptions
from ssegrade import PatchResult, Status
from ssegrade.batch import (
    Tally,
    cached_result,
    earlier_attempts,
    next_attempt,
    summary_document,
)
from ssegrade.internal.result import ErrorKind

__all__ = ["BatchGrader"]


def _attempts(summary: Mapping[str, Any]) -> int:
    found = summary.get("attempts")
    return found if isinstance(found, int) and not isinstance(found, bool) and found > 0 else 1


@dataclass
class BatchGrader:
    """The jobs of one batch, from sorting to their summaries."""

    folders: RunFolders
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
    holds: dict[int, Hold] = field(default_factory=dict)
    lost: set[int] = field(default_factory=set)
    attempts: dict[int, int] = field(default_factory=dict)
    """The attempt number of a job graded again, by its line."""
    earlier: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """What a job graded again keeps of its earlier attempts, by its line."""
    capacity: int | None = None
    """Gradings at a time on the engine, once one is made."""

    # ------------------------------------------------------------------ before running

    def sort(
        self, looked: list[tuple[Planned, Found]], *, cache: bool, again: Retry
    ) -> list[Planned]:
        """Skip what is done (unless `again` grades it again) or held by another grading,
        find cache hits (none in earlier runs when forced: those are graded again); the jobs
        to grade (one per digest when caching: the others follow it)."""
        fresh: list[Planned] = []
        for job, found in looked:
            if found.held:
                self.held(job)
                continue
            if found.summary is not None and found.done(job.digest):
                status = summary_status(found.summary)
                attempt = next_attempt(
                    status,
                    _attempts(found.summary),
                    force=again.force,
                    retry=again.retry,
                    max_attempts=again.max_attempts,
                    kind=summary_error_kind(found.summary),
                    kinds=again.kinds,
                )
                if attempt is None:
                    kind = summary_error_kind(found.summary)
                    self.finish(job, "skipped", status, error_kind=kind, doc=found.summary)
                    continue
                self.attempts[job.line] = attempt
                if attempt > 1:
                    self.earlier[job.line] = earlier_attempts(found.summary)
            fresh.append(job)
        if not cache:
            return fresh
        index = {} if again.force else self.index()
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
            scripts=self.scripts,
            image=job.image,
            network=job.job.script_network,
        )

    # ------------------------------------------------------------------ while running

    def grade(
        self,
        todo: list[Planned],
        engine: EngineName,
        grade: GradeFunction,
        workers: int | None,
        ray_address: str | None,
        containers: Callable[[Landing], Engine] | None = None,
    ) -> bool:
        """Grade `todo` on the engine (`containers` makes a container engine); whether it
        was interrupted."""
        works = [self.work(job) for job in todo]
        if not works:
            return False
        landing = Landing(self.folders.token, self.holds)
        if containers is not None:
            running = containers(landing)
        else:
            running = make_engine(engine, grade, workers, ray_address, landing)
        self.capacity = running.capacity
        try:
            driven = drive(
                running,
                works,
                self.on_done,
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
        source = job.folder.relative_to(self.folders.root).as_posix()
        held = self.holds.pop(done.key)
        try:
            attempt = self.attempts.get(job.line, 1)
            doc = summary_document(
                job.task,
                job.job,
                job.run_id,
                done.result,
                job.digest,
                guard=done.guard,
                containment=done.containment,
                attempts=attempt,
            )
            if job.line in self.earlier:  # every attempt stays on record
                doc["earlier_attempts"] = self.earlier[job.line]
            self.folders.write(held, SUMMARY, _json(doc))
            held.unmark()
        finally:
            held.release()
        status = done.result.patch_result.status
        kind = summary_error_kind(doc)
        self.finish(
            job, "graded", status, seconds=done.seconds, attempt=attempt, error_kind=kind, doc=doc
        )
        if status == "error" and waiting:
            return [self.work(waiting.popleft())]
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
            mode = doc.get("containment")
            summary = summary_document(
                job.task,
                job.job,
                job.run_id,
                result,
                job.digest,
                source,
                guard=parse_guard(self.folders.read(source, GUARD_NAME)),  # same patch, same flags
                containment=mode if mode in ("full", "container", "weak") else None,
            )
            self.folders.write(held, SUMMARY, _json(summary))
            held.unmark()
        finally:
            held.release()
        self.finish(job, "cached", patch.status, cached_from=source, doc=summary)
        return True

    def killed(self, key: int) -> None:
        """A grading killed by the second interrupt: its folder is removed (the last line
        counts them)."""
        job = self.by_key.get(key)
        held = self.holds.pop(key, None)
        if job is None or held is None or any(o.folder == job.folder for o in self.outcomes):
            return
        self.folders.remove(held)
        self.outcomes.append(JobOutcome(job.label, job.folder, "killed", None, line=job.line))

    def held(self, job: Planned) -> None:
        """A job whose run folder another live grading holds: not graded here."""
        self.tally.add("skipped", "error")
        self.outcomes.append(JobOutcome(job.label, job.folder, "held", None, line=job.line))
        self.reporter.finished(
            self.tally, f"held {job.label} (being written by another grading)", notable=True
        )

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
        attempt: int = 1,
        error_kind: ErrorKind | None = None,
        doc: Mapping[str, Any] | None = None,
    ) -> None:
        """Count one finished job and say so: its verdict (with the patch guard's flags), its
        run folder, how long it took (or where its grade comes from), and why it
        did not pass (its summary `doc`'s `error_msg`)."""
        self.tally.add(outcome, status)
        self.outcomes.append(
            JobOutcome(job.label, job.folder, outcome, status, cached_from, job.line, error_kind)
        )
        if outcome == "graded":
            again = f", attempt {attempt}" if attempt > 1 else ""
            detail = f"({seconds or 0.0:.1f} s{again})"
        elif outcome == "cached":
            detail = f"(cached from {cached_from})"
        else:
            detail = "(already graded)"
        verdict, reason = job_verdict(status, doc)
        self.reporter.finished(
            self.tally,
            f"{verdict} {job.label} {detail}{reason}",
            notable=status != "passed" and outcome != "skipped",
        )


def _json(doc: Mapping[str, Any]) -> bytes:
    return json.dumps(doc, indent=1).encode() + b"\n"
