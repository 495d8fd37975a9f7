"""The baseline's archive: the source tree as it was, compressed by folder, for the grading's
archive to reuse what has not changed since.

Interpreter side (files); what makes the source archive of SPEC §3 step 7 cost what the change
costs. `record_archive_cache` (run with the baseline, before the agent) archives the tree as
`source.tar.gz` would, but cuts the stream at every folder's files and every `SEGMENT` bytes
of them, compresses each piece as gzip members of its own, and notes which entries each holds
with their lstat keys (mode, size, mtime, ctime, inode, device, owner). `open_cache` reads it
back; `ReusingArchiver` then copies a piece's compressed bytes whenever the same entries, with
the same keys, follow each other in the same folder of the tree being archived, and archives
everything else afresh. A piece is kept only if none of its entries changed while it was read,
nor was changed just before the walk (`settled`: the racy-entry rule git applies to its index,
by the clock's granularity), so a later change the kernel stamps with the same time cannot be. The
agent cannot set a ctime, and a file put in another's place has another inode or a newer
ctime: see docs/security.md.

The file: the pieces, then the manifest (JSON), then `_TRAILER` (where the manifest starts,
its length, a tag). It lives in the private baseline folder, owned by this user; one that is
not, or does not parse, is not used.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import struct
import tempfile
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from returns.result import Failure, Result, Success

from interpreters.real.archive.compression import ParallelGzip, Span, gzip_members
from interpreters.real.archive.tarstream import Archiver, group_name, user_name
from interpreters.real.files.descriptors import DIR_FLAGS, WORKERS, Check, write_all

__all__ = [
    "CACHE_NAME",
    "Cache",
    "ReusingArchiver",
    "open_cache",
    "record_archive_cache",
]

CACHE_NAME = "archive.cache"
"""The cache's name in the baseline folder."""
SEGMENT = 1 << 20
"""Bytes of tar data after which a folder's files go on in a new piece: what one changed
file costs to compress again, at most (besides itself)."""
_BATCH = 4 << 20
"""Bytes of pieces given to a compressing thread at once."""
_TAG = b"ssegrade-archive-cache-1"
_TRAILER = struct.Struct("<QQ24s")
_MAX_MANIFEST = 1 << 30

Key = tuple[int, int, int, int, int, int, int, int]

FINE_MARGIN = 100_000_000
"""Nanoseconds an entry's ctime must precede the walk by to be reused, on a file system that
stamps times finer than seconds: far more than the kernel's clock tick (1 to 10 ms), so a
change made after the entry was read gets another ctime."""
COARSE_MARGIN = 3_000_000_000
"""The same for a ctime on a 10 ms boundary (a file system stamping whole seconds, or two
seconds as FAT does; on others a rare case, only made slower)."""


def settled(ctime_ns: int, started_ns: int) -> bool:
    """Whether an entry whose ctime is `ctime_ns`, read by a walk that started at
    `started_ns`, can be trusted unchanged while its ctime stays the same: git's racy-entry
    rule, with the clock's granularity."""
    margin = COARSE_MARGIN if ctime_ns % 10_000_000 == 0 else FINE_MARGIN
    return ctime_ns < started_ns - margin


def key_of(st: os.stat_result) -> Key:
    """What says an entry is unchanged: mode, size, mtime, ctime, inode, device, owner."""
    return (
        st.st_mode,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_ino,
        st.st_dev,
        st.st_uid,
        st.st_gid,
    )


@dataclass(frozen=True, slots=True)
class Piece:
    """Compressed entries of one folder: where they are in the cache, and which they are."""

    offset: int
    length: int
    entries: tuple[tuple[str, Key], ...]


@dataclass(slots=True)
class Cache:
    """An open cache: its file, and its pieces by folder (as the archive names it) and by
    the name of their first entry, made from the manifest when a folder is first asked for
    (an archive split among workers makes each folder's in the worker that archives it)."""

    fd: int
    listed: dict[str, list[tuple[int, int, list[Any]]]]
    """Each folder's pieces as the manifest lists them: offset, length, entries."""
    owners: dict[tuple[int, int], bool]
    """Per owner (uid, gid) of a cached entry: whether its names are still what they were."""
    made: dict[str, dict[str, Piece]] = field(default_factory=dict)

    def pieces(self, where: str) -> dict[str, Piece]:
        """The pieces of the folder `where`, by the name of their first entry."""
        found = self.made.get(where)
        if found is None:
            found = self.made[where] = {}
            for offset, length, listed in self.listed.get(where, ()):
                # A key of the wrong shape equals no entry's, a damaged entry is no piece:
                # either is only never reused.
                try:
                    entries = tuple((name, tuple(rest)) for name, *rest in listed)
                    found[entries[0][0]] = Piece(offset, length, entries)
                except (TypeError, ValueError):
                    continue
        return found

    def close(self) -> None:
        """Close its file."""
        with contextlib.suppress(OSError):
            os.close(self.fd)


