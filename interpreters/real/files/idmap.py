"""A user namespace whose only mapping shows one owner as another, for an idmapped mount.

Interpreter side (processes, /proc). An idmapped mount shows a file owned on disk by `uid` as
owned by the uid the mount's user namespace maps it to: the namespace made here maps the grading
repo's owner to the runner account, and nothing else, so a view of the repo through such a mount
belongs to the runner while the repo itself stays as it is. The namespace lives as long as the
descriptor `user_namespace` answers; no process stays in it.
"""

from __future__ import annotations

import ctypes
import os
import subprocess

from interpreters.real.programs import ProgramError, program

__all__ = ["user_namespace"]

_CLONE_NEWUSER = 0x10000000
_unshare = ctypes.CDLL(None, use_errno=True).unshare
_unshare.argtypes = [ctypes.c_int]
_PATH = "/usr/bin:/bin"


def _enter() -> None:
    if _unshare(_CLONE_NEWUSER) < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def user_namespace(shown: tuple[int, int], as_: tuple[int, int]) -> int:
    """A descriptor (close-on-exec) of a new user namespace mapping the uid and gid `shown`
    (as its own ids) to `as_` (ids of ours). Needs root; raises `OSError` when the kernel
    refuses."""
    try:
        cat = program("cat")
    except ProgramError as exc:
        raise FileNotFoundError(str(exc)) from None
    # A child that unshares its user namespace, then waits on its stdin; its maps are written
    # from here (root in the parent namespace may map any id), then its namespace is kept
    # open and the child let go.
    child = subprocess.Popen(
        [cat],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=_enter,  # noqa: PLW1509 - one system call
        env={"PATH": _PATH, "LC_ALL": "C"},
        cwd="/",
    )
    try:
        for kind, inside, outside in (("uid", shown[0], as_[0]), ("gid", shown[1], as_[1])):
            with open(f"/proc/{child.pid}/{kind}_map", "w", encoding="ascii") as mapping:
                mapping.write(f"{inside} {outside} 1\n")
        return os.open(f"/proc/{child.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
