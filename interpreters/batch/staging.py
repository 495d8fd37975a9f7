"""Staged copies of task folders, so that verifying a task leaves its author's files as they
were.

Interpreter layer (files). Grading as root locks a task's hidden material away from the
runner (`interpreters.real.taskfolder.lock_hidden`: root's, no bits for group or others). `verify`
is run by task authors on their own folders, so it grades a copy instead: each task folder is
copied (links copied as links, never followed; modes and times kept) into a scratch folder
of root's that only root may list, and that copy is locked and graded. The scratch folder is
removed when verification ends, however it ends (after a kill -9, by this process's guardian).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from interpreters.real import files
from interpreters.real.runner import scratch_folder
from ssegrade.internal.errors import SsegradeError

__all__ = ["TaskCopyFailed", "staged_tasks"]


class TaskCopyFailed(SsegradeError):
    """A task folder cannot be copied: one line per folder that could not be."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = tuple(problems)


@contextmanager
def staged_tasks(folders: Sequence[Path], *, stage: bool) -> Iterator[dict[Path, Path]]:
    """Each task folder (absolute) → the folder to grade: a copy made for this verification
    when `stage` (as root, where grading would lock the author's files), else the folder
    itself. `TaskCopyFailed` names every folder that cannot be copied."""
    if not stage:
        yield {folder: folder for folder in folders}
        return
    top = scratch_folder("tasks")  # a kill -9 of the verification leaves no copy behind
    try:
        top.chmod(0o711)  # the runner reaches the copies' support folders, and lists nothing
        copies: dict[Path, Path] = {}
        problems: list[str] = []
        for number, folder in enumerate(folders):
            holder = top / str(number)
            holder.mkdir(mode=0o711)
            copy = holder / (folder.name if folder.name not in ("", "..") else "task")
            try:
                files.fresh_copy(folder, copy, None)
            except OSError as exc:
                where = f" ({exc.filename})" if exc.filename else ""
                problems.append(f"{folder}: cannot copy the task folder: {exc.strerror}{where}")
                continue
            copies[folder] = copy
        if problems:
            raise TaskCopyFailed(problems)
        yield copies
    finally:
        files.remove_tree(top)
