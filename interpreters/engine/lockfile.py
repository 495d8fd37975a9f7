"""A node's lock files: held with flock(2), removed by their last holder.

Interpreter layer (files). A batch's containers lock what they share on a node (preparing one
image, the node's record of a batch's images) with a file in the node's temporary folder.
Named per batch or per image, such files would pile up there batch after batch, so the holder
removes the file before it lets go of it. A process that opened the file just before then
holds a lock on a file no longer there; it sees that (the path names another file, or none)
and opens the path again: two holders never hold one name at once. Opened without following
a link; in a sticky temporary folder no other user can rename or remove our file.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Held", "held"]


@dataclass(slots=True)
class Held:
    """A lock file held: its descriptor, and whether the holder removes it when done (what is
    in it is lost then)."""

    fd: int
    remove: bool = True


@contextlib.contextmanager
def held(path: Path) -> Iterator[Held]:
    """Hold the lock file `path` (made 0600 when missing) for the block; removed at its end
    unless the block sets `remove` to False (or the file is another user's). Raises `OSError`
    (a link there, say)."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if _names(path, fd):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # its holder removed it meanwhile: the next one is made at the path
    lock = Held(fd)
    try:
        yield lock
    finally:
        try:
            if lock.remove and os.fstat(fd).st_uid == os.geteuid():  # never another's file
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
        finally:
            os.close(fd)


def _names(path: Path, fd: int) -> bool:
    """Whether `path` still names the file open as `fd`."""
    try:
        there = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino)
