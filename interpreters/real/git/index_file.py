"""git index files read and written in Python: their entries, each with its bytes, and a file
made of entries.

Interpreter side (bytes, and files read or placed safely). Formats 2 and 3 only, which our
config writes (`index.version = 2`; 3 when an entry has extended flags). An entry is carried
as git wrote it, so a file made of entries gives git back their stat data unchanged. A file
written here holds no extension: each one git may write for us (`TREE` and the like) is a
cache that git rebuilds when it is missing; an extension git requires (its name in lower
case: a split or sparse index) is refused.
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from interpreters.real.git.command import Scratch

_SIGNATURE = b"DIRC"
_VERSIONS = (2, 3)
_VERSION_BYTES = tuple(version.to_bytes(4, "big") for version in _VERSIONS)
_STAT = struct.Struct(">10I")
_FLAGS = struct.Struct(">H")
_KNOWN = struct.Struct(">I4xI8xII8xI")  # ctime, mtime, ino, mode, size
_NAME_MASK = 0x0FFF
_EXTENDED = 0x4000


class Entry(NamedTuple):
    """One index entry: its bytes as git wrote them, and what the capture and the proof need
    to know of it (times in whole seconds; a ctime of 0: no stat data)."""

    raw: bytes
    path: bytes
    oid_bytes: int
    ctime: int
    mtime: int
    ino: int
    mode: int
    size: int

    @property
    def oid(self) -> str:
        """Its object id, in hex."""
        return self.raw[40 : 40 + self.oid_bytes].hex()

    @property
    def stage(self) -> int:
        """Its merge stage (0 outside a merge)."""
        at = 40 + self.oid_bytes
        return (self.raw[at] >> 4) & 3


@dataclass(frozen=True, slots=True)
class Index:
    """An index file's format version and entries (in git's order)."""

    version: int
    entries: tuple[Entry, ...]


def _digest(oid_length: int) -> hashlib._Hash:
    # The checksum git asks of an index file: the repository's hash, not a security measure.
    if oid_length == 40:
        return hashlib.sha1(usedforsecurity=False)
    return hashlib.sha256()


def read_entries(data: bytes, oid_length: int) -> Iterator[Entry]:
    """The entries of an index file in format 2 or 3; raises `ValueError` on anything else or
    on a file cut short. `oid_length` is the object id's length in hex digits."""
    if len(data) < 12 or data[:4] != _SIGNATURE:
        raise ValueError("not a git index")
    version, count = struct.unpack_from(">II", data, 4)
    if version not in _VERSIONS:
        raise ValueError(f"index format {version} is not read here")
    raw = oid_length // 2
    offset = 12
    for _ in range(count):
        at = offset + 40 + raw
        flags = int.from_bytes(data[at : at + 2], "big")
        start = at + (4 if flags & _EXTENDED else 2)
        length = flags & _NAME_MASK
        if length == _NAME_MASK:
            length = data.find(b"\0", start) - start
        path = data[start : start + length]
        end = offset + ((start - offset + length + 8) & ~7)
        if len(path) != length or length <= 0 or end > len(data):
            raise ValueError("truncated git index")
        yield Entry(data[offset:end], path, raw, *_KNOWN.unpack_from(data, offset))
        offset = end


class Span(NamedTuple):
    """Where one entry of an index file lies: its start, its flags, where its path starts and
    its length, and where the entry ends."""

    start: int
    flags: int
    named: int
    length: int
    end: int


def entry_spans(data: bytes, oid_length: int) -> Iterator[Span]:
    """Where each entry of an index file in format 2 or 3 lies, in order (`read_entries`
    without the entries: what cutting or patching a large index costs)."""
    if len(data) < 12 or data[:4] != _SIGNATURE or data[4:8] not in _VERSION_BYTES:
        raise ValueError("not a git index in format 2 or 3")
    at_flags = 40 + oid_length // 2
    at = 12
    for _ in range(int.from_bytes(data[8:12], "big")):
        flags = int.from_bytes(data[at + at_flags : at + at_flags + 2], "big")
        named = at + at_flags + (4 if flags & _EXTENDED else 2)
        length = flags & _NAME_MASK
        if length == _NAME_MASK:
            length = data.find(b"\0", named) - named
        end = at + ((named - at + length + 8) & ~7)
        if length <= 0 or end > len(data):
            raise ValueError("truncated git index")
        yield Span(at, flags, named, length, end)
        at = end


def entry_offsets(data: bytes, oid_length: int) -> list[int]:
    """Where each entry of an index file in format 2 or 3 starts, then where the last ends."""
    return [12, *(span.end for span in entry_spans(data, oid_length))]


def read_index(data: bytes, oid_length: int) -> Index:
    """A whole index file: its entries, then only extensions git may do without, then its
    checksum; raises `ValueError` otherwise."""
    entries = tuple(read_entries(data, oid_length))
    offset = 12 + sum(len(entry.raw) for entry in entries)
    end = len(data) - oid_length // 2
    while offset + 8 <= end:
        name, size = data[offset : offset + 4], struct.unpack_from(">I", data, offset + 4)[0]
        if not b"A" <= name[:1] <= b"Z":
            raise ValueError(f"index extension {name!r} is not read here")
        offset += 8 + size
    if offset != end:
        raise ValueError("truncated git index")
    return Index(struct.unpack_from(">I", data, 4)[0], entries)


def new_entry(mode: int, oid: str, path: bytes) -> Entry:
    """An entry without stat data (git hashes its file whenever it compares it), at stage 0."""
    flags = min(len(path), _NAME_MASK)
    fixed = _STAT.pack(0, 0, 0, 0, 0, 0, mode, 0, 0, 0) + bytes.fromhex(oid) + _FLAGS.pack(flags)
    size = (len(fixed) + len(path) + 8) & ~7
    return Entry((fixed + path).ljust(size, b"\0"), path, len(oid) // 2, 0, 0, 0, mode, 0)


def seal(body: bytes, oid_length: int) -> bytes:
    """An index file's bytes: `body` (header, entries, extensions) and its checksum."""
    digest = _digest(oid_length)
    digest.update(body)
    return body + digest.digest()


def index_bytes(entries: Iterable[Entry], oid_length: int, version: int = 2) -> bytes:
    """An index file of `entries` (in git's order, as read or made here), without extensions."""
    listed = list(entries)
    header = _SIGNATURE + struct.pack(">II", version, len(listed))
    return seal(b"".join([header, *(entry.raw for entry in listed)]), oid_length)


def load(path: Path) -> bytes:
    """The bytes of the regular file at `path`, never through a symlink."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"not a regular file: {path}")
        with os.fdopen(fd, "rb", closefd=False) as file:
            return file.read()
    finally:
        os.close(fd)


def place(s: Scratch, data: bytes, dest: Path, mtime_ns: int) -> None:
    """Write `data` as the file `dest` with the mtime `mtime_ns` (which git's racy-entry rule
    compares entries with), given to the reader: written in our part of the scratch folder,
    then renamed over `dest` (which replaces a symlink there, never follows it)."""
    temporary = s.top / f"placed-{dest.name}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "wb", closefd=False) as file:
            file.write(data)
        if s.reader is not None:
            os.fchown(fd, *s.reader)
        os.utime(fd, ns=(mtime_ns, mtime_ns))
    finally:
        os.close(fd)
    os.replace(temporary, dest)
