"""Finding and reading the run documents of a results folder, in process or beside it.

Interpreter layer, the lowest of the report's reading side; it imports nothing of ssegrade,
so that it starts at once as a process of its own. `walk` yields, folder by folder in sorted
order, each run folder's document (`Document`: its bytes, not parsed), a warning line for
each file or folder it skips, `TaskDone` once a task's folder was read, and at the end how
many run folders it found (`Counted`). `interpreters.report.io` parses and folds what it
yields. The command runs `walk` in a child process (`main`) that writes the same events as
frames on its stdout, as `find | xargs cat` runs two processes: the kernel's work of listing
folders and reading files then goes on while the report parses what came before.

A run folder is any folder at least four levels below the results folder
(`<task>/<model…>/<agent>/<run-id>/`) holding `summary.json` or `result.json`; its folders are
not searched. At that depth `summary.json` is opened first, without listing the folder (a
listing is made when it is missing); the files a page links to are then looked up by name.
A `result.json` comes with the patch guard's `guard.json` beside it, when there is one (a
summary carries the guard's record itself).

The files of a run folder may have been written by a hostile agent: each is opened without
following a final symbolic link and without blocking (a FIFO cannot hang the report), and is
read only when it is a regular file of at most `MAX_BYTES`. Folders are listed without
following links, so a link (SSEBench's `latest`) is never a second copy of a run.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from interpreters.report.links import RUN_FILES
from ssegrade.internal.errors import SsegradeError

__all__ = [
    "DOCUMENTS",
    "GUARD",
    "MAX_BYTES",
    "Counted",
    "Document",
    "Event",
    "Skip",
    "TaskDone",
    "main",
    "read",
    "read_frames",
    "walk",
]

DOCUMENTS = ("summary.json", "result.json")
"""The files that make a folder a run folder, in the order they are tried."""

GUARD = "guard.json"
"""The patch guard's file beside `result.json`; `summary.json` carries it as `guard`."""

MAX_BYTES = 64 << 20
"""A larger document is skipped with a warning (a summary is a few KiB; logs are cut)."""

_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK


class Skip(SsegradeError):
    """One document cannot be read; the message says why."""


@dataclass(frozen=True, slots=True)
class Document:
    """A run folder's document: the folder below the results folder (`/`-separated), the
    file's name, its bytes, which of `RUN_FILES` the folder holds (when asked), and, beside a
    `result.json`, the bytes of `guard.json` (None when it is missing or cannot be read)."""

    folder: str
    name: str
    data: bytes
    files: frozenset[str] | None = None
    guard: bytes | None = None


@dataclass(frozen=True, slots=True)
class TaskDone:
    """Every run of the task folder just read was yielded."""


@dataclass(frozen=True, slots=True)
class Counted:
    """The end: how many run folders were found (readable or not)."""

    folders: int


