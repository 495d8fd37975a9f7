"""Interpreters that answer effects over the daemon API: grading and the agent's preview.

Interpreter layer.

- `RemoteGrading` answers the grading program's bencher effects (`PrepareGrading`, `Bench`)
  over the admin socket and the others (`Archive`, `CheckFinished`, `Notify`, `WriteResult`)
  locally with `ResultsWriter`. It keeps the evaluation's time limits as `LocalSystem` does:
  each script may run for the script limit or the time left, whichever is smaller, and a script
  killed at a limit set by the time left ends grading with `TimeLimitReached`.
- `PreviewInterpreter` answers the `test_patch` preview's effects: `Bench` over the
  agent-facing socket (never the grading session), `SpillLog` by writing a new file in the log
  folder.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, assert_never

from returns.result import Failure, Result, Success

from interpreters.daemon.client import DaemonClient, DaemonError
from ssegrade.effects import (
    Bench,
    Effect,
    PrepareGrading,
    TimeLimitReached,
)
from ssegrade.preview import SpillLog
from ssegrade.protocol import prepared_result, script_result

__all__ = ["PreviewInterpreter", "RemoteGrading"]

_REPLY_GRACE = 300.0
"""Seconds a reply may take beyond the script's limit (the copy of the project, the clean-up)."""


@dataclass
class RemoteGrading:
    """Grading through the daemon: the bencher effects over `client` (the admin socket), the
    rest with `local`. The whole evaluation has `timeout` seconds, each script at most
    `script_timeout`."""

    client: DaemonClient
    local: Callable[[Effect[Any]], object]
    timeout: int = 3600
    script_timeout: float | None = None
    clock: Callable[[], float] = time.monotonic
    deadline: float = field(init=False)

    def __post_init__(self) -> None:
        self.deadline = self.clock() + self.timeout

    def _left(self) -> float:
        left = self.deadline - self.clock()
        if left <= 0:
            raise TimeLimitReached(self.timeout)
        return left

    def __call__(self, effect: Effect[Any]) -> object:
        """Answer one grading effect."""
        match effect:
            case PrepareGrading():
                left = max(self.deadline - self.clock(), 0.0)
                return prepared_result(self.client.prepare_grading(timeout=left + _REPLY_GRACE))
            case Bench(action=action, poc=poc):
                left = self._left()
                bound_by_total = self.script_timeout is None or self.script_timeout >= left
                limit = left if bound_by_total else float(self.script_timeout or left)
                try:
                    reply = self.client.bencher(
                        action, grading=True, poc=poc, limit=limit, timeout=limit + _REPLY_GRACE
                    )
                except DaemonError:
                    if self.clock() >= self.deadline:
                        raise TimeLimitReached(self.timeout) from None
                    raise
                result = script_result(reply)
                if result.killed and bound_by_total:
                    raise TimeLimitReached(self.timeout)
                return result
            case _:
                return self.local(effect)


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LOG_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class PreviewInterpreter:
    """Answers the `test_patch` preview: `Bench` on the agent's live tree over `client` (an
    agent-facing listener), `SpillLog` as a new file in `log_dir`. `errors` keeps the daemon
    errors met, for the command to report.

    Without `log_dir`, the first long log makes a new private folder (mode 0700, a name no one
    can guess) in the temporary folder. A given `log_dir` must be a folder this user owns,
    not a symlink; each log is a new file in it, created without following any link.
    """

    client: DaemonClient
    log_dir: Path | None = None
    errors: list[str] = field(default_factory=list)
    made_dir: Path | None = field(default=None, init=False)

    def __call__(self, effect: Effect[Any]) -> object:
        """Answer one preview effect."""
        if not isinstance(effect, Bench | SpillLog):
            raise TypeError(f"not a preview effect: {effect!r}")
        match effect:
            case Bench(action=action, poc=poc):
                try:
                    reply = self.client.bencher(action, poc=poc, timeout=None)
                except DaemonError as exc:
                    self.errors.append(str(exc))
                    raise
                return script_result(reply)
            case SpillLog(name=name, text=text):
                return self._spill(name, text)
            case _:
                assert_never(effect)

    def _open_folder(self) -> tuple[Path, int]:
        if self.log_dir is None:
            if self.made_dir is None:
                self.made_dir = Path(tempfile.mkdtemp(prefix="ssegrade-test-patch-")).absolute()
            folder = self.made_dir
        else:
            folder = self.log_dir.absolute()
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(folder, _FOLDER_FLAGS)  # a symlink planted there is never followed
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise NotADirectoryError(exc.errno, "not a folder (or a symlink)", folder) from None
            raise
        if os.fstat(fd).st_uid != os.geteuid():
            os.close(fd)
            raise PermissionError(errno.EPERM, "the log folder belongs to another user", folder)
        return folder, fd

    def _spill(self, name: str, text: str) -> Result[str, str]:
        stem = _UNSAFE.sub("_", name).strip("._") or "test_patch"
        folder: Path | str = self.log_dir or "the temporary folder"
        try:
            folder, fd = self._open_folder()
            try:
                for _attempt in range(100):
                    file_name = f"{stem}-{secrets.token_hex(6)}.log"
                    try:
                        handle = os.open(file_name, _LOG_FLAGS, 0o600, dir_fd=fd)
                    except FileExistsError:
                        continue
                    break
                else:
                    raise FileExistsError(errno.EEXIST, "no free name", folder)
            finally:
                os.close(fd)
            with os.fdopen(handle, "w", encoding="utf-8", errors="replace") as out:
                out.write(text)
        except OSError as exc:
            return Failure(f"{exc.strerror or exc}: {folder}")
        return Success(str(Path(folder) / file_name))
