"""`run_batch`: grade many recorded patches into run folders, resuming and reusing grades.

Interpreter layer (SPEC §14). The jobs are checked first (nothing runs while one is bad); each
job then lands in `RESULTS/<task>/<model…>/<agent>/<run id>/` (private, see `folders`):

- a folder whose `summary.json` has the job's digest is skipped, unless it is to be graded
  again (`force`, or an `error` grade within `max_attempts`); another digest is refused
  unless `force`; a folder another live grading holds is skipped with a line;
- a job whose digest an earlier graded run in RESULTS has is cached: its grade is reused and
  `cached_from` names that run folder (`cache=False` grades it again);
- every other job is graded by the engine. Its folder is held by the driver from the moment
  its grading starts until its `summary.json` (written last, atomically) is there, and by the
  worker that grades it; meanwhile it holds a `.incomplete` marker. A folder with the marker
  is the leftover of a crash and is graded again, from a cleared folder.

When the batch ends, or is interrupted, `RESULTS/batch.json` answers for the whole folder
(`folder_summary`).
"""

from __future__ import annotations

import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from interpreters.app.grading import HeldGrade
from interpreters.batch.driving import running_gradings
from interpreters.batch.engines import (
    Engine,
    EngineName,
    EngineUnavailable,
    GradeFunction,
    Landing,
    check_engine,
    make_container_engine,
)
from interpreters.batch.folder_summary import BATCH_SUMMARY, write_folder_summary
from interpreters.batch.grader import BatchGrader
from interpreters.batch.jobs import (
    JobProblem,
    Planned,
    check_runner,
    jobs_digest,
    plan_jobs,
    read_jobs,
    refuse,
    ssegrade_version,
    validate_jobs,
)
from interpreters.batch.outcomes import JobOutcome, Retry
from interpreters.batch.progress import Reporter, make_reporter
from interpreters.real.resultsfolder.holding import INCOMPLETE
from interpreters.real.resultsfolder.private import FolderRefused
from interpreters.real.resultsfolder.runs import Found, RunFolders
from interpreters.real.runner import ContainmentRefused, choose
from interpreters.real.runner.options import ScriptOptions
from ssegrade.batch import (
    PYTHON_JOBS,
    RETRY_KINDS,
    BatchCommand,
    Job,
    JobsFile,
    Tally,
    engine_problems,
    ray_cluster,
)
from ssegrade.internal.result import ErrorKind

if TYPE_CHECKING:
    from interpreters.engine.containers import ContainerSettings
    from interpreters.engine.images import Images

__all__ = ["BATCH_SUMMARY", "INCOMPLETE", "BatchReport", "JobOutcome", "run_batch"]


@dataclass(frozen=True, slots=True)
class BatchReport:
    """What a batch did: the counts, one outcome per job, whether it was interrupted."""

    tally: Tally
    jobs: tuple[JobOutcome, ...]
    interrupted: bool
    seconds: float

    @property
    def exit_code(self) -> int:
        """130 when interrupted, 1 when a job was not graded (`error`, its worker died)."""
        lost = any(job.outcome == "killed" for job in self.jobs)
        return 130 if self.interrupted else 1 if self.tally.ungraded or lost else 0

    @property
    def last_line(self) -> str:
        """`N graded, P passed, F failed, E error, C cached, S skipped in T s`, and when
        interrupted, how many running gradings were killed, how many jobs never started, and
        that the same command resumes."""
        line = self.tally.line(self.seconds)
        if not self.interrupted:
            return line
        killed = sum(1 for job in self.jobs if job.outcome == "killed")
        never = max(self.tally.total - self.tally.done - killed, 0)
        parts = [f"{running_gradings(killed)} killed, folders removed"] if killed else []
        parts.append(f"{never} job{'' if never == 1 else 's'} never started")
        return f"{line}; interrupted: {', '.join(parts)}; the same command resumes"