Event = Document | TaskDone | Counted | str
"""What `walk` yields; a `str` is one warning line."""


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def read(path: str, dir_fd: int | None = None) -> bytes | None:
    """The regular file's bytes; None when it does not exist. Raises `Skip` otherwise."""
    try:
        fd = os.open(path, _FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Skip("it is a symbolic link") from None
        if exc.errno == errno.ENOTDIR:
            return None
        raise Skip(f"cannot read it ({_why(exc)})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Skip("not a regular file")
        limit = MAX_BYTES
        if info.st_size > limit:
            raise Skip(f"larger than {limit >> 20} MiB")
        first = os.read(fd, info.st_size + 1)
        if len(first) <= info.st_size:
            return first
        # The file grew since fstat: read on, within the limit.
        chunks = [first]
        size = len(first)
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise Skip(f"larger than {limit >> 20} MiB")
        return b"".join(chunks)
    except OSError as exc:
        raise Skip(f"cannot read it ({_why(exc)})") from None
    finally:
        os.close(fd)


def _is_dir(entry: os.DirEntry[str] | None) -> bool:
    try:
        return entry is not None and entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_file(entry: os.DirEntry[str] | None) -> bool:
    try:
        return entry is not None and entry.is_file(follow_symlinks=False)
    except OSError:
        return False


def _present(path: str) -> frozenset[str]:
    """Which of `RUN_FILES` the run folder holds (a regular file, or a folder), its names
    listed, and the status of those it has looked at without following a link."""
    try:
        names = os.listdir(path)
    except OSError:
        return frozenset()
    found = []
    for _, name, is_folder in RUN_FILES:
        if name not in names:
            continue
        try:
            mode = os.lstat(f"{path}/{name}").st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode) if is_folder else stat.S_ISREG(mode):
            found.append(name)
    return frozenset(found)


class _Walk:
    __slots__ = ("files", "folders", "ssebench")

    def __init__(self, ssebench: bool, files: bool) -> None:
        self.ssebench = ssebench
        self.files = files
        self.folders = 0

    def folder(self, path: str, parts: tuple[str, ...]) -> Iterator[Event]:
        if len(parts) >= 4:
            # Deep enough to be a run: its summary first, without listing the folder.
            name = f"{path}/summary.json"
            try:
                data = read(name)
            except Skip as why:
                self.folders += 1
                yield f"{name}: skipped, {why}"
                yield from self.documents(path, parts, None, first=1)
                return
            if data is not None:
                self.folders += 1
                if data.strip():
                    files = _present(path) if self.files else None
                    yield Document("/".join(parts), "summary.json", data, files)
                    return
                yield f"{name}: skipped, empty (a run not finished?)"
                yield from self.documents(path, parts, None, first=1)
                return
        try:
            with os.scandir(path) as it:
                entries = {entry.name: entry for entry in it}
        except OSError as exc:
            yield f"{path}: skipped, cannot list the folder ({_why(exc)})"
            return
        if len(parts) >= 4 and any(name in entries for name in DOCUMENTS):
            self.folders += 1
            yield from self.documents(path, parts, entries)
            return
        for name in sorted(name for name, entry in entries.items() if _is_dir(entry)):
            yield from self.folder(f"{path}/{name}", (*parts, name))
            if not parts:  # a task's folder was read whole
                yield TaskDone()

    def documents(
        self,
        path: str,
        parts: tuple[str, ...],
        entries: dict[str, os.DirEntry[str]] | None,
        first: int = 0,
    ) -> Iterator[Event]:
        """The first readable, non-empty document of a run folder (`entries`: its listing,
        if made), from `DOCUMENTS[first]` on."""
        files = None
        if self.files:
            files = (
                _present(path)
                if entries is None
                else frozenset(
                    name
                    for _, name, is_folder in RUN_FILES
                    if (_is_dir if is_folder else _is_file)(entries.get(name))
                )
            )
        for name in DOCUMENTS[first:]:
            if self.ssebench and name != "summary.json":
                continue  # SSEBench's report stops at a folder of grades, but reads only summaries
            if entries is not None and name not in entries:
                continue
            try:
                data = read(f"{path}/{name}")
            except Skip as why:
                yield f"{path}/{name}: skipped, {why}"
                continue
            if data is None:
                continue
            if not data.strip():
                yield f"{path}/{name}: skipped, empty (a run not finished?)"
                continue
            guard = guard_beside(path) if name == "result.json" else None
            yield Document("/".join(parts), name, data, files, guard)
            return


def guard_beside(path: str) -> bytes | None:
    """The bytes of the `guard.json` in the run folder `path`, read as a document is (never
    through a link); None when there is none or it cannot be read (a run without a guard
    record: no warning)."""
    try:
        return read(f"{path}/{GUARD}")
    except Skip:
        return None


def walk(root: str, ssebench: bool = False, files: bool = False) -> Iterator[Event]:
    """Every run folder's document below `root` (see the module's docstring), warnings,
    `TaskDone` after each task's folder, and `Counted` at the end."""
    state = _Walk(ssebench, files)
    yield from state.folder(root.rstrip("/") or "/", ())
    yield Counted(state.folders)


# --------------------------------------------------------------------------- frames
# One frame per event: a kind byte, the payload's length (4 bytes, big-endian), the payload.
# A document's payload is its folder, name, linked files (comma-separated, `-` when not
# asked) and the length of its guard bytes (`-` when none), each ended by a NUL (none can hold
# one), then the guard bytes and the document's bytes.

_HEAD = struct.Struct(">cI")


def _frame(event: Event) -> bytes:
    if isinstance(event, Document):
        files = b"-" if event.files is None else ",".join(sorted(event.files)).encode()
        guard = event.guard
        size = b"-" if guard is None else str(len(guard)).encode()
        head = (os.fsencode(event.folder), event.name.encode(), files, size, b"")
        payload = b"\0".join(head) + (guard or b"") + event.data
        return _HEAD.pack(b"D", len(payload)) + payload
    if isinstance(event, TaskDone):
        return _HEAD.pack(b"T", 0)
    if isinstance(event, Counted):
        payload = str(event.folders).encode()
        return _HEAD.pack(b"C", len(payload)) + payload
    payload = os.fsencode(event)
    return _HEAD.pack(b"W", len(payload)) + payload


def read_frames(stream: IO[bytes]) -> Iterator[Event]:
    """The events a child `main` wrote on `stream`, up to `Counted`. Raises `EOFError` when
    the stream ends before (the child failed)."""
    size = _HEAD.size
    while True:
        head = stream.read(size)
        if len(head) < size:
            raise EOFError("the reading process ended early")
        kind, length = _HEAD.unpack(head)
        payload = stream.read(length) if length else b""
        if len(payload) < length:
            raise EOFError("the reading process ended early")
        if kind == b"D":
            folder, name, files, beside, data = payload.split(b"\0", 4)
            linked = None if files == b"-" else frozenset(files.decode().split(",")) - {""}
            guard = None
            if beside != b"-":
                cut = int(beside)
                guard, data = data[:cut], data[cut:]
            yield Document(os.fsdecode(folder), name.decode(), data, linked, guard)
        elif kind == b"T":
            yield TaskDone()
        elif kind == b"C":
            yield Counted(int(payload))
            return
        else:
            yield os.fsdecode(payload)


def main() -> None:
    """As a child process: `walk(argv[1], …)` written as frames on stdout (`argv[2]` holds
    `s` for SSEBench's rules, `f` for the linked files)."""
    root, flags = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
    # Small writes into a large pipe (the report widens it): the report always has work.
    with os.fdopen(sys.stdout.fileno(), "wb", buffering=1 << 16, closefd=False) as out:
        try:
            for event in walk(root, "s" in flags, "f" in flags):
                out.write(_frame(event))
        except BrokenPipeError:  # the report stopped reading (it failed, or was interrupted)
            os._exit(1)
