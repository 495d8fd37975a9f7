"""The run folders of a batch, as the driver sees them: found, made ready, held, believed.

Interpreter layer (files). The results folder of a batch is private (`private`): refused when
it is a link, another user's, or writable by group or others. Every run folder below it is
reached one component at a time relative to its parent's descriptor, never through a link,
each folder checked on its descriptor; nothing is read from it unless it is a regular file of
ours that no one else may write to. A run folder is written only while the driver holds it
(`holding`): `prepare` claims it, marks it incomplete, removes `result.json` and
`summary.json` first, then the rest, and shares the hold with the worker that grades it
(`interpreters.app.grading.HeldGrade`, with this batch's token).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interpreters.real import files
from interpreters.real.files.descriptors import write_all
from interpreters.real.resultsfolder import holding
from interpreters.real.resultsfolder.holding import INCOMPLETE, LOCK, FolderHeld, Hold
from interpreters.real.resultsfolder.private import (
    DIR_FLAGS,
    FolderRefused,
    make_private,
    open_below,
    read_trusted,
    trusted,
)
from interpreters.real.resultsfolder.ready import AGENT_PHASE, RESULTS_ENTRIES
from ssegrade import Status
from ssegrade.internal.result import ErrorKind, error_kind_of

__all__ = [
    "RUN_ENTRIES",
    "SUMMARY",
    "FolderHeld",
    "FolderRefused",
    "Found",
    "RunFolders",
    "summary_error_kind",
    "summary_status",
]

SUMMARY = "summary.json"
"""The batch's document of a run, written last."""
RUN_ENTRIES = (RESULTS_ENTRIES - {AGENT_PHASE}) | {SUMMARY, INCOMPLETE, LOCK}
"""What a run folder may hold (what a grading writes but the daemon's agent phase, and the
batch's own marks); a folder holding anything else is not a run folder."""
_MARKS = (SUMMARY, "result.json", INCOMPLETE, LOCK)
"""Any of these makes a folder a run folder: no other run folder may lie inside it."""
_MAX_DOCUMENT = 64 << 20
_MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class Found:
    """A run folder as planning finds it: missing, held by a live grading, or its entries
    and its summary (None when it has none we wrote)."""

    exists: bool
    held: bool = False
    names: frozenset[str] = frozenset()
    summary: dict[str, Any] | None = None

    @property
    def leftover(self) -> bool:
        """An interrupted run: marked incomplete."""
        return INCOMPLETE in self.names

    @property
    def strangers(self) -> list[str]:
        """Entries no run folder holds."""
        return sorted(self.names - RUN_ENTRIES)

    @property
    def empty(self) -> bool:
        """Nothing in it but a lock file."""
        return not self.names - {LOCK}

    def done(self, digest: str) -> bool:
        """It holds a finished run of `digest`."""
        return self.summary is not None and not self.leftover and self._digest == digest

    @property
    def _digest(self) -> object:
        return None if self.summary is None else self.summary.get("digest")

    def refusal(self, folder: Path, digest: str, *, force: bool) -> str | None:
        """Why a job of `digest` cannot be graded into this folder (at `folder`), or None:
        it is no run folder, or holds another grading's files (unless `force`)."""
        if not self.exists or self.held or self.empty:
            return None
        if self.strangers:
            return f"{folder} is not a run folder (it holds {self.strangers[0]!r})"
        if self.leftover or force or self.done(digest):
            return None
        what = "a grade with another digest" if self.summary is not None else "other files"
        return f"{folder} holds {what} (--force grades it again)"


def summary_status(doc: Mapping[str, Any]) -> Status:
    """The status a summary records (`error` when it records none that is valid)."""
    patch = doc.get("patch_result")
    status = patch.get("status") if isinstance(patch, dict) else None
    return status if status in ("passed", "failed") else "error"


def summary_error_kind(doc: Mapping[str, Any]) -> ErrorKind | None:
    """The kind of the `error` a summary records (None when it records another grade)."""
    patch, runtime = doc.get("patch_result"), doc.get("runtime_result")
    message = patch.get("error_msg") if isinstance(patch, dict) else None
    kind = runtime.get("error_kind") if isinstance(runtime, dict) else None
    return error_kind_of(summary_status(doc), message, kind)


def _document(data: bytes | None) -> dict[str, Any] | None:
    if data is None:
        return None
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