@dataclass(frozen=True, slots=True)
class _Options:
    engine: EngineName
    workers: int | None
    ray_address: str | None
    cache: bool
    again: Retry
    label: str | None
    scripts: ScriptOptions | None
    containers: ContainerSettings | None = None
    images: Images | None = None
    on_ray: bool = False


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
    retry: bool = True,
    max_attempts: int = 2,
    retry_kinds: Iterable[ErrorKind] = RETRY_KINDS,
    timeout: int = 3600,
    script_timeout: int | None = None,
    runner_user: str | None = None,
    label: str | None = None,
    reporter: Reporter | None = None,
    checks: bool = False,
    grade: GradeFunction | None = None,
    scripts: ScriptOptions | None = None,
    containers: ContainerSettings | None = None,
    on_ray: bool = False,
) -> BatchReport:
    """Grade every job into `results` (SPEC §14) and answer what happened.

    `jobs` is a JSON Lines jobs file (paths relative to it) or job lines given in Python
    (paths relative to `base`, default the current folder). A run already graded is skipped,
    unless `force` (every run is graded again) or its grade is an `error` of one of the
    `retry_kinds` (default: `infrastructure`, `grader`) and it took fewer than
    `max_attempts` attempts (unless `retry` is off). Raises `BadJobs` (one line per
    problem, every problem of every job at once) before anything runs when a job is invalid,
    its folder holds a grade with another digest (unless `force`) or is not a run folder, or
    `results` is not private (a link, another user's, writable by group or others);
    `EngineUnavailable` when the engine cannot run. A run folder another live grading holds
    is skipped with a line. SIGINT (or SIGTERM): the first starts no new job, the second kills the
    running ones (their folders are removed); the report then says `interrupted`. Once jobs
    ran, `results/batch.json` (named `label`) says what the batch did, also when it was
    interrupted. `reporter` hears of each job (default: one line per job on stderr, or a
    live bar on a terminal); with `checks`, each grading also says each check on stderr.
    `scripts`: the options of every job's scripts. With `engine` `podman` or `docker`,
    every job names an `image` and is graded in a fresh container of it, as `containers`
    says (`interpreters.engine.containers`); a job's line that names one with another
    engine is a problem of its line; with `on_ray` each container is a Ray task on the
    node Ray picks (the cluster at `ray_address`, or a local Ray).
    """
    start = time.monotonic()
    started_at = datetime.now(UTC)
    check_engine(engine, ray_address, on_ray=on_ray)
    if isinstance(jobs, Path):
        lines, problems, digest = read_jobs(jobs)
        where, base = str(jobs), jobs.absolute().parent
    else:
        (lines, problems), where = validate_jobs(jobs), "job"
        digest = jobs_digest(lines)
        base = (base or Path.cwd()).absolute()
    runner = check_runner(runner_user)
    results = results.absolute()
    problems += engine_problems(lines, engine)
    images = None
    if engine in ("podman", "docker"):
        images, planned, more = _plan_images(engine, lines, base, results, containers)
    else:  # an image job here is a bad line already
        planned, more = plan_jobs(
            [(n, j) for n, j in lines if j.image is None], base, results, runner
        )
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
        options = _Options(
            engine,
            workers,
            ray_address,
            cache,
            Retry(force, retry, max_attempts, frozenset(retry_kinds)),
            label,
            scripts,
            containers,
            images,
            on_ray,
        )
        batch = BatchGrader(
            folders,
            reporter or make_reporter(),
            Tally(total=len(looked)),
            timeout=timeout,
            script_timeout=script_timeout,
            runner_user=runner_user,
            scripts=scripts,
        )
        interrupted = True  # unless it ends
        try:
            interrupted = _grade(batch, looked, options, grade or HeldGrade(folders.token, checks))
        finally:
            jobs_file = JobsFile(
                path=str(jobs.absolute()) if isinstance(jobs, Path) else PYTHON_JOBS,
                sha256=digest,
                count=len(planned),
                runs=tuple(job.folder.relative_to(results).as_posix() for job in planned),
            )
            _write_summary(batch, options, jobs_file, started_at, interrupted=interrupted)
    finally:
        if folders is not None:
            folders.close()
        if images is not None:
            images.close()
    report = BatchReport(batch.tally, tuple(batch.outcomes), interrupted, time.monotonic() - start)
    batch.reporter.end(report.last_line)
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


