"""Scratch folders under the guard of this process's guardian (the process is `guardian`'s).

Interpreter layer (processes, files). `scratch_folder` starts this process's guardian when it
has none (before any folder it must remove exists), then makes a folder named for this
process's owner tag in the temporary folder; `release_scratch` hands a folder to the guardian
to remove in the background. If this process dies, whenever that is, the pipe to its guardian
ends: the guardian kills what its gradings left running and removes every scratch folder of
its tag, also one made an instant before the death. `guarded_tag` starts it before anything
else named for the tag is made (a run's cgroup, the probe's trial groups).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from interpreters.real.files import remove_tree
from interpreters.real.runner import guardian
from interpreters.real.runner.account import TOOL_ENV

__all__ = ["guarded_tag", "release_scratch", "scratch_folder", "scratch_parent"]


@dataclass(slots=True)
class _Guardian:
    """This process's guardian: its tag, its temporary folder, the pipe to it."""

    pid: int
    tag: str
    parent: str
    pipe: int | None
    child: int | None
    """The guardian's pid (a child of `pid`), None when it could not start."""

    def alive(self) -> bool:
        """Whether the guardian still runs (reaped here once it has ended)."""
        if self.pipe is None or self.child is None:
            return False
        try:
            ended, _status = os.waitpid(self.child, os.WNOHANG)
        except ChildProcessError:
            ended = self.child
        if ended:
            self.child = None
        return not ended

    def tell(self, line: bytes) -> bool:
        """Send one line; False when the guardian is gone."""
        if self.pipe is None:
            return False
        try:
            os.write(self.pipe, line + b"\n")  # one write below PIPE_BUF: never interleaved
        except OSError:
            return False
        return True


_lock = threading.Lock()
_guardians: dict[int, _Guardian] = {}


def _start() -> _Guardian:
    tag, parent = guardian.owner_tag(), os.path.realpath(tempfile.gettempdir())
    command = [
        sys.executable,
        "-I",
        "-S",
        os.fspath(Path(guardian.__file__ or "guardian.py")),
        tag,
        parent,
    ]
    read, write = os.pipe()  # not inherited: only this process holds the writing end
    # Spawned, not a `Popen`: it is meant to outlive this process, and a `Popen` still
    # running when it is collected (at exit, or dropped by a forked child) warns.
    actions = [
        (os.POSIX_SPAWN_DUP2, read, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    try:
        # Its own session: a Ctrl-C at the terminal is not for it. It moves to `/` itself.
        child = os.posix_spawn(command[0], command, TOOL_ENV, file_actions=actions, setsid=True)
    except OSError:
        os.close(write)
        return _Guardian(os.getpid(), tag, parent, None, None)
    finally:
        with contextlib.suppress(OSError):
            os.close(read)
    return _Guardian(os.getpid(), tag, parent, write, child)


def _guardian() -> _Guardian:
    """This process's guardian, started when it has none (or a forked child's parent's)."""
    with _lock:
        found = _guardians.pop(os.getpid(), None)
        if found is not None and not found.alive():
            _close(found)
            found = None
        for other in _guardians.values():  # a forked child: its parent's pipe is not its own
            _close(other)
        _guardians.clear()
        _guardians[os.getpid()] = found = found or _start()
        return found


def _close(found: _Guardian) -> None:
    pipe, found.pipe = found.pipe, None
    if pipe is not None:
        with contextlib.suppress(OSError):
            os.close(pipe)


def guarded_tag() -> str:
    """This process's owner tag, once its guardian runs (started here when it has none):
    what is named for the tag from now on is removed even after a kill -9 of this process."""
    return _guardian().tag


def scratch_folder(kind: str = "") -> Path:
    """A new private folder in the temporary folder, named for this process's owner tag
    (`ssegrade-[<kind>-]<tag>-<random>`), under the guard of its guardian."""
    guard = _guardian()
    prefix = f"ssegrade-{kind}-" if kind else "ssegrade-"
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{guard.tag}-", dir=guard.parent))


def scratch_parent() -> str:
    """The folder this process makes its scratch folders in (resolved): its guardian's, else
    the temporary folder. Scripts never see it (see `reach`)."""
    with _lock:
        found = _guardians.get(os.getpid())
    return found.parent if found is not None else os.path.realpath(tempfile.gettempdir())


def release_scratch(folder: Path) -> None:
    """`folder` (from `scratch_folder`) is no longer needed: the guardian removes it in the
    background (here and now when there is no guardian)."""
    with _lock:
        found = _guardians.get(os.getpid())
    absolute = os.path.join(os.path.realpath(folder.parent), folder.name)
    if found is None or not found.tell(b"-" + os.fsencode(absolute)):
        remove_tree(folder)
