"""Removing a tree the runner wrote, whatever its modes and depth, following no symlink:
now (`remove_tree`), or by a process of its own that outlives the caller (`remove_later`).

Interpreter side (files, processes).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import subprocess
import sys
from pathlib import Path

from interpreters.real.files.descriptors import DIR_FLAGS
from interpreters.real.programs import ProgramError, program


def remove_tree(path: Path) -> None:
    """Remove `path` and everything under it; a missing path is fine, and so is another
    removal of the same tree at the same time.

    Works on directory descriptors (a symlink in the tree is removed, never followed) and makes
    directories writable when the runner left them read-only or unreadable. Trees too deep for
    that walk are handed to `chmod -R u+rwx` and `rm -rf`. Raises `OSError` when something
    remains.
    """
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    try:
        fd = _open_dir(None, os.fspath(path))
        try:
            _clear_dir(fd)
        finally:
            os.close(fd)
        _rmdir(path, None, os.fspath(path))
    except FileNotFoundError:  # removed meanwhile by another
        return
    except (RecursionError, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno not in (errno.EMFILE, errno.ENFILE):
            raise
        _remove_with_tools(path)


_REFILLED = 5
"""How many times a folder found refilled while it is removed is cleared again."""


def _rmdir(name: str | Path, parent: int | None, shown: str) -> None:
    """Remove the folder `name` of `parent` (None: a path), cleared already; cleared again
    when something was moved into it meanwhile: another remover renames what it takes (the
    guardian's `ssegrade-trash-*`), so a folder can fill again before it goes."""
    for _ in range(_REFILLED):
        try:
            os.rmdir(name, dir_fd=parent)
            return
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
        fd = _open_dir(parent, os.fspath(name))
        try:
            _clear_dir(fd)
        finally:
            os.close(fd)
    raise OSError(errno.ENOTEMPTY, "refilled while it was removed", shown)


def remove_later(path: Path) -> None:
    """Have `path` removed by a process of its own, in its own session, which goes on after
    this one ends (a grade is not kept waiting for its scratch trees to go); removed here and
    now when that process cannot start."""
    code = (
        "import sys; from pathlib import Path; "
        "from interpreters.real.files.removal import remove_tree; remove_tree(Path(sys.argv[1]))"
    )
    top = Path(__file__).resolve().parents[3]
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "PYTHONPATH": os.fspath(top)}
    # The shell starts the remover in the background and exits at once: the remover is
    # nobody's child to wait for, and leaves no zombie behind.
    try:
        command = [program("sh"), "-c", '"$@" &', "sh", sys.executable, "-c", code, str(path)]
        subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
            cwd="/",
            check=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError, ProgramError):
        remove_tree(path)


_ROOT = os.geteuid() == 0


def _open_dir(parent: int | None, name: str) -> int:
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent)
    except PermissionError:
        # Not readable/searchable by its owner (us, as an ordinary user): make it so, then retry.
        os.chmod(name, 0o700, dir_fd=parent)
        return os.open(name, DIR_FLAGS, dir_fd=parent)


def _clear_dir(fd: int) -> None:
    if not _ROOT and os.fstat(fd).st_mode & 0o700 != 0o700:
        os.fchmod(fd, 0o700)
    with os.scandir(fd) as listing:
        entries = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in listing]
    for name, is_dir in entries:
        # An entry gone meanwhile is fine: another remover may be at work on the same tree.
        with contextlib.suppress(FileNotFoundError):
            if not is_dir:
                try:
                    os.unlink(name, dir_fd=fd)
                    continue
                except IsADirectoryError:  # replaced by a directory meanwhile
                    pass
            child = _open_dir(fd, name)
            try:
                _clear_dir(child)
            finally:
                os.close(child)
            _rmdir(name, fd, name)


def _remove_with_tools(path: Path) -> None:
    # GNU chmod -R never follows symlinks met in the walk; rm -rf handles any depth.
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}
    try:
        chmod, rm = program("chmod"), program("rm")
    except ProgramError as exc:
        raise OSError(errno.ENOENT, str(exc), os.fspath(path)) from None
    subprocess.run([chmod, "-R", "u+rwx", "--", os.fspath(path)], env=env, check=False)
    done = subprocess.run(
        [rm, "-rf", "--one-file-system", "--", os.fspath(path)],
        env=env,
        check=False,
        capture_output=True,
        text=True,
    )
    if os.path.lexists(path):
        raise OSError(errno.ENOTEMPTY, f"could not remove: {done.stderr.strip()}", os.fspath(path))
