"""What the patch guard observes on disk: which sanitizer runtimes the objects a grading build
produced carry (`ScanObjects`), the bytes of task files (`ReadTaskFile`) and of the grading
repo's files a patch changes (`ReadRepoFiles`, both read by `interpreters.real.files.reading`).

Interpreter side (files), read-only. The build ran as the runner, which is hostile, so the copy
it left is walked with directory descriptors only: each folder opened relative to its parent
with O_NOFOLLOW, each file opened relative to its folder with O_NOFOLLOW and O_NONBLOCK and read
only when it is a regular file; no symlink is ever followed. A file counts as produced by
grading when the grading repo has no regular file of the same size and modification time at
that path (copies keep both) and the patch did not write it.

An ELF file (object, executable, shared library, or a member of an archive, read by
`interpreters.real.elf`) carries a runtime when a string table that its symbol tables or its
dynamic section use holds an entry starting with one of the runtime's markers (`__asan_init`,
`libasan.so`, …). Only the headers, the section tables and those string tables are read, a
chunk at a time (`CHUNK`): a file whose header claims huge or many tables (a sparse file of
terabytes) costs the scan its byte budget, never its memory. The scan is bounded: in time
(`seconds`), in entries walked, in bytes read of all files together (`MAX_READ`, every byte
counted). Folders where builds put objects are walked first (`target/<triple>/<profile>/deps`,
`build/`), caches last. A relocatable object that names a sanitizer hook
(`__asan_default_options`, …) is reported too (`ObjectScan.hooks`): the runtime's own weak
defaults live in programs, not there; once every runtime asked for is found, the scan goes on
for at most `HOOK_SECONDS`, reading relocatable objects only, to find them.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import assert_never

from returns.result import Result

from interpreters.real.elf import (
    ARCHIVE,
    CHUNK,
    MAX_READ,
    Reads,
    archive_members,
    elf_markers,
    read_at,
)
from interpreters.real.files.reading import read_repo_file, read_start
from ssegrade.guard import HOOK_SYMBOLS, SOURCE_BYTES, ObjectScan, SanitizerRuntime, SourceFile
from ssegrade.internal.effects import ReadRepoFiles, ReadTaskFile, ScanObjects
from ssegrade.internal.run import Deadline

__all__ = [
    "CHUNK",
    "HOOK_SECONDS",
    "MAX_ENTRIES",
    "MAX_READ",
    "MIN_SECONDS",
    "SCAN_SECONDS",
    "Reads",
    "answer_observation",
    "elf_markers",
    "named_in_sources",
    "scan_objects",
]

SCAN_SECONDS = 30.0
"""The longest a scan runs (less when the grading's time left is shorter)."""

MIN_SECONDS = 2.0
"""The shortest: the guard runs once the grade is written, even when the limit is spent."""

HOOK_SECONDS = 5.0
"""The longest a scan goes on looking for sanitizer hooks once every runtime is found."""

MAX_ENTRIES = 500_000
"""The most folder entries a scan walks."""

_MAX_DEPTH = 128
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_HOOKS = tuple(name.encode() + b"\0" for name in HOOK_SYMBOLS)
"""The hooks, whole names (`\0`-ended): looked for in relocatable objects only, since a
sanitizer's runtime linked into a program defines its own weak defaults."""


_OUTPUTS = frozenset(
    ("target", "deps", "build", "_build", "out", "bin", "lib", ".libs", "obj", "debug", "release")
)
_TRIPLE = re.compile(r"^[a-z0-9_]+-(?:unknown|pc|apple|linux|none|w64)-")
_LAST = frozenset(("incremental", ".fingerprint", ".git", "node_modules", "doc"))


def _outputs_first(entries: Iterator[os.DirEntry[str]]) -> list[os.DirEntry[str]]:
    """A folder's entries, where builds put their objects first (cargo's `target/<profile>/`
    and `target/<triple>/<profile>/deps`, `build/`, `.libs/`), caches and histories last: a
    scan bounded in time and entries reaches the objects before it stops."""

    def rank(entry: os.DirEntry[str]) -> int:
        if entry.name in _OUTPUTS or _TRIPLE.match(entry.name):
            return 0
        return 2 if entry.name in _LAST else 1

    return sorted(entries, key=rank)


@dataclass
class _Scan:
    pristine: Path
    runtimes: tuple[SanitizerRuntime, ...]
    skip: frozenset[str]
    until: float
    examined: int = 0
    entries: int = 0
    budget: int = MAX_READ
    reads: Reads = field(init=False)
    carrying: dict[str, str] = field(default_factory=dict)
    hooks: dict[str, str] = field(default_factory=dict)
    hunt_until: float | None = None
    stopped: str | None = None

    def __post_init__(self) -> None:
        self.reads = Reads(self.budget)

    def hunting(self) -> bool:
        """Whether every runtime is found, so only hooks are still looked for."""
        return len(self.carrying) == len(self.runtimes)

    def done(self) -> bool:
        if self.hunting():
            if self.hunt_until is None:
                self.hunt_until = min(self.until, time.monotonic() + HOOK_SECONDS)
            left = time.monotonic() < self.hunt_until and self.entries < MAX_ENTRIES
            return not left or self.reads.spent()
        if self.stopped is None:
            if time.monotonic() >= self.until:
                self.stopped = "out of time"
            elif self.entries >= MAX_ENTRIES:
                self.stopped = f"more than {MAX_ENTRIES} entries"
            elif self.reads.spent():
                self.stopped = f"read {self.budget >> 20} MiB of objects (the most a scan reads)"
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
            head = self.reads.read(fd, 18, 0)
            if head.startswith(ARCHIVE):
                members = [] if self.hunting() else list(archive_members(fd, self.reads))
            else:
                members = [(0, head[16:18] in (b"\x01\x00", b"\x00\x01"))]
                if self.hunting() and not members[0][1]:
                    members = []  # only relocatable objects can name a hook of their own
            found: set[bytes] | None = None
            for base, relocatable in members:
                hooks = _HOOKS if relocatable else ()
                seen = elf_markers(fd, self.needles() + hooks, self.reads, base)
                if seen is not None:
                    found = (found or set()) | seen
        except OSError:
            return
        finally:
            os.close(fd)
        if found is None:
            return
        self.examined += 1
        for hook in found & set(_HOOKS):
            self.hooks.setdefault(hook[:-1].decode(), rel)
        for runtime in self.runtimes:
            if runtime.name not in self.carrying and found & {m.encode() for m in runtime.markers}:
                self.carrying[runtime.name] = rel

    def needles(self) -> tuple[bytes, ...]:
        """The markers of every runtime not found yet."""
        return tuple(
            marker.encode()
            for runtime in self.runtimes
            if runtime.name not in self.carrying
            for marker in runtime.markers
        )

    def walk(self, root: int) -> None:
        """Depth first from the folder `root`, holding one descriptor per level."""
        stack: list[tuple[int, str, Iterator[os.DirEntry[str]]]] = []
        try:
            stack.append((root, "", iter(_outputs_first(os.scandir(root)))))
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
                    listed = _outputs_first(os.scandir(sub))
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
    budget: int = MAX_READ,
) -> ObjectScan:
    """Look for each runtime in the ELF files of `copy` that grading produced (see the
    module's docstring), for at most `seconds`, reading at most `budget` bytes."""
    until = time.monotonic() + max(seconds, 0.0)
    scan = _Scan(pristine, runtimes, frozenset(skip), until, budget=budget)
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
    hooks = tuple(sorted(scan.hooks.items()))
    known = named_in_sources(pristine, frozenset(scan.hooks)) if hooks else ()
    return ObjectScan(
        examined=scan.examined, carrying=carrying, stopped=stopped, hooks=hooks, known=known
    )


