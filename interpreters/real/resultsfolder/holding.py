"""One run folder, one grading: the lock held by whoever writes a results folder.

Interpreter side (files). A results folder holds `.lock`, locked with flock(2) by each process
writing the folder for as long as it writes (the lock goes with the descriptor, so a process
that dies, even by kill -9, holds nothing):

- `claim` takes it exclusively, which succeeds only when no one else holds it: the folder may
  then be cleared and written. The claimer writes its token into the lock file, then usually
  `share`s it: a claim held shared still keeps every other claimer out;
- `join` takes it shared, next to the claimer: a batch worker grading the folder its driver
  claimed (the token must be the driver's), `evaluate --daemon` beside its daemon;
- `is_held` tells whether a live process holds it.

`.incomplete` marks a folder being rewritten: written before anything is removed, removed
once the new grade is whole. The lock file itself is never removed, except with its folder.

A folder may come with an empty `result.json` made before grading (SSEBench's runner makes it,
and may bind-mount that very file): `Hold.premade` names it, and `write_premade` writes the
grade into it in place, since a mount point cannot be replaced by a rename.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from interpreters.real import files
from interpreters.real.resultsfolder.private import trusted
from ssegrade.internal.errors import SsegradeError

__all__ = [
    "FIRST_CLEARED",
    "INCOMPLETE",
    "LOCK",
    "RESULT",
    "FolderHeld",
    "Hold",
    "claim",
    "held_premade",
    "is_held",
    "join",
    "unmark_finished",
]

LOCK = ".lock"
"""The lock file of a results folder."""
INCOMPLETE = ".incomplete"
"""The marker of a results folder being written anew."""
RESULT = "result.json"
"""The grade."""
FIRST_CLEARED = (RESULT, "summary.json")
"""What says a folder holds a valid grade: removed first when the folder is cleared."""

_LOCK_FLAGS = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_ATTEMPTS = 5
_PAUSE = 0.02
"""A lock found taken is tried again this many times, this many seconds apart: a grading holds
it for its whole run, `is_held` for an instant."""
_MARKED: dict[Path, Hold] = {}
_PREMADE: dict[Path, Hold] = {}
"""The holds of this process whose folder came with an empty `result.json` to write into."""
_WRITE_FLAGS = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class FolderHeld(SsegradeError):
    """Another live grading holds the folder (or took it meanwhile): one line."""


@dataclass(eq=False)
class Hold:
    """A lock held on the results folder `path` (open as `folder`) through `fd`."""

    path: Path
    folder: int
    fd: int
    claimed: bool
    open: bool = field(default=True)
    premade: int | None = field(default=None)
    """The empty `result.json` found there when the folder was taken (an `O_PATH` descriptor,
    which keeps its inode from being reused), to be written in place (`write_premade`); None:
    the grade is written by rename."""

    def keep_premade(self, fd: int) -> None:
        """Write the grade in place into the empty `result.json` open as `fd` (taken over)."""
        self.premade = fd
        _PREMADE[self.path] = self

    def write_premade(self, data: bytes) -> None:
        """Write `data` into the pre-made `result.json` in place: opened below the held
        folder without following a link or blocking on a FIFO, refused (`OSError`) unless it
        is still that very regular file with no other link. The whole grade is written and
        synced in a temporary file of the folder first (a full disk shows there, before the
        runner's file is touched), then goes into the file with one write, truncated to its
        length and synced; the temporary file is removed whatever happens."""
        spare = f".{RESULT}.grade.tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(spare, dir_fd=self.folder)
        try:
            made = os.open(spare, _WRITE_FLAGS | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=self.folder)
            try:
                _write_all(made, data)
                os.fsync(made)
            finally:
                os.close(made)
            self._write_into(data)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(spare, dir_fd=self.folder)

    def _write_into(self, data: bytes) -> None:
        fd = os.open(RESULT, _WRITE_FLAGS, dir_fd=self.folder)
        try:
            info = os.fstat(fd)
            kept = os.fstat(self.premade) if self.premade is not None else None
            if kept is None or (info.st_dev, info.st_ino) != (kept.st_dev, kept.st_ino):
                raise OSError(errno.EEXIST, f"{self.path / RESULT}: replaced during grading")
            if not _plain(info):
                raise OSError(errno.EMLINK, f"{self.path / RESULT}: linked elsewhere meanwhile")
            _write_all(fd, data)
            os.ftruncate(fd, len(data))
            os.fsync(fd)
        finally:
            os.close(fd)

    def share(self) -> None:
        """Turn a claim into a shared hold, which lets `join` in and keeps claimers out.
        `FolderHeld` when another claimer took the folder in the instant between."""
        try:
            fcntl.flock(self.fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            self.release()
            raise FolderHeld(f"{self.path}: taken by another grading meanwhile") from None

    def mark(self) -> None:
        """Write `.incomplete`: the folder is being written anew."""
        fd = os.open(
            INCOMPLETE,
            os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=self.folder,
        )
        os.close(fd)
        _MARKED[self.path] = self

    def unmark(self) -> None:
        """Remove `.incomplete`: the folder's grade is whole."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(INCOMPLETE, dir_fd=self.folder)
        if _MARKED.get(self.path) is self:
            del _MARKED[self.path]

    def clear(self, keep: Collection[str] = ()) -> None:
        """Mark the folder incomplete, remove `result.json` and `summary.json`, then the rest
        but `keep` (the lock and the marker stay): a kill at any moment leaves no earlier
        grade that looks valid. A `result.json` that cannot be removed because a file is
        mounted there is emptied instead, and the grade written into it in place."""
        self.mark()
        for name in FIRST_CLEARED:
            try:
                os.unlink(name, dir_fd=self.folder)
            except FileNotFoundError:
                continue
            except OSError as exc:
                if name != RESULT or exc.errno != errno.EBUSY:
                    raise
                self._empty_mounted()
        kept = (LOCK, INCOMPLETE, *keep, *([RESULT] if self.premade is not None else []))
        for name in sorted(os.listdir(self.folder)):
            if name not in kept:
                files.remove_tree(self.path / name)

    def _empty_mounted(self) -> None:
        """Empty the `result.json` mounted there (a plain file, else `OSError`), to be written
        in place."""
        fd = os.open(RESULT, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.folder)
        try:
            if not _plain(os.fstat(fd)):
                raise OSError(errno.EBUSY, f"{self.path / RESULT}: mounted, not a plain file")
        except BaseException:
            os.close(fd)
            raise
        self.keep_premade(fd)
        self._write_into(b"")

    def release(self) -> None:
        """Let go of the folder (idempotent)."""
        if self.open:
            self.open = False
            for kept in (_MARKED, _PREMADE):
                if kept.get(self.path) is self:
                    del kept[self.path]
            if self.premade is not None:
                os.close(self.premade)
            os.close(self.fd)
            os.close(self.folder)


def _plain(info: os.stat_result) -> bool:
    """A regular file with no other hard link."""
    return stat.S_ISREG(info.st_mode) and info.st_nlink == 1


def _write_all(fd: int, data: bytes) -> None:
    """Write `data` at the start of `fd`, whole."""
    view = memoryview(data)
    done = 0
    while done < len(data):
        done += os.pwrite(fd, view[done:], done)


def _open_lock(folder: int, path: Path, *, create: bool) -> int:
    flags = _LOCK_FLAGS | (os.O_CREAT if create else 0)
    try:
        fd = os.open(LOCK, flags, 0o600, dir_fd=folder)
    except FileNotFoundError:
        raise FolderHeld(f"{path}: no lock file: the folder is not held") from None
    except OSError as exc:
        why = "a link" if exc.errno == errno.ELOOP else exc.strerror
        raise FolderHeld(f"{path}/{LOCK}: {why}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or not trusted(info):
        os.close(fd)
        raise FolderHeld(f"{path}/{LOCK}: not a lock file of ours")
    return fd


def _same(fd: int, folder: int, path: Path) -> bool:
    """The lock open as `fd` is still the folder's, and the folder is still at `path`."""
    try:
        named = os.stat(LOCK, dir_fd=folder, follow_symlinks=False)
        here = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    mine, dir_info = os.fstat(fd), os.fstat(folder)
    return (named.st_dev, named.st_ino) == (mine.st_dev, mine.st_ino) and (
        here.st_dev,
        here.st_ino,
    ) == (dir_info.st_dev, dir_info.st_ino)


def _lock(folder: int, path: Path, how: int, *, create: bool) -> int:
    fd = _open_lock(folder, path, create=create)
    for attempt in range(_ATTEMPTS):
        try:
            fcntl.flock(fd, how | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if attempt == _ATTEMPTS - 1:
                os.close(fd)
                raise FolderHeld(f"{path}: being written by another grading") from None
            time.sleep(_PAUSE)  # `is_held` elsewhere holds it for an instant: look again
    if not _same(fd, folder, path):
        os.close(fd)
        raise FolderHeld(f"{path}: replaced while it was being locked")
    return fd


def claim(folder: int, path: Path, token: str) -> Hold:
    """Hold the folder open as `folder` (at `path`) alone, and write `token` in its lock
    file. Takes over `folder` (closed on release or failure). `FolderHeld` when another
    process holds it."""
    try:
        fd = _lock(folder, path, fcntl.LOCK_EX, create=True)
    except BaseException:
        os.close(folder)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, token.encode(), 0)
    return Hold(path, folder, fd, claimed=True)


def join(folder: int, path: Path, token: str | None) -> Hold:
    """Hold the folder open as `folder` (at `path`) shared with the claimer whose token is
    `token` (None: whoever holds it). Takes over `folder`. `FolderHeld` when it is not held
    that way."""
    try:
        fd = _lock(folder, path, fcntl.LOCK_SH, create=False)
    except BaseException:
        os.close(folder)
        raise
    if token is not None and os.pread(fd, 256, 0) != token.encode():
        os.close(fd)
        os.close(folder)
        raise FolderHeld(f"{path}: held by another grading")
    return Hold(path, folder, fd, claimed=False)


def is_held(folder: int) -> bool:
    """Whether a live process holds the folder open as `folder`."""
    try:
        fd = os.open(LOCK, _LOCK_FLAGS, dir_fd=folder)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def unmark_finished(path: Path) -> None:
    """The grade of `path` is whole: remove its `.incomplete` if this process marked it."""
    hold = _MARKED.get(path)
    if hold is not None and hold.open:
        hold.unmark()


def held_premade(path: Path) -> Hold | None:
    """The open hold of this process on `path` whose `result.json` is pre-made, if any."""
    hold = _PREMADE.get(path)
    return hold if hold is not None and hold.open else None
