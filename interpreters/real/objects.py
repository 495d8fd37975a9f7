"""What the patch guard observes on disk: which sanitizer runtimes the objects a grading build
produced carry (`ScanObjects`), and the bytes of task files (`ReadTaskFile`).

Interpreter side (files), read-only. The build ran as the runner, which is hostile, so the copy
it left is walked with directory descriptors only: each folder opened relative to its parent
with O_NOFOLLOW, each file opened relative to its folder with O_NOFOLLOW and O_NONBLOCK and read
only when it is a regular file; no symlink is ever followed. A file counts as produced by
grading when the grading repo has no regular file of the same size and modification time at
that path (copies keep both) and the patch did not write it.

An ELF file (object, executable, shared library) carries a runtime when a string table that
its symbol tables or its dynamic section use holds an entry starting with one of the runtime's
markers (`__asan_init`, `libasan.so`, …). Only the headers and those string tables are read.
The scan is bounded: in time (`seconds`), in entries walked, in bytes read; it stops as soon as
every runtime asked for is found.
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import assert_never

from returns.result import Failure, Result, Success

from ssegrade.effects import ReadTaskFile, ScanObjects
from ssegrade.guard import ObjectScan, SanitizerRuntime
from ssegrade.run import Deadline

__all__ = [
    "MAX_ENTRIES",
    "MAX_READ",
    "MIN_SECONDS",
    "SCAN_SECONDS",
    "answer_observation",
    "elf_strings",
    "read_start",
    "scan_objects",
]

SCAN_SECONDS = 30.0
"""The longest a scan runs (less when the grading's time left is shorter)."""

MIN_SECONDS = 2.0
"""The shortest: the guard runs once the grade is written, even when the limit is spent."""

MAX_ENTRIES = 500_000
"""The most folder entries a scan walks."""

MAX_READ = 1 << 30
"""The most bytes of string tables a scan reads, all files together."""

_MAX_TABLE = 64 << 20
_MAX_DEPTH = 128
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_SHT_SYMTAB, _SHT_DYNAMIC, _SHT_DYNSYM = 2, 6, 11


def _read_at(fd: int, size: int, offset: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.pread(fd, size - len(data), offset + len(data))
        if not chunk:
            break
        data += chunk
    return data


def elf_strings(fd: int, budget: int = _MAX_TABLE) -> list[bytes] | None:
    """The string tables of the ELF file open at `fd` that its symbol tables and dynamic
    section use, each cut at `budget` bytes; None when it is not an ELF file."""
    head = _read_at(fd, 64, 0)
    if len(head) < 52 or head[:4] != b"\x7fELF" or head[4] not in (1, 2) or head[5] not in (1, 2):
        return None
    order = "<" if head[5] == 1 else ">"
    if head[4] == 2:
        shoff, shentsize, shnum = struct.unpack_from(f"{order}Q10xHH", head, 40)
        entry = struct.Struct(f"{order}IIQQQQII")
    else:
        shoff, shentsize, shnum = struct.unpack_from(f"{order}I10xHH", head, 32)
        entry = struct.Struct(f"{order}IIIIIIII")
    if not shoff or shnum == 0 or shentsize < entry.size:
        return []
    table = _read_at(fd, shentsize * shnum, shoff)
    sections = [entry.unpack_from(table, i * shentsize) for i in range(len(table) // shentsize)]
    linked = {s[6] for s in sections if s[1] in (_SHT_SYMTAB, _SHT_DYNAMIC, _SHT_DYNSYM)}
    return [
        _read_at(fd, min(sections[i][5], budget), sections[i][4])
        for i in sorted(linked)
        if 0 < i < len(sections)
    ]


def _carries(tables: list[bytes], markers: tuple[str, ...]) -> bool:
    for marker in markers:
        needle = marker.encode()
        for data in tables:
            if data.startswith(needle) or b"\0" + needle in data:
                return True
    return False


@dataclass
class _Scan:
    pristine: Path
    runtimes: tuple[SanitizerRuntime, ...]
    skip: frozenset[str]
    until: float
    examined: int = 0
    entries: int = 0
    read: int = 0
    carrying: dict[str, str] = field(default_factory=dict)
    stopped: str | None = None

    def done(self) -> bool:
        if len(self.carrying) == len(self.runtimes):
            return True
        if self.stopped is None:
            if time.monotonic() >= self.until:
                self.stopped = "out of time"
            elif self.entries >= MAX_ENTRIES:
                self.stopped = f"more than {MAX_ENTRIES} entries"
            elif self.read >= MAX_READ:
                self.stopped = f"more than {MAX_READ >> 20} MiB of string tables"
        return self.stopped is not None

    def unchanged(self, rel: str, info: os.stat_result) -> bool:
        """Whether the grading repo holds the same file at `rel` (size and time kept)."""
        try:
            was = os.lstat(self.pristine / rel)
        except OSError:
            return False
        return (
            stat.S_ISREG(was.st_mode)
            and was.st_size == info.st_size
            and was.st_mtime_ns == info.st_mtime_ns
        )

    def file(self, dir_fd: int, name: str, rel: str) -> None:
        """Examine one entry of the folder `dir_fd`, if it is a regular file grading made."""
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except OSError:
            return  # a link, a socket, gone: not an object of this build
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size < 52 or self.unchanged(rel, info):
                return
            tables = elf_strings(fd)
        except OSError:
            return
        finally:
            os.close(fd)
        if tables is None:
            return
        self.examined += 1
        self.read += sum(len(t) for t in tables)
        for runtime in self.runtimes:
            if runtime.name not in self.carrying and _carries(tables, runtime.markers):
                self.carrying[runtime.name] = rel

    def walk(self, root: int) -> None:
        """Depth first from the folder `root`, holding one descriptor per level."""
        stack: list[tuple[int, str, Iterator[os.DirEntry[str]]]] = []
        try:
            stack.append((root, "", iter(list(os.scandir(root)))))
            while stack and not self.done():
                dir_fd, rel, entries = stack[-1]
                entry = next(entries, None)
                if entry is None:
                    stack.pop()
                    if dir_fd != root:
                        os.close(dir_fd)
                    continue
                self.entries += 1
                path = f"{rel}{entry.name}"
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if not is_dir:
                    if path not in self.skip:
                        self.file(dir_fd, entry.name, path)
                    continue
                if len(stack) >= _MAX_DEPTH:
                    continue
                try:
                    sub = os.open(entry.name, _DIR_FLAGS, dir_fd=dir_fd)
                except OSError:
                    continue  # swapped for a link, or gone
                try:
                    listed = list(os.scandir(sub))
                except OSError:
                    os.close(sub)
                    continue
                stack.append((sub, f"{path}/", iter(listed)))
        finally:
            for dir_fd, _, _ in stack:
                if dir_fd != root:
                    os.close(dir_fd)


def scan_objects(
    copy: Path,
    pristine: Path,
    runtimes: tuple[SanitizerRuntime, ...],
    skip: tuple[str, ...] = (),
    *,
    seconds: float = SCAN_SECONDS,
) -> ObjectScan:
    """Look for each runtime in the ELF files of `copy` that grading produced (see the
    module's docstring), for at most `seconds`."""
    scan = _Scan(pristine, runtimes, frozenset(skip), time.monotonic() + max(seconds, 0.0))
    if runtimes:
        with contextlib.suppress(OSError):
            root = os.open(copy, _DIR_FLAGS)
            try:
                scan.walk(root)
            finally:
                os.close(root)
        scan.done()
    carrying = tuple((r.name, scan.carrying[r.name]) for r in runtimes if r.name in scan.carrying)
    stopped = None if len(carrying) == len(runtimes) else scan.stopped
    return ObjectScan(examined=scan.examined, carrying=carrying, stopped=stopped)


def read_start(path: str, limit: int) -> Result[bytes, str]:
    """The first `limit` bytes of a file (a task file, a results file), never through a link
    nor from anything but a regular file (a FIFO is refused, never waited on); or why it
    cannot be read."""
    try:
        fd = os.open(path, _FILE_FLAGS)
    except OSError as exc:
        return Failure(f"{path}: {exc.strerror or exc}")
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return Failure(f"{path}: not a regular file")
        return Success(_read_at(fd, limit, 0))
    except OSError as exc:
        return Failure(f"{path}: {exc.strerror or exc}")
    finally:
        os.close(fd)


def answer_observation(
    effect: ReadTaskFile | ScanObjects, repo: Path, deadline: Deadline | None
) -> Result[bytes, str] | ObjectScan:
    """Answer the guard's system effects: a task file's bytes, or a scan of a build's copy
    (against the grading repo `repo`, for at most `SCAN_SECONDS` or the time `deadline`
    leaves)."""
    match effect:
        case ReadTaskFile(path=path, limit=limit):
            return read_start(path, limit)
        case ScanObjects(workspace=workspace, runtimes=runtimes, skip=skip):
            seconds = SCAN_SECONDS if deadline is None else min(SCAN_SECONDS, deadline.left())
            # The grade is written by now: a scan begun at the limit still gets a moment.
            seconds = max(seconds, MIN_SECONDS)
            return scan_objects(Path(workspace.path), repo, runtimes, skip, seconds=seconds)
        case _:
            assert_never(effect)