@dataclass
class RunFolders:
    """The run folders below the private results folder `root`, for one batch."""

    root: Path
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    _top: int = field(default=-1, init=False)

    def __post_init__(self) -> None:
        self.root = self.root.absolute()
        self._top = make_private(self.root)

    def close(self) -> None:
        """Close the results folder."""
        if self._top >= 0:
            os.close(self._top)
            self._top = -1

    # ------------------------------------------------------------------ reading

    def _open(self, parts: Sequence[str], *, create: bool) -> int | None:
        """The run folder `parts`, by descriptors; `FolderRefused` when a folder on the way
        is a link, not private, or a run folder itself."""
        fd = os.dup(self._top)
        where = self.root
        try:
            for index, part in enumerate(parts):
                if index and _is_run(fd):
                    raise FolderRefused(f"{where / part}: would lie inside the run folder {where}")
                child = open_below(fd, where, (part,), create=create)
                os.close(fd)
                fd = -1 if child is None else child
                if fd < 0:
                    return None
                where = where / part
        except BaseException:
            if fd >= 0:
                os.close(fd)
            raise
        return fd

    def look(self, parts: Sequence[str]) -> Found:
        """What the run folder `parts` holds now (`FolderRefused` as for `_open`)."""
        fd = self._open(parts, create=False)
        if fd is None:
            return Found(exists=False)
        try:
            if holding.is_held(fd):
                return Found(exists=True, held=True)
            names = frozenset(os.listdir(fd))
            summary = _document(read_trusted(fd, SUMMARY, _MAX_DOCUMENT))
            return Found(exists=True, names=names, summary=summary)
        finally:
            os.close(fd)

    def read(self, relative: str, name: str) -> bytes | None:
        """A file of ours in the run folder `relative` (a `/`-separated path below the
        root), or None."""
        try:
            fd = self._open(relative.split("/"), create=False)
        except FolderRefused:
            return None
        if fd is None:
            return None
        try:
            return read_trusted(fd, name, _MAX_DOCUMENT)
        finally:
            os.close(fd)

    def summary(self, relative: str) -> dict[str, Any] | None:
        """The summary of ours in the run folder `relative`, or None."""
        return _document(self.read(relative, SUMMARY))

    def graded(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(run folder relative to the root, summary) of every finished run below the root
        that this user wrote: not marked incomplete (a run being written is), with a result;
        folders that are links or not private are left out."""
        yield from _runs(self._top, (), 0)

    # ------------------------------------------------------------------ writing

    def prepare(self, parts: Sequence[str]) -> Hold:
        """Make the run folder `parts` ready for a new grading and hold it, shared with the
        worker that will grade it: claimed, marked incomplete, cleared (`result.json` and
        `summary.json` first), `logs/` made. `FolderHeld` when a live grading holds it,
        `FolderRefused` when it cannot be reached safely."""
        fd = self._open(parts, create=True)
        assert fd is not None
        held = holding.claim(fd, self.root.joinpath(*parts), self.token)
        try:
            held.clear()
            with contextlib.suppress(FileExistsError):
                os.mkdir("logs", 0o700, dir_fd=held.folder)
            held.share()
        except BaseException:
            held.release()
            raise
        return held

    def write(self, held: Hold, name: str, data: bytes) -> None:
        """Write the file `name` whole into the held run folder."""
        files.atomic_write(held.path / name, data)

    def write_top(self, name: str, data: bytes) -> None:
        """Write the file `name` whole at the top of the results folder, through its
        descriptor: a temporary file made there (never through a link), then renamed over
        `name` (a link planted as `name` is replaced, not followed)."""
        temp = f".{name}.{secrets.token_hex(8)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temp, flags, 0o644, dir_fd=self._top)
        try:
            try:
                write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, name, src_dir_fd=self._top, dst_dir_fd=self._top)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=self._top)
            raise

    def remove(self, held: Hold) -> None:
        """Remove the held run folder (a grading killed half-way), then let it go."""
        try:
            files.remove_tree(held.path)
        finally:
            held.release()


def _ours(fd: int, name: str) -> bool:
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and trusted(info)


def _is_run(fd: int) -> bool:
    for name in _MARKS:
        with contextlib.suppress(OSError):
            os.stat(name, dir_fd=fd, follow_symlinks=False)
            return True
    return False


def _runs(fd: int, parts: tuple[str, ...], depth: int) -> Iterator[tuple[str, dict[str, Any]]]:
    if depth > _MAX_DEPTH:
        return
    try:
        names = os.listdir(fd)
    except OSError:
        return
    if SUMMARY in names:
        if INCOMPLETE in names:  # being written, or cut short
            return
        doc = _document(read_trusted(fd, SUMMARY, _MAX_DOCUMENT))
        if doc is not None and _ours(fd, "result.json"):
            yield "/".join(parts), doc
        return
    for name in sorted(names):
        try:
            child = os.open(name, DIR_FLAGS, dir_fd=fd)
        except OSError:
            continue  # a link, a file, or gone
        try:
            if trusted(os.fstat(child)):
                yield from _runs(child, (*parts, name), depth + 1)
        finally:
            os.close(child)
