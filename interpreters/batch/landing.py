"""The driver's side of the Ray engine: a grading's run folder arriving from its node, written
into the run folder the driver holds.

Interpreter layer (files). The pieces a node sends (`interpreters.batch.transit`) are
written into the held run folder by its descriptor, with the trust rules of a local
grading: a path must name an entry a run folder holds (never `summary.json`, `.lock` or
`.incomplete`, never `..`), folders on the way are opened without following a link and must
be private (`resultsfolder.private.open_below`), each file is written under a temporary
name (`O_EXCL`, `O_NOFOLLOW`), synced and renamed over its own once whole: a reader sees a
whole file or none. A piece is written as it comes: the driver holds one piece of a grading
at a time, never a whole file. A grading lost on its way (its worker or node died, a piece
that breaks these rules) leaves its folder cleared and an `error` result in it, as a
grading that raised does.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from interpreters.batch.transit import CHUNK, Piece
from interpreters.batch.work import Work
from interpreters.real.resultsfolder.holding import INCOMPLETE, LOCK, Hold
from interpreters.real.resultsfolder.private import FolderRefused, open_below
from interpreters.real.resultsfolder.runs import RUN_ENTRIES, SUMMARY
from ssegrade import EvaluationResult, RuntimeResult
from ssegrade.internal.errors import SsegradeError
from ssegrade.internal.verdict import Crashed, not_graded

__all__ = ["Arrival", "Landing", "TransitError"]

_FILES = RUN_ENTRIES - {SUMMARY, LOCK, INCOMPLETE}
"""What a node may send at the top of a run folder."""
_FOLDERS = frozenset({"logs"})
"""Which of them are folders."""
_MAX_PARTS = 9
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class TransitError(SsegradeError):
    """A piece that does not belong in a run folder, or that could not be written: one
    line."""


@dataclass(frozen=True, slots=True)
class Landing:
    """Where gradings' files land: the run folders the driver holds, by the key of their
    work, and the token it holds them with (a node holds its own run folder with the same
    token, so a grading function joins it there as it would here)."""

    token: str
    holds: Mapping[int, Hold]

    def arrival(self, work: Work) -> Arrival | None:
        """The arrival of `work`'s files into its held run folder; None when the driver
        does not hold it (another grading took it)."""
        hold = self.holds.get(work.key)
        return None if hold is None or not hold.open else Arrival(hold, work.runtime)


@dataclass(slots=True)
class _File:
    folder: int
    name: str
    temp: str
    fd: int
    mode: int
    path: str


@dataclass
class Arrival:
    """One grading's files arriving into the run folder `hold`."""

    hold: Hold
    runtime: RuntimeResult
    received: int = 0
    """Bytes written so far."""
    _file: _File | None = None

    def take(self, piece: Piece) -> None:
        """Write one piece; its file takes its name once whole. `TransitError` when it does
        not belong in a run folder or cannot be written."""
        if len(piece.data) > CHUNK:
            size = len(piece.data)
            raise TransitError(f"{piece.path}: a piece of {size} bytes (at most {CHUNK})")
        current = self._file
        if current is not None and current.path != piece.path:
            raise TransitError(f"{piece.path}: sent before {current.path} was whole")
        try:
            if current is None:
                current = self._file = self._start(piece)
            view = memoryview(piece.data)
            while view:
                view = view[os.write(current.fd, view) :]
            self.received += len(piece.data)
            if piece.last:
                self._file = None
                _finish(current)
        except OSError as exc:
            raise TransitError(f"{piece.path}: {exc.strerror or exc}") from None

    def _start(self, piece: Piece) -> _File:
        parts = _parts(piece.path)
        try:
            folder = open_below(self.hold.folder, self.hold.path, parts[:-1], create=True)
        except FolderRefused as exc:
            raise TransitError(str(exc)) from None
        assert folder is not None
        return _create(folder, parts[-1], piece.mode & 0o755, piece.path)

    def close(self) -> None:
        """Drop a file not yet whole (its temporary file is removed)."""
        current, self._file = self._file, None
        if current is not None:
            os.close(current.fd)
            with contextlib.suppress(OSError):
                os.unlink(current.temp, dir_fd=current.folder)
            os.close(current.folder)

    def lost(self, why: str) -> EvaluationResult:
        """The grading did not arrive whole: its folder cleared, and an `error` result
        saying `why` written in it (as far as the folder can be written)."""
        self.close()
        result = not_graded(Crashed(why, kind="infrastructure"), self.runtime)
        with contextlib.suppress(OSError):
            self.hold.clear()
            with contextlib.suppress(FileExistsError):
                os.mkdir("logs", 0o700, dir_fd=self.hold.folder)
            folder = os.dup(self.hold.folder)
            _finish(_create(folder, "result.json", 0o644, "result.json"), result.to_json())
        return result


def _create(folder: int, name: str, mode: int, path: str) -> _File:
    """A new temporary file for `name` in the folder open as `folder` (which it takes
    over: closed with the file, or now if it cannot be made)."""
    temp = f".{name}.{secrets.token_hex(8)}.tmp"
    try:
        fd = os.open(temp, _CREATE, 0o600, dir_fd=folder)
    except BaseException:
        os.close(folder)
        raise
    return _File(folder, name, temp, fd, mode, path)


def _finish(file: _File, data: bytes = b"") -> None:
    """Write `data`, sync, set the mode and rename the file over its own name; close it."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(file.fd, view) :]
        os.fsync(file.fd)
        os.fchmod(file.fd, file.mode)
        os.replace(file.temp, file.name, src_dir_fd=file.folder, dst_dir_fd=file.folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(file.temp, dir_fd=file.folder)
        raise
    finally:
        os.close(file.fd)
        os.close(file.folder)


def _parts(path: str) -> list[str]:
    """The components of a path a node sent, when it names a file a run folder may hold."""
    parts = path.split("/")
    bad = any(part in ("", ".", "..") or "\0" in part for part in parts)
    if bad or len(parts) > _MAX_PARTS or parts[0] not in _FILES:
        raise TransitError(f"{path!r}: not a file of a run folder")
    if len(parts) > 1 and parts[0] not in _FOLDERS:
        raise TransitError(f"{path!r}: {parts[0]} is not a folder of a run folder")
    if len(parts) == 1 and parts[0] in _FOLDERS:
        raise TransitError(f"{path!r}: a folder of a run folder")
    return parts
