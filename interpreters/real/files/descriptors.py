"""What the descriptor walks of a hostile tree share: how they open its entries, and sizes.

Interpreter side (files). A tree the agent wrote may change while it is read: every walk (the
fresh copy, the archive, the removal) opens each folder and file relative to its parent's
descriptor with these flags, so no symlink is followed and nothing blocks.
"""

from __future__ import annotations

import os
from collections.abc import Callable

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""Flags of a folder opened in a walk: never through a symlink."""
# O_NONBLOCK: a FIFO swapped in after the listing must not block the copy.
SRC_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
"""Flags of a file read in a walk: never through a symlink, never blocking on a FIFO."""
CHUNK = 1 << 30
"""Most bytes one system call is asked to move."""
WORKERS = max(1, min(8, len(os.sched_getaffinity(0)) // 2))
"""Threads of a copy or an archive: their system calls release the GIL and overlap. Half the
CPUs this process may use: a grading runs a copy, the archive and git at once, and more
threads than that only contend (on 2 CPUs, one thread each made `evaluate` 7 % faster)."""

Check = Callable[[], None]
"""Called between the steps of a walk: what it raises (the time limit) stops the walk."""


def _go_on() -> None:
    return None


def write_all(fd: int, data: bytes, check: Check = _go_on) -> None:
    """Write all of `data` to `fd` at its position, at most `CHUNK` bytes a call, calling
    `check` before each."""
    view = memoryview(data)
    while view:
        check()
        view = view[os.write(fd, view[:CHUNK]) :]
