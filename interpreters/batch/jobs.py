"""Reading a batch before anything runs: job lines checked on disk, digests, run folders.

Interpreter layer. The jobs file is parsed by the pure `ssegrade.batch`; this module resolves
each job's paths (relative to the jobs file), loads its task, reads its patch, identifies its
grading repo and computes its digest. Every problem of every line is collected, so a bad batch
is reported whole and nothing is graded.
"""

from __future__ import annotations

import errno
import hashlib
import importlib.metadata
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from returns.pipeline import is_successful

from interpreters.app.setup import not_a_diff
from interpreters.real import git
from interpreters.real.runner import Runner, resolve_runner
from interpreters.real.taskfolder import load_task
from interpreters.real.untrusted import NotReadable, read_regular, task_reader, unreadable_by
from ssegrade import Task
from ssegrade.batch import (
    Job,
    JobProblem,
    describe_invalid,
    duplicate_problems,
    job_digest,
    nested_problems,
    parse_jobs,
    run_parts,
)
from ssegrade.internal.errors import SsegradeError

__all__ = [
    "BadJobs",
    "JobProblem",
    "Planned",
    "check_runner",
    "content_hash",
    "jobs_digest",
    "plan_jobs",
    "read_jobs",
    "read_patch",
    "refuse",
    "repo_identity",
    "ssegrade_version",
    "task_repo",
    "validate_jobs",
]

_CHUNK = 1 << 20


class BadJobs(SsegradeError):
    """The batch cannot run: one line per problem, each naming its job line."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = tuple(problems)


@dataclass(frozen=True, slots=True)
class Planned:
    """A job checked and placed: its task, patch bytes, grading repo, run id, digest and
    run folder (`parts` below `results`)."""

    line: int
    job: Job
    task: Task
    task_dir: Path
    patch: bytes
    repo: Path
    run_id: str
    digest: str
    results: Path
    parts: tuple[str, ...]
    """The run folder's components below `results`."""
    image: str | None = None
    """The ID of the image an image job is graded in (its `task_dir` and `repo` are then
    paths in the image)."""

    @property
    def folder(self) -> Path:
        """The run folder: `results/<task>/<model…>/<agent>/<run id>`."""
        return self.results.joinpath(*self.parts)

    @property
    def label(self) -> str:
        """`<task>/<model>/<agent>/<run id>`: how progress lines name the job."""
        return f"{self.task.id}/{self.job.model}/{self.job.agent}/{self.run_id}"


def read_jobs(path: Path) -> tuple[list[tuple[int, Job]], list[JobProblem], str]:
    """Parse a JSON Lines jobs file: its good lines, every problem of its bad ones, and the
    sha256 of its bytes; `BadJobs` when the file cannot be read or holds no job at all."""
    try:
        data = read_regular(path)
    except NotReadable as exc:
        raise BadJobs([f"{path}: cannot read the jobs file ({exc.why})"]) from None
    jobs, problems = parse_jobs(data)
    if not jobs and not problems:
        raise BadJobs([f"{path}: no jobs in the file"])
    return jobs, problems, hashlib.sha256(data).hexdigest()


def jobs_digest(jobs: Iterable[tuple[int, Job]]) -> str:
    """The sha256 of jobs given in Python: of their JSON lines, as a jobs file would hold."""
    return hashlib.sha256(
        b"".join(j.model_dump_json().encode() + b"\n" for _, j in jobs)
    ).hexdigest()


def validate_jobs(
    docs: Iterable[Job | Mapping[str, Any]],
) -> tuple[list[tuple[int, Job]], list[JobProblem]]:
    """Jobs given in Python (models or mappings of a job line), numbered from 1: the good
    ones and every problem of the others."""
    jobs: list[tuple[int, Job]] = []
    problems: list[JobProblem] = []
    for number, doc in enumerate(docs, start=1):
        try:
            jobs.append((number, doc if isinstance(doc, Job) else Job.model_validate(doc)))
        except ValidationError as exc:
            problems += [JobProblem(number, why) for why in describe_invalid(exc)]
    return jobs, problems


def check_runner(runner_user: str | None) -> Runner:
    """The runner account; `BadJobs` when it cannot be used (made when it is the default)."""
    found = resolve_runner(runner_user)
    if not is_successful(found):
        raise BadJobs([found.failure().message])
    return found.unwrap()


def task_repo(task: Task, task_dir: Path, runner: Runner) -> Path | str:
    """The grading repo a task names (its `source`), or why it cannot be graded: missing,
    or, as root, not wholly readable by the account the task speaks for (the task folder's
    owner; the runner when root owns it): the task names it, the operator did not, and its
    copy goes to the runner. A repo the operator names is read as it is."""
    if task.source is None:
        return "no grading repo: give `repo` or set `source` in the task's config.yaml"
    repo = (task_dir / task.source).absolute()
    if not repo.is_dir():
        return f"grading repo not found: {repo}"
    reader = task_reader(task_dir, runner.uid, runner.gid)
    if reader is not None:
        why = unreadable_by(repo, reader)
        if why is not None:
            return f"the task's source is not read as root: {why}"
    return repo


