"""Interpreters that answer effects over the daemon API: grading and the agent's preview.

Interpreter layer.

- `RemoteGrading` answers the grading program's bencher effects (`PrepareGrading`, with the
  patch from `GET /ssegrade/final_diff` for the guard; `Bench`; the guard's `ObserveGuard`)
  over the admin socket and the others (`Archive`, `CheckFinished`, `Notify`, `WriteResult`,
  `WriteGuard`) locally with `ResultsWriter`. Each
  script may run for the script limit or the time left before the grading's `Deadline`,
  whichever is smaller; the run loop ends grading there.
- `PreviewInterpreter` answers the `test_patch` preview's effects: `Bench` over the
  agent-facing socket (never the grading session), `SpillLog` by writing a new file in the log
  folder.
"""

from __future__ import annotations

import errno
import math
import os
import re
import secrets
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, assert_never

from returns.result import Failure, Result, Success

from interpreters.daemon.client import DaemonClient, DaemonError
from interpreters.real.resultsfolder.private import trusted
from ssegrade.internal.effects import (
    Bench,
    Effect,
    ObserveGuard,
    Prepared,
    PrepareError,
    PrepareGrading,
)
from ssegrade.internal.run import Deadline
from ssegrade.preview import SpillLog
from ssegrade.protocol import decode_patch, prepared_result

__all__ = ["PreviewInterpreter", "RemoteGrading"]

_REPLY_GRACE = 300.0
"""Seconds a reply may take beyond the script's limit (the copy of the project, the clean-up)."""


@dataclass
class RemoteGrading:
    """Grading through the daemon: the bencher effects over `client` (the admin socket), the
    rest with `local`. Scripts end by the grading's `deadline`, each at most `script_timeout`
    seconds."""

    client: DaemonClient
    local: Callable[[Effect[Any]], object]
    deadline: Deadline
    script_timeout: float | None = None

    def __call__(self, effect: Effect[Any]) -> object:
        """Answer one grading effect."""
        match effect:
            case PrepareGrading():
                left = self.deadline.left()
                prepared = prepared_result(self.client.prepare_grading(timeout=left + _REPLY_GRACE))
                return self._with_patch(prepared)
            case Bench(action=action, poc=poc):
                limit = min(self.deadline.left(), self.script_timeout or math.inf)
                return self.client.bencher(
                    action, grading=True, poc=poc, limit=limit, timeout=limit + _REPLY_GRACE
                )
            case ObserveGuard():
                return self.client.observe_guard(timeout=_REPLY_GRACE)
            case _:
                return self.local(effect)

    def _with_patch(self, prepared: Result[Prepared, PrepareError]) -> object:
        """The prepared answer with the patch bytes (`GET /ssegrade/final_diff`), which the
        patch guard examines; without them when the daemon cannot give them (the grade never
        depends on them: every copy is made by the daemon)."""
        if not isinstance(prepared, Success) or prepared.unwrap().empty:
            return prepared
        try:
            patch = decode_patch(self.client.final_diff())
        except (DaemonError, ValueError):
            return prepared
        return Success(replace(prepared.unwrap(), patch=patch))


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LOG_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class PreviewInterpreter:
    """Answers the `test_patch` preview: `Bench` on the agent's live tree over `client` (an
    agent-facing listener), `SpillLog` as a new file in `log_dir`. `errors` keeps the daemon
    errors met, for the command to report.

    Without `log_dir`, the first long log makes a new private folder (mode 0700, a name no one
    can guess) in the temporary folder. A given `log_dir` must be a folder this user owns and
    no one else may write to, not a symlink; each log is a new file in it, created without
    following any link.
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
                return reply
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
        if not trusted(os.fstat(fd)):
            os.close(fd)
            raise PermissionError(errno.EPERM, "others may write to the log folder", folder)
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
