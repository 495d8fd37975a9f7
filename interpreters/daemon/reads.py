"""What the daemon reads to serve its API, answered as effects (`DaemonRead`).

Interpreter layer. `DaemonReads` answers the live tree's patch and changed files (captured and
staged exactly as grading does), the files of the results folder, the task's files (never
through a link, never from a FIFO) and the agent side's dialog file (never through a link the
agent made, never blocking on a FIFO, at most `MAX_DIALOG` bytes).
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, assert_never

from interpreters.real import git
from interpreters.real.files.reading import read_start
from ssegrade.internal.effects import (
    CaptureTree,
    ChangedFiles,
    DaemonRead,
    Effect,
    ReadArtifact,
    ReadDialog,
    ReadTaskFile,
)

__all__ = ["DIALOG", "MAX_DIALOG", "DaemonReads"]

DIALOG = "dialog.jsonl"
"""The agent side's dialog file, in the archive folder (`SSE_ARCHIVE`)."""
MAX_DIALOG = 16 << 20
"""A larger dialog file is read up to this many bytes."""
_AGENT_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class DaemonReads:
    """Answers `DaemonRead` over the agent's live `source` and its `baseline`, the results
    folder `results` and the agent side's `archive` folder (None: no dialog)."""

    source: Path
    baseline: git.Baseline
    results: Path
    archive: Path | None = None

    def __call__(self, effect: Effect[Any]) -> object:
        """Answer one read."""
        if not isinstance(effect, DaemonRead):
            raise TypeError(f"not a read of the daemon: {effect!r}")
        match effect:
            case CaptureTree():
                return git.capture(self.source, self.baseline)
            case ChangedFiles():
                return git.changed_files(self.source, self.baseline)
            case ReadArtifact(name=name):
                try:
                    return (self.results / name).read_bytes()
                except FileNotFoundError:
                    return None
            case ReadTaskFile(path=path, limit=limit):
                return read_start(path, limit)
            case ReadDialog():
                return self._dialog()
            case _:
                assert_never(effect)

    def _dialog(self) -> bytes | None:
        """The dialog file of the archive folder, read without following a final link and
        without blocking on a FIFO; None when it is missing, a link or not a regular file."""
        if self.archive is None:
            return None
        try:
            fd = os.open(self.archive / DIALOG, _AGENT_FILE)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
                return None
            raise
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            chunks: list[bytes] = []
            size = 0
            while size < MAX_DIALOG and (chunk := os.read(fd, min(1 << 20, MAX_DIALOG - size))):
                chunks.append(chunk)
                size += len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)
