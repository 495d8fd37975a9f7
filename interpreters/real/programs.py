"""The programs ssegrade starts itself (git, `unshare`, `setpriv`, `timeout`, `useradd`, `find`…),
found once on a fixed search path that root owns (SPEC §5, "Root runs nothing it did not
choose").

Interpreter layer (reads file metadata only). `PATH` from the environment never decides what
runs: in a task image it may lead with a folder anyone can write to (`/go/bin`, a
`CARGO_HOME`), where a build script or the agent would plant a `git` for root to run. A
program is looked up in `SEARCH_PATH`, in order; the first executable file found is taken
only when every folder on the way to it, link hops included, and the file itself can be
changed by no user but root (`trusted_paths`: owned by root, writable by neither group nor
others; without root, owned by root or by us). A search folder that is not so is skipped
while the name is missing from it; holding the name, it refuses the program, as does a file
or link hop that is not so: `ProgramError`, one line naming the program, the folder or file
and why.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Sequence

from interpreters.real.trusted_paths import Unsafe, resolve_safe
from ssegrade.internal.errors import SsegradeError

__all__ = [
    "SEARCH_PATH",
    "ProgramError",
    "ProgramMissing",
    "find_program",
    "program",
    "search_path",
]

SEARCH_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
"""Where the programs ssegrade starts are looked up: the system's own folders, never `PATH`."""


class ProgramError(SsegradeError):
    """A program that cannot be run: missing, or reachable by another user; `str` is one
    line naming it, where and why."""


class ProgramMissing(ProgramError):
    """No executable of that name in the search path."""


def find_program(name: str, search: Sequence[str] = SEARCH_PATH) -> str:
    """The real path of the executable `name` in the folders `search`, checked as the module
    says; raises `ProgramError` when it is missing or another user could have chosen it."""
    if not name or "/" in name:
        raise ProgramError(f"program {name!r}: not a program name")
    for folder in search:
        if not folder.startswith("/"):
            continue  # a relative folder would name whatever the current one holds
        candidate = os.path.join(folder, name)
        try:
            found = resolve_safe(candidate, entry=False)
            info = os.stat(found)
            if not (stat.S_ISREG(info.st_mode) and os.access(found, os.X_OK)):
                continue  # as a shell's lookup: not a program, the search goes on
            resolve_safe(found)  # the file itself
        except Unsafe as exc:
            if not os.path.lexists(candidate):
                continue  # a folder others could write to, but the name is not there
            raise ProgramError(f"program {name!r} refused: {exc}") from None
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            raise ProgramError(f"program {name!r} refused: {candidate}: {exc.strerror}") from None
        return found
    raise ProgramMissing(f"program {name!r} not found in {':'.join(search)}")


@functools.cache
def program(name: str) -> str:
    """`find_program(name)` on `SEARCH_PATH`, found once per process."""
    return find_program(name)


@functools.cache
def search_path() -> str:
    """`SEARCH_PATH` as a `PATH` value, without the folders another user could change: the
    `PATH` of the programs ssegrade starts (git's helpers are found there)."""
    kept: list[str] = []
    for folder in SEARCH_PATH:
        try:
            resolve_safe(folder)
        except (Unsafe, OSError):
            continue
        kept.append(folder)
    return ":".join(kept)
