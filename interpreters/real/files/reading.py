"""Reading a file the agent or a script may have planted: only a regular file, never through a
link, at most a given number of bytes.

Interpreter side (files), read-only: `read_start` reads the start of a file named by its path
(a task file, a results file, a daemon's read), `read_repo_file` a file of a tree given by a
path inside it, each folder on the way opened with O_NOFOLLOW. A FIFO is refused, never waited
on (O_NONBLOCK); a device is refused after its open (O_NOCTTY: it never becomes our terminal).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from returns.result import Failure, Result, Success

from interpreters.real.elf import read_at
from interpreters.real.files.descriptors import DIR_FLAGS

__all__ = ["read_repo_file", "read_start"]

_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def read_start(path: str, limit: int) -> Result[bytes, str]:
    """The first `limit` bytes of a file (a task file, a results file), never through a link
    nor from anything but a regular file (a FIFO is refused, never waited on); or why it
    cannot be read."""
    try:
        fd = os.open(path, _FILE_FLAGS)
    except OSError as exc:
        return Failure(f"{path}: {exc.strerror or exc}")
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return Failure(f"{path}: not a regular file")
        return Success(read_at(fd, limit, 0))
    except OSError as exc:
        return Failure(f"{path}: {exc.strerror or exc}")
    finally:
        os.close(fd)


def read_repo_file(repo: Path, rel: str, limit: int) -> bytes | None:
    """The bytes of the regular file at `rel` in `repo` when it holds at most `limit`, each
    folder on the way opened with O_NOFOLLOW (no link is followed); None otherwise."""
    parts = rel.split("/")
    if not rel or any(part in ("", ".", "..") for part in parts):
        return None
    try:
        at = os.open(repo, DIR_FLAGS)
    except OSError:
        return None
    try:
        for part in parts[:-1]:
            below = os.open(part, DIR_FLAGS, dir_fd=at)
            os.close(at)
            at = below
        fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=at)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
                return None
            data = read_at(fd, limit + 1, 0)
            return data if len(data) <= limit else None
        finally:
            os.close(fd)
    except OSError:
        return None
    finally:
        os.close(at)
