"""Private folders: where results are written, and what in them may be believed.

Interpreter side (files). A results folder is made with mode 0700 (its missing parents too)
and used only when it is a real folder of the caller's that no one else may write to; a
folder below it is opened relative to its parent's descriptor, never through a link, and
checked the same way on the open descriptor. A file in it is believed (`read_trusted`) only
when it is a regular file of the caller's that no one else may write to: what the runner,
the agent or anyone but ssegrade could have put there is never read as ssegrade's own.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from ssegrade.internal.errors import SsegradeError

__all__ = [
    "DIR_FLAGS",
    "FolderRefused",
    "make_private",
    "open_below",
    "read_trusted",
    "trusted",
]

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""A folder opened without following a link."""
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class FolderRefused(SsegradeError):
    """A folder ssegrade will not write into, or believe: one line saying why."""


def trusted(info: os.stat_result) -> bool:
    """Whether an entry is the caller's own and no one else may write to it."""
    return info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _check(fd: int, where: Path) -> None:
    info = os.fstat(fd)
    if not stat.S_ISDIR(info.st_mode):
        raise FolderRefused(f"{where}: not a folder")
    if info.st_uid != os.geteuid():
        raise FolderRefused(f"{where}: owned by another user (uid {info.st_uid}); not used")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise FolderRefused(f"{where}: writable by group or others; not used")


def _why(exc: OSError, where: Path) -> FolderRefused:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return FolderRefused(f"{where}: a link or not a folder (links are not followed)")
    return FolderRefused(f"{where}: {exc.strerror or exc}")


def make_private(path: Path) -> int:
    """Open the folder `path` (absolute), made with its missing parents with mode 0700 when it
    does not exist; answer its descriptor.

    `FolderRefused` when it is a link or not a folder, is owned by another user, or group or
    others may write to it. A folder that others may read or search is made 0700.
    """
    missing: list[Path] = []
    here = path
    while not os.path.lexists(here) and here != here.parent:
        missing.append(here)
        here = here.parent
    try:
        for folder in reversed(missing):
            try:
                os.mkdir(folder, 0o700)
            except FileExistsError:
                continue
        fd = os.open(path, DIR_FLAGS)
    except OSError as exc:
        raise _why(exc, path) from None
    try:
        _check(fd, path)
        if stat.S_IMODE(os.fstat(fd).st_mode) != 0o700:
            os.fchmod(fd, 0o700)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_below(top: int, where: Path, parts: Iterable[str], *, create: bool) -> int | None:
    """Open the folder `parts` below the folder open as `top` (whose path is `where`), one
    component at a time relative to its parent, never through a link; with `create`, missing
    folders are made with mode 0700. Answers its descriptor, or None when a component is
    missing and not `create`. `FolderRefused` when a component is a link, not a folder, or
    not private (`trusted`).
    """
    fd = os.dup(top)
    try:
        for part in parts:
            where = where / part
            child = _open_child(fd, part, where, create=create)
            os.close(fd)
            fd = child
            if fd < 0:
                return None
            _check(fd, where)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        raise
    return fd


def _open_child(fd: int, part: str, where: Path, *, create: bool) -> int:
    """The folder `part` below `fd` (made if missing and `create`), or -1 when missing."""
    try:
        try:
            return os.open(part, DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                return -1
        with contextlib.suppress(FileExistsError):
            os.mkdir(part, 0o700, dir_fd=fd)
        return os.open(part, DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        raise _why(exc, where) from None


def read_trusted(folder: int, name: str, limit: int) -> bytes | None:
    """The bytes of the file `name` in the folder open as `folder`, when it is a regular file
    of the caller's that no one else may write to, of at most `limit` bytes; None otherwise
    (missing, a link, another kind of file, another owner, too big, unreadable)."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=folder)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not trusted(info) or info.st_size > limit:
            return None
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                return None
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