_SOURCES = frozenset(
    (".c", ".cc", ".cpp", ".cxx", ".c++", ".h", ".hh", ".hpp", ".hxx", ".inc", ".ipp", ".m")
).union((".mm", ".s", ".S", ".rs", ".go", ".zig", ".d"))
_WORD = re.compile(rb"[A-Za-z0-9_]")


def _names(data: bytes, symbol: bytes) -> bool:
    """Whether `data` holds `symbol` as a whole word."""
    at = data.find(symbol)
    while at >= 0:
        end = at + len(symbol)
        if (at == 0 or not _WORD.match(data, at - 1)) and not _WORD.match(data, end):
            return True
        at = data.find(symbol, at + 1)
    return False


def named_in_sources(
    pristine: Path, symbols: frozenset[str], seconds: float = HOOK_SECONDS
) -> tuple[tuple[str, str], ...]:
    """The source files of the grading repo (the project before the patch) that name each of
    `symbols` as a word: (symbol, path), sorted; a hook the project defined itself. Walked
    with folder descriptors, never through a link, `.git` left out, files of at most
    `SOURCE_BYTES`, for at most `seconds` and `MAX_ENTRIES` entries (what is not reached is
    not named: the hook then counts as the patch's)."""
    until = time.monotonic() + seconds
    wanted = [(name, name.encode()) for name in sorted(symbols)]
    found: set[tuple[str, str]] = set()
    entries = 0
    try:
        stack = [(os.open(pristine, _DIR_FLAGS), "")]
    except OSError:
        return ()
    try:
        while stack and time.monotonic() < until and entries < MAX_ENTRIES:
            dir_fd, rel = stack.pop()
            try:
                listed = list(os.scandir(dir_fd))
            except OSError:
                listed = []
            for entry in listed:
                entries += 1
                path = f"{rel}{entry.name}"
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name != ".git" and len(path.split("/")) < _MAX_DEPTH:
                            stack.append(
                                (os.open(entry.name, _DIR_FLAGS, dir_fd=dir_fd), f"{path}/")
                            )
                    elif os.path.splitext(entry.name)[1] in _SOURCES:
                        data = _read_source(dir_fd, entry.name)
                        found.update((n, path) for n, b in wanted if data and _names(data, b))
            os.close(dir_fd)
    finally:
        for dir_fd, _ in stack:
            os.close(dir_fd)
    return tuple(sorted(found))