# ---------------------------------------------------------------------------- recording


class _PieceWriter:
    """Compresses each piece as gzip members of its own on a thread pool, in order, and says
    where each landed in the file."""

    def __init__(self, fd: int, level: int, pool: ThreadPoolExecutor, check: Check) -> None:
        self._fd, self._level, self._pool, self._check = fd, level, pool, check
        self._current = bytearray()
        self._batch: list[bytes] = []
        self._batched = 0
        self._pieces = 0
        self._pending: deque[Future[list[bytes]]] = deque()
        self.spans: list[tuple[int, int]] = []
        self.end = 0

    def write(self, data: bytes) -> None:
        """Add `data` to the piece under way."""
        self._current += data

    @property
    def size(self) -> int:
        """Bytes of tar data in the piece under way."""
        return len(self._current)

    def cut(self) -> int:
        """End the piece under way; its number (`spans[number]` once `finish` returned)."""
        self._batch.append(bytes(self._current))
        self._batched += len(self._current)
        self._current = bytearray()
        self._pieces += 1
        if self._batched >= _BATCH:
            self._submit()
        return self._pieces - 1

    def _submit(self) -> None:
        batch, self._batch, self._batched = self._batch, [], 0
        self._pending.append(
            self._pool.submit(lambda: [gzip_members(piece, self._level) for piece in batch])
        )
        while len(self._pending) > WORKERS:
            self._drain_one()

    def _drain_one(self) -> None:
        for data in self._pending.popleft().result():
            write_all(self._fd, data, self._check)
            self.spans.append((self.end, len(data)))
            self.end += len(data)

    def finish(self) -> None:
        """Compress and write every piece left."""
        if self._current:
            self.cut()
        if self._batch:
            self._submit()
        while self._pending:
            self._drain_one()


@dataclass(slots=True)
class _RecordingArchiver(Archiver):
    """Archives the tree into pieces, noting the entries of each piece it may reuse."""

    pieces: _PieceWriter
    started: int
    """When the walk started (`time.time_ns`)."""
    kept: dict[str, list[tuple[int, tuple[tuple[str, Key], ...]]]] = field(default_factory=dict)
    unsteady: int = 0
    """Pieces not kept: an entry changed while read, or too lately."""

    def files(self, fd: int, where: str, names: list[str]) -> None:
        """The files of one folder, in pieces of their own: what came before (folder
        headers) ends in a piece never reused."""
        self.pieces.cut()
        entries: list[tuple[str, Key]] = []
        steady = True
        for name in names:
            self.check()
            stored = self.entry(fd, name, f"{where}/{name}")
            if stored is None:
                continue
            key = key_of(stored)
            try:
                now: Key | None = key_of(os.stat(name, dir_fd=fd, follow_symlinks=False))
            except OSError:
                now = None
            # Changed while read, or so lately that a later change may share its ctime.
            if now != key or not settled(stored.st_ctime_ns, self.started):
                steady = False
            entries.append((name, key))
            if self.pieces.size >= SEGMENT:
                self._end_piece(where, entries, steady)
                entries, steady = [], True
        self._end_piece(where, entries, steady)

    def _end_piece(self, where: str, entries: list[tuple[str, Key]], steady: bool) -> None:
        number = self.pieces.cut()
        if entries and steady:
            self.kept.setdefault(where, []).append((number, tuple(entries)))
        elif entries:
            self.unsteady += 1


def _manifest(archiver: _RecordingArchiver, spans: list[tuple[int, int]]) -> bytes:
    folders = {
        where: [
            [*spans[number], [[name, *key] for name, key in entries]] for number, entries in pieces
        ]
        for where, pieces in archiver.kept.items()
    }
    owners = [[uid, gid, names[0], names[1]] for (uid, gid), names in archiver.names.items()]
    return json.dumps({"owners": owners, "folders": folders}, separators=(",", ":")).encode()