def _grade(
    batch: BatchGrader,
    looked: list[tuple[Planned, Found]],
    options: _Options,
    grade: GradeFunction,
) -> bool:
    """Sort the jobs, fill the cached ones, grade the others; whether it was interrupted."""
    try:
        todo = batch.sort(looked, cache=options.cache, again=options.again)
        batch.reporter.begin(batch.tally)
        todo += [job for job, source in batch.cache_hits if not batch.write_cached(job, source)]
        factory = None
        if options.images is not None and options.containers is not None:
            todo.sort(key=lambda job: job.image or "")  # each image's jobs together
            waiting = [job for queue in batch.followers.values() for job in queue]
            pending = Counter(job.image or "" for job in [*todo, *waiting])
            factory = _container_factory(options, pending)
        try:
            return batch.grade(
                todo, options.engine, grade, options.workers, options.ray_address, factory
            )
        finally:
            if options.images is not None and options.containers is not None:
                budget = options.containers.image_budget
                if budget is not None:
                    options.images.trim(budget, keep=set())
    finally:
        batch.release()


def _plan_images(
    engine: EngineName,
    lines: list[tuple[int, Job]],
    base: Path,
    results: Path,
    containers: ContainerSettings | None,
) -> tuple[Images, list[Planned], list[JobProblem]]:
    """Prepare the images of the image jobs and place them (`interpreters.engine`)."""
    # Imported here: the container engine stands on the batch's own modules.
    from interpreters.engine.images import EngineFailed, Images  # noqa: PLC0415
    from interpreters.engine.planning import plan_image_jobs  # noqa: PLC0415

    if containers is None or containers.engine != engine:
        raise EngineUnavailable(f"--engine {engine}: no ssegrade bundle for its containers")
    try:
        images = Images(engine, uuid.uuid4().hex[:12])
    except EngineFailed as exc:
        raise EngineUnavailable(str(exc)) from None
    wanted = [(line, job) for line, job in lines if job.image is not None]
    planned, problems = plan_image_jobs(wanted, base, results, images)
    return images, planned, problems


def _container_factory(options: _Options, pending: Counter[str]) -> Callable[[Landing], Engine]:
    """What makes the container engine of a batch, once its run folders are held."""
    settings, images = options.containers, options.images
    assert settings is not None
    assert images is not None
    ray = (options.on_ray, options.ray_address)
    return lambda landing: make_container_engine(
        settings, images, options.workers, landing, options.scripts, pending, ray
    )


def _write_summary(
    batch: BatchGrader,
    options: _Options,
    jobs: JobsFile,
    started_at: datetime,
    *,
    interrupted: bool,
) -> None:
    """Write `batch.json` for the whole folder (`folder_summary`)."""
    command = BatchCommand(
        ssegrade=ssegrade_version(),
        engine=options.engine,
        ray=ray_cluster(options.ray_address) if options.engine == "ray" or options.on_ray else None,
        workers=batch.capacity or options.workers or os.cpu_count() or 1,
        containment=_containment(options.scripts),
        jobs=jobs.path,
        started_at=started_at,
        ended_at=datetime.now(UTC),
        interrupted=interrupted,
    )
    again = options.again
    write_folder_summary(
        batch.folders,
        command,
        jobs,
        options.label,
        retry_kinds=again.kinds if again.retry else frozenset(),
        max_attempts=again.max_attempts,
    )


def _containment(scripts: ScriptOptions | None) -> str:
    """The containment this machine gives the batch's scripts (`full`, `weak`), or why none."""
    try:
        return choose((scripts or ScriptOptions()).containment).mode
    except ContainmentRefused as exc:
        return f"refused: {exc}"