def ssegrade_version() -> str:
    """The version of ssegrade installed (`unknown` when it is not installed)."""
    try:
        return importlib.metadata.version("ssegrade")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def plan_jobs(
    jobs: Sequence[tuple[int, Job]], base: Path, results: Path, runner: Runner
) -> tuple[list[Planned], list[JobProblem]]:
    """Check every job on disk and place it under `results`: the jobs that can run, and
    every problem of the others: its task, its patch (a regular file, not a link, a diff
    unless empty), its
    grading repo (`task_repo` when the line names none), a run folder another line has, or
    one inside another line's."""
    version = ssegrade_version()
    tasks: dict[Path, tuple[Task, str] | str] = {}
    repos: dict[Path, str] = {}
    sources: dict[Path, Path | str] = {}
    planned: list[Planned] = []
    problems: list[JobProblem] = []
    for line, job in jobs:
        task_dir = (base / job.task).absolute()
        if task_dir not in tasks:
            loaded = load_task(task_dir)
            tasks[task_dir] = (
                (loaded.unwrap(), content_hash(task_dir))
                if is_successful(loaded)
                else f"task: {loaded.failure().message}"
            )
        known = tasks[task_dir]
        found: list[str] = []
        if isinstance(known, str):
            found.append(known)
        patch = read_patch(base / job.patch, found)
        repo: Path | str | None = None
        if job.repo is not None:
            repo = (base / job.repo).absolute()
            if not repo.is_dir():
                repo = f"grading repo not found: {repo}"
        elif not isinstance(known, str):
            if task_dir not in sources:
                sources[task_dir] = task_repo(known[0], task_dir, runner)
            repo = sources[task_dir]
        if isinstance(repo, str):
            found.append(f"repo: {repo}")
        problems += [JobProblem(line, why) for why in found]
        if found or isinstance(known, str) or patch is None or not isinstance(repo, Path):
            continue
        task, task_hash = known
        if repo not in repos:
            repos[repo] = repo_identity(repo)
        digest = job_digest(task_hash, patch, repos[repo], version)
        run_id = job.run_id or digest[:12]
        parts = run_parts(task.id, job.model, job.agent, run_id)
        planned.append(
            Planned(line, job, task, task_dir, patch, repo, run_id, digest, results, parts)
        )
    keys = [(p.line, (p.task.id, p.job.model, p.job.agent, p.run_id)) for p in planned]
    problems += duplicate_problems(keys)
    problems += nested_problems([(p.line, p.parts) for p in planned])
    return planned, problems


def read_patch(path: Path, found: list[str]) -> bytes | None:
    """The patch bytes, or None with why in `found` (not a regular file, or not a diff)."""
    try:
        data = read_regular(path)
    except NotReadable as exc:
        why = "no such file" if exc.errno == errno.ENOENT else exc.why
        found.append(f"patch: {why}: {exc.path}")
        return None
    refused = not_a_diff(data)
    if refused is not None:
        found.append(f"patch: {refused}: {path}")
        return None
    return data


def refuse(head: Sequence[str], problems: Sequence[JobProblem], where: str) -> None:
    """`BadJobs` when there is any problem: `head` first (the batch's own), then each job
    line's, in line order, as `<where>:<line>: why`."""
    if head or problems:
        ordered = sorted(problems, key=lambda p: p.line)
        raise BadJobs([*head, *(f"{where}:{p.line}: {p.message}" for p in ordered)])


# ---------------------------------------------------------------------------- identities


def content_hash(top: Path, *, skip: frozenset[str] = frozenset()) -> str:
    """sha256 over a tree's names, kinds, exec bits and bytes; symbolic links are hashed as
    links (never followed); top-level names in `skip` are left out."""
    hasher = hashlib.sha256()
    for here, dirs, names in os.walk(top, followlinks=False):
        rel = os.path.relpath(here, top)
        left_out = skip if rel == "." else frozenset()
        dirs[:] = sorted(d for d in dirs if d not in left_out)
        for name in sorted(n for n in names if n not in left_out):
            path = os.path.join(here, name)
            entry = os.path.normpath(os.path.join(rel, name)).encode()
            hasher.update(b"\0" + entry + b"\0")
            _hash_entry(hasher, path)
        for name in dirs:
            if os.path.islink(os.path.join(here, name)):
                entry = os.path.normpath(os.path.join(rel, name)).encode()
                hasher.update(b"\0" + entry + b"\0")
                _hash_entry(hasher, os.path.join(here, name))
    return hasher.hexdigest()


def _hash_entry(hasher: Any, path: str) -> None:
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        hasher.update(b"link:" + os.fsencode(os.readlink(path)))
    elif stat.S_ISREG(info.st_mode):
        hasher.update(b"exec:" if info.st_mode & 0o111 else b"file:")
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        try:
            hasher.update(info.st_size.to_bytes(8, "big"))
            while chunk := os.read(fd, _CHUNK):
                hasher.update(chunk)
        finally:
            os.close(fd)
    else:
        hasher.update(b"other:")


def repo_identity(repo: Path) -> str:
    """What the grading repo is: `tree:<id>` of its HEAD when it is a git repo with nothing
    changed or untracked, else `content:<sha256>` of its files (`.git` left out)."""
    tree = git.clean_tree(repo)
    if tree is not None:
        return f"tree:{tree}"
    return f"content:{content_hash(repo, skip=frozenset({'.git'}))}"