def record_archive_cache(source: Path, into: Path, *, level: int) -> Result[str, str]:
    """Write the cache of `source` into the folder `into` (as `CACHE_NAME`, whole or not at
    all), gzip `level` where deflate pays; a line saying what it holds, or why it is not
    there."""
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=into, prefix=f".{CACHE_NAME}.", suffix=".tmp")
        try:
            root = os.open(source, DIR_FLAGS)
            try:
                with ThreadPoolExecutor(WORKERS, thread_name_prefix="archive-cache") as pool:
                    pieces = _PieceWriter(fd, level, pool, _never)
                    archiver = _RecordingArchiver(pieces, _never, {}, pieces, time.time_ns())
                    archiver.tree(root, source.name)
                    pieces.finish()
            finally:
                os.close(root)
            manifest = _manifest(archiver, pieces.spans)
            write_all(fd, manifest + _TRAILER.pack(pieces.end, len(manifest), _TAG))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, into / CACHE_NAME)
        tmp = None
    except OSError as exc:
        return Failure(f"the archive cache of {source} was not written: {exc}")
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    kept = sum(len(pieces) for pieces in archiver.kept.values())
    return Success(
        f"archive cache: {pieces.end} bytes, {kept} pieces of files kept, {archiver.unsteady} "
        "not (changed while read or just before)"
    )


def _never() -> None:
    return None


# ---------------------------------------------------------------------------- reading


def _parse(data: bytes, end: int) -> tuple[dict[str, list[tuple[int, int, list[Any]]]], list[Any]]:
    """The pieces by folder (as listed), and the owners, of a manifest; ValueError when it is
    not one, or names bytes beyond `end`."""
    doc = json.loads(data)
    if not isinstance(doc, dict) or not isinstance(doc.get("folders"), dict):
        raise ValueError("no folders")
    owners = doc.get("owners")
    if not isinstance(owners, list):
        raise ValueError("no owners")
    folders: dict[str, list[tuple[int, int, list[Any]]]] = {}
    for where, pieces in doc["folders"].items():
        found = folders[str(where)] = []
        for offset, length, listed in pieces:
            if type(offset) is not int or type(length) is not int:
                raise ValueError("a piece without its place")
            if not 0 <= offset <= offset + length <= end:
                raise ValueError("a piece out of bounds")
            if not isinstance(listed, list) or not listed:
                raise ValueError("a piece without its entries")
            found.append((offset, length, listed))
    return folders, owners


def open_cache(path: Path) -> Cache | str | None:
    """The cache at `path`, None when there is none, or why it cannot be used (not a file of
    this user's that only it can write, damaged)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"the archive cache {path} is not used: {exc.strerror}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise ValueError("not a file of this user's that only it can write")
        if st.st_size < _TRAILER.size:
            raise ValueError("too short")
        end, length, tag = _TRAILER.unpack(os.pread(fd, _TRAILER.size, st.st_size - _TRAILER.size))
        if tag != _TAG or end + length + _TRAILER.size != st.st_size or length > _MAX_MANIFEST:
            raise ValueError("not a cache of this version")
        data = os.pread(fd, length, end)
        if len(data) != length:
            raise ValueError("cut short")
        folders, owners = _parse(data, end)
        same = {
            (int(uid), int(gid)): user_name(int(uid)) == uname and group_name(int(gid)) == gname
            for uid, gid, uname, gname in owners
        }
    except (OSError, ValueError, TypeError, struct.error) as exc:
        os.close(fd)
        return f"the archive cache {path} is not used: {exc}"
    return Cache(fd, folders, same)


@dataclass(slots=True)
class ReusingArchiver(Archiver):
    """An `Archiver` that copies the cache's compressed pieces for entries that have not
    changed, and counts the bytes it reused."""

    cache: Cache
    gzip: ParallelGzip
    reused: int = 0
    """Compressed bytes copied from the cache."""

    def files(self, fd: int, where: str, names: list[str]) -> None:
        """The files `names` of one folder: a cached piece wherever its entries follow each
        other here unchanged, each other entry afresh."""
        pieces = self.cache.pieces(where)
        if not pieces:
            Archiver.files(self, fd, where, names)
            return
        index = 0
        while index < len(names):
            self.check()
            piece = pieces.get(names[index])
            if piece is not None and self._unchanged(fd, names, index, piece):
                self.gzip.copy(Span(self.cache.fd, piece.offset, piece.length))
                self.reused += piece.length
                index += len(piece.entries)
            else:
                self.entry(fd, names[index], f"{where}/{names[index]}")
                index += 1

    def _unchanged(self, fd: int, names: list[str], index: int, piece: Piece) -> bool:
        if names[index : index + len(piece.entries)] != [name for name, _ in piece.entries]:
            return False
        for name, key in piece.entries:
            if not self.cache.owners.get((key[6], key[7]), False):
                return False
            try:
                if key_of(os.stat(name, dir_fd=fd, follow_symlinks=False)) != key:
                    return False
            except OSError:
                return False
        return True