def _read_source(dir_fd: int, name: str) -> bytes | None:
    """A regular file's bytes when it holds at most `SOURCE_BYTES`, never through a link."""
    fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > SOURCE_BYTES:
            return None
        return read_at(fd, SOURCE_BYTES, 0)
    finally:
        os.close(fd)


def answer_observation(
    effect: ReadTaskFile | ReadRepoFiles | ScanObjects, repo: Path, deadline: Deadline | None
) -> Result[bytes, str] | ObjectScan | tuple[SourceFile, ...]:
    """Answer the guard's system effects: a task file's bytes, or a scan of a build's copy
    (against the grading repo `repo`, for at most `SCAN_SECONDS` or the time `deadline`
    leaves)."""
    match effect:
        case ReadTaskFile(path=path, limit=limit):
            return read_start(path, limit)
        case ReadRepoFiles(paths=paths, limit=limit):
            return tuple(SourceFile(path, read_repo_file(repo, path, limit)) for path in paths)
        case ScanObjects(workspace=workspace, runtimes=runtimes, skip=skip):
            seconds = SCAN_SECONDS if deadline is None else min(SCAN_SECONDS, deadline.left())
            # The grade is written by now: a scan begun at the limit still gets a moment.
            seconds = max(seconds, MIN_SECONDS)
            return scan_objects(Path(workspace.path), repo, runtimes, skip, seconds=seconds)
        case _:
            assert_never(effect)
