"""Image jobs checked and placed before anything runs: each image prepared once, its task
folder read out of it, the grading repo found in it, the digest made of the image's ID.

Interpreter layer. The counterpart of `interpreters.batch.jobs.plan_jobs` for jobs that name
an `image` (SPEC §14, Engines): `task` and `repo` are paths in the image (SSEBench's layout by
default: the task at `/ssebench`, the grading repo the image's `SSE_REPO_PATH`, else the
task's `source`); the patch is the host's. The digest covers the image ID (its task, repo and
toolchain), the paths graded in it, the patch bytes and ssegrade's version.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from pathlib import Path

from returns.pipeline import is_successful

from interpreters.batch.jobs import Planned, read_patch, ssegrade_version
from interpreters.engine.images import EngineFailed, Image, Images, scratch
from interpreters.real import files
from interpreters.real.taskfolder import load_task
from ssegrade import Task
from ssegrade.batch import (
    Job,
    JobProblem,
    duplicate_problems,
    job_digest,
    nested_problems,
    run_parts,
)

__all__ = ["REPO_ENV", "grading_repo", "plan_image_jobs"]

REPO_ENV = "SSE_REPO_PATH"
"""The variable of an image's environment that names its grading repo."""


def grading_repo(job: Job, task: Task, image: Image) -> str | None:
    """The grading repo of an image job, a path in the image: the job's `repo`, else the
    image's `SSE_REPO_PATH`, else the task's `source` (relative to the task folder)."""
    if job.repo is not None:
        return job.repo
    named = image.env.get(REPO_ENV)
    if named and named.startswith("/"):
        return named
    if task.source is None:
        return None
    return posixpath.normpath(posixpath.join(job.task, task.source))


def plan_image_jobs(
    jobs: Sequence[tuple[int, Job]], base: Path, results: Path, images: Images
) -> tuple[list[Planned], list[JobProblem]]:
    """Check every image job and place it under `results`: the jobs that can run, and every
    problem of the others (its image cannot be had, its task cannot be read out of it, its
    patch, no grading repo, a run folder another line has or one inside another's)."""
    version = ssegrade_version()
    tasks: dict[tuple[str, str], Task | str] = {}
    planned: list[Planned] = []
    problems: list[JobProblem] = []
    for line, job in jobs:
        assert job.image is not None
        found: list[str] = []
        patch = read_patch(base / job.patch, found)
        build = None if job.build is None else (base / job.build).absolute()
        image = images.prepare(job.image, base, build)
        task: Task | str | None = None
        if isinstance(image, str):
            found.append(image)
        else:
            key = (image.id, job.task)
            if key not in tasks:
                tasks[key] = _task(images, image, job.task)
            task = tasks[key]
            if isinstance(task, str):
                found.append(task)
        repo = None
        if isinstance(image, Image) and isinstance(task, Task):
            repo = grading_repo(job, task, image)
            if repo is None:
                found.append(f"repo: no grading repo: give `repo`, set {REPO_ENV} in the image")
        problems += [JobProblem(line, why) for why in found]
        if found or patch is None or repo is None:
            continue
        assert isinstance(image, Image)
        assert isinstance(task, Task)
        where = f"image:{image.id}:{job.task}"
        digest = job_digest(where, patch, f"image-path:{repo}", version)
        run_id = job.run_id or digest[:12]
        parts = run_parts(task.id, job.model, job.agent, run_id)
        planned.append(
            Planned(
                line, job, task, Path(job.task), patch, Path(repo), run_id, digest, results, parts,
                image=image.id,
            )
        )  # fmt: skip
    keys = [(p.line, (p.task.id, p.job.model, p.job.agent, p.run_id)) for p in planned]
    problems += duplicate_problems(keys)
    problems += nested_problems([(p.line, p.parts) for p in planned])
    return planned, problems


def _task(images: Images, image: Image, path: str) -> Task | str:
    """The task whose folder is `path` in `image`, read from a copy out of it; or why not."""
    folder = scratch()
    try:
        try:
            copy = images.copy_out(image, path, folder)
        except EngineFailed as exc:
            return f"task: {path} cannot be read out of the image ({exc})"
        loaded = load_task(copy)
        if not is_successful(loaded):
            return f"task: {path} in the image: {loaded.failure().message}"
        return loaded.unwrap()
    finally:
        files.remove_tree(folder)
