"""One grading at a time in a container (`container_turn`): the lock every grading process
takes, as root inside a container, for the whole of a grading.

Interpreter layer (a lock file, `flock`). Inside a container, `container` containment kills
every process of the runner account and removes what it left in `/tmp`, `/var/tmp` and
`/dev/shm` after each script: two gradings at once would kill and remove each other's. So a
grading there waits for its turn: it says once on stderr (the log) which process it waits
for, then waits; the lock goes with the process that holds it, on a kill -9 too. It is taken
whatever the mode (a `full` or `weak` grading beside a `container` one would lose its scripts
too). The daemon takes it for its whole life (it is one grading from the agent's first build
to the last check): an evaluator beside it grades through it (`--daemon`), or waits.

The lock file is `/run/ssegrade-grading.lock`, opened without following a link in `/run`,
which must be root's and writable by no one else.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import stat
from collections.abc import Iterator

from interpreters.real.runner.account import Runner, isolated
from interpreters.real.runner.policy import ContainmentRefused
from interpreters.real.runner.probe import probe
from interpreters.real.runner.residue import clear_runner

__all__ = ["LOCK_FOLDER", "LOCK_NAME", "container_turn"]

LOCK_FOLDER = "/run"
LOCK_NAME = "ssegrade-grading.lock"

_log = logging.getLogger(__name__)


@contextlib.contextmanager
def container_turn(runner: Runner, folder: str = LOCK_FOLDER) -> Iterator[None]:
    """Hold the container's grading lock for the block (waiting for it, saying so once),
        when this process is root inside a container; elsewhere, nothing. When the block ends,
        every process of the runner is killed and what it left removed, as when it starts (a
    grading killed before its end leaves them), before the lock goes.
        Raises `ContainmentRefused` when the lock cannot be opened safely."""
    offer = probe()
    if not (offer.root and offer.where.container):
        yield
        return
    fd = _open_lock(folder)
    try:
        _wait_turn(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _clear(runner)  # what a grading killed before its end left
        try:
            yield
        finally:
            _clear(runner)
    finally:
        os.close(fd)  # the lock goes with the descriptor


def _clear(runner: Runner) -> None:
    if isolated(runner):
        for line in clear_runner(runner):
            _log.info("%s", line)


def _open_lock(folder: str) -> int:
    try:
        dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise ContainmentRefused(f"no grading lock: {folder}: {exc.strerror}") from None
    try:
        info = os.fstat(dfd)
        if info.st_uid != 0 or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise ContainmentRefused(f"no grading lock: {folder} is writable by others than root")
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            return os.open(LOCK_NAME, flags, 0o600, dir_fd=dfd)
        except OSError as exc:
            raise ContainmentRefused(
                f"no grading lock: {folder}/{LOCK_NAME}: {exc.strerror}"
            ) from None
    finally:
        os.close(dfd)


def _wait_turn(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
    _log.warning(
        "waiting for the grading of process %s to end: one grading at a time in a container",
        holder,
    )
    fcntl.flock(fd, fcntl.LOCK_EX)
