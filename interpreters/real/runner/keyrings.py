"""The runner's kernel keyrings, cleared around each script run in `full` containment (SPEC §5
"Containment").

Interpreter layer (processes, Linux keys). The user keyring, the user session keyring and the
persistent keyring (kept by the kernel for days) belong to a uid, shared by every process of
it: a key one grading's build adds would be there for the next grading's scripts. A short
child takes the runner's uid and clears all three; it runs a program chosen by root (the
containment's init, asked for its version) so that nothing of the runner's is run.

Where the three key system calls are refused to this process whatever their arguments (a
seccomp filter, as Docker's default profile sets in every container; or a kernel without
keys), they are refused to every process it starts, the scripts included: a filter is
inherited and never lifted. No script can then make, find or read a key: nothing to clear.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import platform
import subprocess

from interpreters.real.runner.account import TOOL_ENV, Runner

__all__ = ["clear_keyrings", "out_of_reach"]

_KEY_CALLS = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}.get(platform.machine())
"""add_key(2), request_key(2) and keyctl(2)'s numbers on this machine (None: unknown here)."""
_KEYCTL = _KEY_CALLS[2] if _KEY_CALLS is not None else None
_KEYCTL_CLEAR, _KEYCTL_GET_PERSISTENT = 7, 22
_KEY_SPEC_THREAD_KEYRING = -1
_KEY_SPEC_USER_KEYRING, _KEY_SPEC_USER_SESSION_KEYRING = -4, -5
_EOPNOTSUPP = 95

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long


def _keyctl(*args: int) -> int:
    assert _KEYCTL is not None
    return int(_syscall(ctypes.c_long(_KEYCTL), *(ctypes.c_long(arg) for arg in args)))


def _clear() -> None:
    """Clear this process's persistent, user and user session keyrings (in the child, as the
    runner; the persistent one is linked into its own thread keyring to be its possessor)."""
    persistent = _keyctl(_KEYCTL_GET_PERSISTENT, -1, _KEY_SPEC_THREAD_KEYRING)
    if persistent < 0 and ctypes.get_errno() != _EOPNOTSUPP:  # a kernel without them: none
        raise OSError(ctypes.get_errno(), "keyctl refused the persistent keyring")
    rings = [_KEY_SPEC_USER_KEYRING, _KEY_SPEC_USER_SESSION_KEYRING]
    for ring in [persistent, *rings] if persistent >= 0 else rings:
        if _keyctl(_KEYCTL_CLEAR, ring) < 0:
            raise OSError(ctypes.get_errno(), "keyctl refused")


@functools.cache
def out_of_reach() -> bool:
    """Whether add_key, request_key and keyctl are each refused to this process before their
    arguments are read (EPERM or ENOSYS for calls that would otherwise fail on a null type or
    an unknown operation): then they are to all it starts."""
    if _KEY_CALLS is None:
        return False
    add_key, request_key, keyctl = _KEY_CALLS
    for call in ((add_key, 0, 0, 0, 0, 0), (request_key, 0, 0, 0, 0), (keyctl, -1)):
        if _syscall(*(ctypes.c_long(arg) for arg in call)) >= 0:
            return False
        if ctypes.get_errno() not in (errno.EPERM, errno.ENOSYS):
            return False
    return True


def clear_keyrings(runner: Runner, program: str) -> str | None:
    """Clear the persistent, user and user session keyrings of `runner` (a uid of its own, as
    root), in a child running `program --version`; None when done or when no process of
    ours can reach a key (the module says when), else why not."""
    if _KEYCTL is None:
        return f"no keyctl system call known on {platform.machine()}"
    if out_of_reach():
        return None
    try:
        done = subprocess.run(
            [program, "--version"],
            user=runner.uid,
            group=runner.gid,
            extra_groups=[],
            env=TOOL_ENV,
            cwd="/",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=_clear,  # system calls only
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc) or type(exc).__name__
    return None if done.returncode == 0 else f"{program} --version exited {done.returncode}"
