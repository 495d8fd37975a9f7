"""Reading a task folder from disk: `config.yaml` parsed by the core, named files checked here.

A task folder is read (as root, often) only where no other user can replace it: every folder
above it, and every link on the way, must be one that only root (or, without root, we) can
change, as `trusted_paths` says; a sticky folder others may write to (`/tmp`) is fine when it
is root's and the entry in it is root's or ours, since only an entry's owner can then rename it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from returns.pipeline import is_successful
from returns.result import Failure, Result, Success

from interpreters.real.trusted_paths import Unsafe, resolve_safe
from interpreters.real.untrusted import NotReadable, read_regular
from ssegrade import Task, TaskError, parse_task

__all__ = ["load_task", "lock_hidden", "resolve_source"]


def load_task(folder: Path) -> Result[Task, TaskError]:
    """Parse `folder/config.yaml` (a regular file: not a link, never waited on) and check
    that every file it names exists."""
    if not folder.is_dir():
        return Failure(TaskError(f"task folder not found: {folder}"))
    replaceable = _replaceable(folder)
    if replaceable is not None:
        return Failure(TaskError(replaceable))
    try:
        data = read_regular(folder / "config.yaml")
    except NotReadable as exc:
        if exc.errno == errno.ENOENT:
            return Failure(TaskError(f"config.yaml: no such file in {folder}"))
        return Failure(TaskError(f"config.yaml: cannot read it ({exc.why})"))
    parsed = parse_task(data)
    if not is_successful(parsed):
        return parsed
    task = parsed.unwrap()
    top = folder.resolve()
    for key, path in task.named_files():
        if not (folder / path).is_file():
            return Failure(TaskError.missing_file(key, path))
        if top not in (folder / path).resolve().parents:
            return Failure(TaskError(f"config.yaml: {key}: '{path}' leads out of the task folder"))
    return Success(task)


def _replaceable(folder: Path) -> str | None:
    """Why another user could put another task in the place of `folder` (see the module);
    None when no one can."""
    try:
        # Not `abspath`: `..` after a link is the kernel's, not a lexical step back.
        resolve_safe(os.path.join(os.getcwd(), folder), sticky=True, entry=False)
    except Unsafe as exc:
        return f"task folder {folder}: {exc}: another user could replace the task"
    except OSError as exc:
        return f"task folder {folder}: {exc.strerror or exc}"
    return None


def resolve_source(task: Task, folder: Path, given: Path | None) -> Result[Path, TaskError]:
    """The source tree: the command line's, else the config's (relative to the task folder)."""
    if given is not None:
        source = given
    elif task.source is not None:
        source = folder / task.source
    else:
        return Failure(TaskError("no source tree: give --source or set `source` in config.yaml"))
    if not source.is_dir():
        return Failure(TaskError(f"source tree not found: {source}"))
    return Success(source.resolve())


def lock_hidden(task: Task, folder: Path) -> list[str]:
    """Make the task's hidden material unreadable to every user but root (SPEC §5, run as
    root, before any script runs): the config, the scripts, the PoCs, the hidden tests and the
    reference fix become root's, with no group or other permission bits, and so do the folders
    holding them; the task folder keeps only its search bits for others, so that support
    folders stay reachable by path while nothing in it can be listed.

    Answers the paths whose ownership or mode changed. Raises `OSError` when one cannot be
    locked (the caller refuses to grade). Symlinks are never followed: a named file that is a
    link is refused.
    """
    changed: list[str] = []

    def lock(path: Path, keep: int) -> None:
        st = os.stat(path, follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            raise OSError(errno.ELOOP, "a symbolic link in the task folder", str(path))
        mode = stat.S_IMODE(st.st_mode)
        if st.st_uid != 0 or st.st_gid != 0:
            os.chown(path, 0, 0, follow_symlinks=False)
            changed.append(str(path))
        if mode & ~keep:
            os.chmod(path, mode & keep, follow_symlinks=False)
            if str(path) not in changed:
                changed.append(str(path))

    names = ["config.yaml", *task.hidden_files()]
    folders: set[Path] = set()
    for name in names:
        path = folder / name
        if not os.path.lexists(path):
            continue
        lock(path, 0o700)
        parent = path.parent
        while parent != folder and folder in parent.parents:
            folders.add(parent)
            parent = parent.parent
    for parent in sorted(folders):
        lock(parent, 0o700)
    lock(folder, 0o711)
    return changed
