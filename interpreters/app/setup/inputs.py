"""A grading's inputs checked on disk: the task, the agent's tree, who runs the scripts, a
recorded patch, and the task's hidden material locked away from the runner.

Application layer. Input that cannot be graded raises `InputError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from returns.pipeline import is_successful

from interpreters.app.setup.errors import InputError
from interpreters.real import git
from interpreters.real.runner import Runner, resolve_runner
from interpreters.real.taskfolder import load_task, lock_hidden, resolve_source
from ssegrade import Task

__all__ = ["Inputs", "load_inputs", "lock_task", "not_a_diff"]


@dataclass(frozen=True, slots=True)
class Inputs:
    """A task checked on disk, its folder, the agent's source tree and who runs scripts."""

    task: Task
    task_dir: Path
    source: Path | None
    runner: Runner


def load_inputs(
    task_dir: Path, source: Path | None, runner_user: str | None, *, need_source: bool = True
) -> Inputs:
    """Load and check the task, find the source tree (unless not needed: then it may be
    `None`), choose the runner; `InputError` if not."""
    task_dir = task_dir.absolute()
    if not task_dir.is_dir():
        raise InputError(
            f"task folder not found: {task_dir} (give --task DIR or set SSE_BENCH_PATH)"
        )
    loaded = load_task(task_dir)
    if not is_successful(loaded):
        raise InputError(loaded.failure().message)
    task = loaded.unwrap()
    tree: Path | None = None
    if need_source:
        found = resolve_source(task, task_dir, source)
        if not is_successful(found):
            raise InputError(found.failure().message)
        tree = found.unwrap()
    runner = resolve_runner(runner_user)
    if not is_successful(runner):
        raise InputError(runner.failure().message)
    return Inputs(task, task_dir, tree, runner.unwrap())


def not_a_diff(patch: bytes) -> str | None:
    """Why a recorded patch (`--patch`, a job's `patch`) cannot be graded: it is not empty
    (whitespace aside: that is the empty patch) yet holds no change git would apply, as
    "hello world", an HTML error page or an agent's trajectory (SPEC §4); None when it can."""
    if not patch.strip():
        return None
    files = git.patch_files(patch)
    if not is_successful(files):
        return f"not a patch git can read ({files.failure().log})"
    if files.unwrap() == 0:
        return "holds no change git would apply (no file in `git apply --stat`): not a patch"
    return None


def lock_task(inputs: Inputs) -> list[str]:
    """As root with a runner account: lock the task's hidden material away from the runner
    before any script runs (`lock_hidden`); answers the paths changed. `InputError` when it
    cannot be done: grading would expose the hidden tests and the reference fix."""
    if not inputs.runner.isolated:
        return []
    try:
        return lock_hidden(inputs.task, inputs.task_dir)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise InputError(
            f"cannot make the task's hidden material unreadable to the runner: "
            f"{exc.strerror or exc}{where}"
        ) from exc
