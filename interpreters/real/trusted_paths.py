"""Whether a path leads where its owners chose: no one but root (or us) can change it.

Interpreter layer (reads file metadata only, never a file's content). A path is resolved one
name at a time, following links as the kernel would; every folder a name is looked up in,
link hops included, must be one that no other user can change, and so must the entry itself
when asked. As root, a folder or entry is **safe** when root owns it and neither its group nor
others may write to it. Without root (a developer's machine) the rule relaxes to "owned by
root or by us, writable by neither group nor others": we cannot run anything with more rights
than our own, but another user still must not choose what we run or read.

With `sticky`, a folder others may write to is allowed when it is sticky and safe-owned (as
`/tmp`): there only an entry's owner (or the folder's) can rename or remove it, so every entry
looked up in such a folder must then be owned by root or by us.

Used by `programs` (the programs root starts, `sticky` off) and by the task folder's check
(`taskfolder`, `sticky` on).
"""

from __future__ import annotations

import errno
import os
import pwd
import stat

from ssegrade.internal.errors import SsegradeError

__all__ = ["Unsafe", "resolve_safe"]

_MAX_LINKS = 40  # as Linux


class Unsafe(SsegradeError):
    """`where` (a folder or entry on the way) may be changed by another user: `why`; `str`
    says both in one line."""

    def __init__(self, where: str, why: str) -> None:
        super().__init__(f"{where} is {why}")
        self.where = where
        self.why = why


def _owners() -> frozenset[int]:
    me = os.geteuid()
    return frozenset({0, me})


def _who(uid: int) -> str:
    try:
        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except KeyError:
        return f"uid {uid}"


def _owner_problem(info: os.stat_result) -> str | None:
    if info.st_uid in _owners():
        return None
    mine = "" if os.geteuid() == 0 else " nor us"
    return f"owned by {_who(info.st_uid)}, not root{mine}"


def _write_problem(info: os.stat_result) -> str | None:
    mode = stat.S_IMODE(info.st_mode)
    if mode & stat.S_IWOTH:
        return f"writable by others (mode {mode:04o})"
    if mode & stat.S_IWGRP:
        return f"writable by its group (mode {mode:04o})"
    return None


def _open_sticky(info: os.stat_result) -> bool:
    """A sticky folder, safely owned, that others may add entries to (as `/tmp`)."""
    return bool(info.st_mode & stat.S_ISVTX) and _owner_problem(info) is None


def resolve_safe(path: str, *, sticky: bool = False, entry: bool = True) -> str:
    """The real path of absolute `path`, after checking that no user but root (or us) can
    change where it leads: every folder a name is looked up in (link hops included) is safe,
    and so is what it leads to when `entry` (else only how it is reached).

    Raises `Unsafe` (naming the first folder or entry that is not), or `OSError` as a lookup
    would (`ENOENT`, `ENOTDIR`, `ELOOP`).
    """
    if not path.startswith("/"):
        raise ValueError(f"not an absolute path: {path}")
    todo = list(reversed(path.split("/")))
    current, info = "/", os.stat("/")
    _check(current, info, sticky=sticky)
    hops = 0
    while todo:
        name = todo.pop()
        if name in ("", "."):
            continue
        if name == "..":  # a folder checked on the way here
            current = os.path.dirname(current)
            info = os.stat(current)
            continue
        here = os.path.join(current, name)
        found = os.lstat(here)
        if sticky and _open_sticky(info):  # the entry's owner could put another in its place
            problem = _owner_problem(found)
            if problem is not None:
                raise Unsafe(here, problem)
        if stat.S_ISLNK(found.st_mode):
            hops += 1
            if hops > _MAX_LINKS:
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)
            target = os.readlink(here)
            if target.startswith("/"):
                current, info = "/", os.stat("/")
            todo.extend(reversed(target.split("/")))
            continue
        last = all(part in ("", ".") for part in todo)
        if not last:
            if not stat.S_ISDIR(found.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), here)
            _check(here, found, sticky=sticky)
        elif entry:
            _check(here, found, sticky=False)
        current, info = here, found
    return current


def _check(where: str, info: os.stat_result, *, sticky: bool) -> None:
    """Raise `Unsafe` unless `where` is safe (with `sticky`, a folder may be open-sticky)."""
    problem = _owner_problem(info)
    if problem is None and not (sticky and stat.S_ISDIR(info.st_mode) and _open_sticky(info)):
        problem = _write_problem(info)
    if problem is not None:
        raise Unsafe(where, problem)
