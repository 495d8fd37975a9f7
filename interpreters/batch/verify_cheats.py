"""The canonical cheats of a task, written from the pristine project (`verify --adversarial`).

Interpreter layer (SPEC §13): lists the project's files, reads those the pure generator
(`ssegrade.batch._cheats`) asks for, the hidden test diff and the PoCs, and hands them over.
Every read is of a regular file, never through a link (`read_regular`), bounded in size; a
file that cannot be read is left out (a cheat that needs it says it is not applicable).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

from interpreters.real.untrusted import NotReadable, read_regular
from ssegrade import Task
from ssegrade.batch import Cheat, wanted_paths, write_cheats

__all__ = ["MAX_FILE", "MAX_PATHS", "task_cheats"]

MAX_PATHS = 200_000
"""The most files of a project listed."""
MAX_FILE = 4 << 20
"""The largest file read, bytes."""


def project_paths(repo: Path) -> list[str]:
    """The regular files under `repo` (relative, `/`-separated, sorted), outside `.git`,
    never through a linked folder; at most `MAX_PATHS`."""
    found: list[str] = []
    for top, folders, files in os.walk(repo):
        folders[:] = sorted(f for f in folders if f != ".git" and not os.path.islink(Path(top, f)))
        base = Path(top).relative_to(repo)
        for name in sorted(files):
            path = Path(top, name)
            if path.is_symlink() or not path.is_file():
                continue
            found.append((base / name).as_posix())
            if len(found) >= MAX_PATHS:
                return sorted(found)
    return sorted(found)


def _read(path: Path) -> bytes | None:
    try:
        return read_regular(path, limit=MAX_FILE)
    except NotReadable:
        return None


def task_cheats(
    task: Task,
    task_dir: Path,
    repo: Path,
    reference: bytes | None,
    only: Collection[str] | None = None,
) -> tuple[Cheat, ...]:
    """The cheats of `task` (in `task_dir`) on the project `repo`: each of them, or those
    named in `only`."""
    hidden = _read(task_dir / task.files.future_test) if task.files.future_test else None
    paths = project_paths(repo)
    files: dict[str, bytes] = {}
    for path in wanted_paths(paths, reference, hidden):
        data = _read(repo / path)
        if data is not None:
            files[path] = data
    pocs: dict[str, bytes] = {}
    for poc in task.files.poc:
        data = _read(task_dir / poc)
        if data is not None:
            pocs[poc] = data
    made = write_cheats(task, paths, files, reference=reference, hidden=hidden, pocs=pocs)
    return tuple(c for c in made if only is None or c.name in only)
