"""Reading paths others named: a file without following its link or waiting on a FIFO, and a
task's tree only when the account it speaks for could read it.

Interpreter side (files, processes). A patch file, a jobs file, a trace or a task's config is
opened with `O_NOFOLLOW | O_NONBLOCK` and checked on the open descriptor before a byte is
read: a link (to `/etc/shadow`), a FIFO (which would block) or a device is refused; the null
device is the empty file. A tree a task names (its `source`, graded when the operator names no
repo) is read as root only when the account the task speaks for could read all of it
(`unreadable_by`, which asks the kernel as that account).
"""

from __future__ import annotations

import errno
import os
import pwd
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from interpreters.real.programs import ProgramError, program
from interpreters.real.runner.account import TOOL_ENV
from ssegrade.internal.errors import SsegradeError

__all__ = ["NULL_DEVICE", "Account", "NotReadable", "read_regular", "task_reader", "unreadable_by"]

NULL_DEVICE = (1, 3)
"""Major and minor numbers of `/dev/null`, accepted as the empty file."""
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class NotReadable(SsegradeError):
    """A file that is not read: its `path`, `why` (one phrase) and, when the system said
    why, its `errno`."""

    def __init__(self, path: Path, why: str, code: int | None = None) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why
        self.errno = code


def _refused(path: Path, exc: OSError) -> NotReadable:
    if exc.errno == errno.ELOOP:
        return NotReadable(path, "a symbolic link (links are not followed)", exc.errno)
    return NotReadable(path, exc.strerror or str(exc), exc.errno)


def read_regular(path: Path, *, limit: int | None = None) -> bytes:
    """The bytes of the regular file `path` (the null device reads as empty). `NotReadable`
    when it is a link, a FIFO, a device or a folder, cannot be opened, or holds more than
    `limit` bytes: checked on the open descriptor, before reading."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        raise _refused(path, exc) from None
    try:
        info = os.fstat(fd)
        if (
            stat.S_ISCHR(info.st_mode)
            and (
                os.major(info.st_rdev),
                os.minor(info.st_rdev),
            )
            == NULL_DEVICE
        ):
            return b""
        if not stat.S_ISREG(info.st_mode):
            raise NotReadable(path, "not a file (a FIFO, a device or a folder)")
        too_big = NotReadable(path, f"larger than {limit} bytes")
        if limit is not None and info.st_size > limit:
            raise too_big
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if limit is not None and size > limit:
                raise too_big
        return b"".join(chunks)
    except OSError as exc:
        raise _refused(path, exc) from None
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class Account:
    """Whose rights a task's tree is read with: uid, gid and supplementary groups."""

    uid: int
    gid: int
    groups: tuple[int, ...] = ()

    @property
    def label(self) -> str:
        """The account's name, or `uid N`."""
        try:
            return f"{pwd.getpwuid(self.uid).pw_name} (uid {self.uid})"
        except KeyError:
            return f"uid {self.uid}"


def _account(uid: int, gid: int) -> Account:
    try:
        entry = pwd.getpwuid(uid)
    except KeyError:
        return Account(uid, gid)
    return Account(uid, entry.pw_gid, tuple(os.getgrouplist(entry.pw_name, entry.pw_gid)))


def task_reader(task_dir: Path, runner_uid: int, runner_gid: int) -> Account | None:
    """Whose rights a tree named by the task in `task_dir` is read with: the task folder's
    owner, or the runner account when root owns it (as it does every task folder once its
    hidden material is locked): never root's. None when ssegrade is not root (it reads with
    the caller's rights anyway)."""
    if os.geteuid() != 0:
        return None
    owner = os.stat(task_dir).st_uid
    if owner == 0:
        return Account(runner_uid, runner_gid)
    return _account(owner, os.stat(task_dir).st_gid)


def unreadable_by(tree: Path, account: Account) -> str | None:
    """None when `account` can list every folder of `tree` and read every file in it; else
    the first path it cannot read, and why. The kernel is asked as that account (`find`
    running as it), so modes, owners and ACLs all count; links are not followed."""
    try:
        find = program("find")
    except ProgramError as exc:
        return f"{tree}: cannot be checked ({exc})"
    command = [
        find,
        "-P",
        os.fspath(tree),
        "(",
        "-type",
        "d",
        "(",
        "!",
        "-readable",
        "-o",
        "!",
        "-executable",
        ")",
        "-print",
        "-quit",
        ")",
        "-o",
        "(",
        "!",
        "-type",
        "d",
        "!",
        "-type",
        "l",
        "!",
        "-readable",
        "-print",
        "-quit",
        ")",
    ]
    try:
        done = subprocess.run(
            command,
            user=account.uid,
            group=account.gid,
            extra_groups=list(account.groups),
            env=TOOL_ENV,
            cwd="/",
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    except OSError as exc:
        return f"{tree}: cannot be checked ({exc.strerror or exc})"
    first = done.stdout.decode(errors="replace").strip()
    if first:
        return f"{first} is not readable by {account.label}"
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        why = f" ({lines[0].removeprefix('find: ')})" if lines else ""
        return f"{tree} is not readable by {account.label}{why}"
    return None
