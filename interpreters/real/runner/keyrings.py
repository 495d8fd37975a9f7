"""The runner's kernel keyrings, cleared around each script run in `full` containment (SPEC §5
"Containment").

Interpreter layer (processes, Linux keys). The user keyring and the user session keyring
belong to a uid, shared by every process of it: a key one grading's build adds would be there
for the next grading's scripts. A short child takes the runner's uid and clears both; it runs a
program chosen by root (the containment's init, asked for its version) so that nothing of the
runner's is run.
"""

from __future__ import annotations

import ctypes
import platform
import subprocess

from interpreters.real.runner.account import TOOL_ENV, Runner

__all__ = ["clear_keyrings"]

_KEYCTL = {"x86_64": 250, "aarch64": 219}.get(platform.machine())
"""keyctl(2)'s number on this machine (None: unknown here)."""
_KEYCTL_CLEAR = 7
_KEY_SPEC_USER_KEYRING, _KEY_SPEC_USER_SESSION_KEYRING = -4, -5

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long


def _clear() -> None:
    """Clear this process's user and user session keyrings (in the child, as the runner)."""
    assert _KEYCTL is not None
    for ring in (_KEY_SPEC_USER_KEYRING, _KEY_SPEC_USER_SESSION_KEYRING):
        if _syscall(ctypes.c_long(_KEYCTL), ctypes.c_int(_KEYCTL_CLEAR), ctypes.c_int(ring)) < 0:
            raise OSError(ctypes.get_errno(), "keyctl refused")


def clear_keyrings(runner: Runner, program: str) -> str | None:
    """Clear the user and user session keyrings of `runner` (a uid of its own, as root), in a
    child running `program --version`; None when done, else why not."""
    if _KEYCTL is None:
        return f"no keyctl system call known on {platform.machine()}"
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
