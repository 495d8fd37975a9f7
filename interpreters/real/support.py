"""Support folders: task folders that scripts name by absolute path (SPEC §5).

Interpreter layer. A support folder (e.g. `/ssebench/harness`) holds no hidden material; the
runner reads it at its own path for the whole grading, and it is put back as it was before
every check, so that one check cannot leave something there for the next. Which folders are
support folders is the core's rule (`ssegrade.support_folders`); this module finds the inputs
of that rule on disk, opens the folders to the runner, snapshots them and restores them.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from interpreters.real import files
from ssegrade import Task
from ssegrade.internal.task import support_folders

__all__ = ["SupportFolders", "find_support_folders"]

_SCRIPT_BYTES = 1 << 20


def find_support_folders(task: Task, folder: Path) -> tuple[Path, ...]:
    """The support folders of the task in `folder` (absolute paths, possibly none)."""
    texts: dict[str, str] = {}
    for path in (task.scripts.build, task.scripts.run, task.scripts.test):
        if path:
            try:
                with open(folder / path, "rb") as script:
                    texts[path] = script.read(_SCRIPT_BYTES).decode(errors="replace")
            except OSError:
                continue  # a script that cannot be read names nothing
    try:
        with os.scandir(folder) as listing:
            entries = [e.name for e in listing if e.is_dir(follow_symlinks=False)]
    except OSError:
        return ()
    return tuple(folder / name for name in support_folders(task, str(folder), texts, entries))


def _fingerprint(top: Path) -> tuple[tuple[str, int, int, int], ...]:
    seen: list[tuple[str, int, int, int]] = []
    for here, dirs, names in os.walk(top):
        dirs.sort()
        for name in sorted([*dirs, *names]):
            path = os.path.join(here, name)
            try:
                st = os.stat(path, follow_symlinks=False)
            except FileNotFoundError:
                continue
            seen.append((os.path.relpath(path, top), st.st_mode, st.st_size, st.st_mtime_ns))
    return tuple(seen)


def _open_to_others(top: Path) -> None:
    """Let every user read `top` (folders searchable, files readable) and reach it."""
    for here, _dirs, names in os.walk(top):
        st = os.stat(here, follow_symlinks=False)
        os.chmod(here, stat.S_IMODE(st.st_mode) | 0o055, follow_symlinks=False)  # noqa: S103 - the runner must read it
        for name in names:
            path = os.path.join(here, name)
            st = os.stat(path, follow_symlinks=False)
            if stat.S_ISREG(st.st_mode):
                os.chmod(path, stat.S_IMODE(st.st_mode) | 0o044, follow_symlinks=False)
    parent = top.parent
    st = os.stat(parent)
    if not st.st_mode & 0o001:
        os.chmod(parent, stat.S_IMODE(st.st_mode) | 0o001)  # search only: no listing


@dataclass(slots=True)
class SupportFolders:
    """The support folders of one grading: opened to the runner, snapshot in `scratch`,
    restored before every check when a script changed them."""

    paths: tuple[Path, ...]
    scratch: Path
    open_to_runner: bool = False
    _prints: dict[Path, tuple[tuple[str, int, int, int], ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.paths:
            return
        self.scratch.mkdir(mode=0o700, parents=True, exist_ok=True)
        for index, path in enumerate(self.paths):
            if self.open_to_runner:
                _open_to_others(path)
            files.fresh_copy(path, self._snapshot(index), None)
            self._prints[path] = _fingerprint(path)

    def _snapshot(self, index: int) -> Path:
        return self.scratch / str(index)

    def restore(self) -> list[Path]:
        """Put back every support folder a script changed; answers those restored."""
        restored: list[Path] = []
        for index, path in enumerate(self.paths):
            if _fingerprint(path) == self._prints[path]:
                continue
            files.remove_tree(path)
            files.fresh_copy(self._snapshot(index), path, None)
            self._prints[path] = _fingerprint(path)
            restored.append(path)
        return restored
