"""The baseline's kept index: the base tree with the stat data of the tree it was staged from.

Interpreter side (files, processes); SPEC §4. A capture that starts from a copy of this index
instead of `read-tree <base>` hashes only the files whose lstat (size, mtime, ctime, inode,
mode, owner) changed since the baseline was recorded, so it costs what changed. When that is
every file (`chmod -R`, `chown -R`, a restore), each is hashed, and only those whose bytes
changed are stored (`staging.stage`): what `git add -A` into a fresh index costs.

Why stat data can be trusted: the kernel sets a file's ctime to the current time on every
change of its content or metadata, no system call lets a process choose it (`utimensat` sets
atime and mtime, and moves ctime to now), and a file put in another's place is another inode
with its own ctime. git compares whole seconds (built without `USE_NSEC`), so an entry is kept
with its stat data only when both its ctime and mtime are older than `trust_since()`, the
second before the baseline began reading the tree: any later change of that file carries a
ctime of that second or after. Other entries keep no stat data and are rehashed by every
capture (git's own racy-entry rule, which compares an entry's mtime with the index file's,
then has nothing left to catch). The kept index leaves out the base's gitlinks, as a capture
does before `git add`.
"""

from __future__ import annotations

import os
import shutil
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from interpreters.real.git.command import Scratch

_SIGNATURE = b"DIRC"
_VERSIONS = (2, 3)
_STAT = struct.Struct(">10I")
_FLAGS = struct.Struct(">H")
_GITLINK = 0o160000
_NAME_MASK = 0x0FFF
_EXTENDED = 0x4000


@dataclass(frozen=True, slots=True)
class Entry:
    """One index entry: what a capture needs to know of it."""

    path: bytes
    mode: int
    oid: str
    ctime: int
    mtime: int
    ino: int


def trust_since() -> int:
    """The first second whose stat data a kept index does not trust: one second before now.

    File times come from the kernel's coarse clock, which may lag `time.time()` by a tick; a
    second of margin covers it.
    """
    return int(time.time()) - 1


def read_entries(data: bytes, oid_length: int) -> Iterator[Entry]:
    """The entries of an index file in format 2 or 3 (what our config writes); raises
    `ValueError` (or `struct.error`, cut short) on anything else. `oid_length` is the object
    id's length in hex digits."""
    if len(data) < 12 or data[:4] != _SIGNATURE:
        raise ValueError("not a git index")
    version, count = struct.unpack_from(">II", data, 4)
    if version not in _VERSIONS:
        raise ValueError(f"index format {version} is not read here")
    raw = oid_length // 2
    offset = 12
    for _ in range(count):
        ctime, _cns, mtime, _mns, _dev, ino, mode, _uid, _gid, _size = _STAT.unpack_from(
            data, offset
        )
        oid = data[offset + 40 : offset + 40 + raw].hex()
        (flags,) = _FLAGS.unpack_from(data, offset + 40 + raw)
        start = offset + 42 + raw + (2 if flags & _EXTENDED else 0)
        length = flags & _NAME_MASK
        if length == _NAME_MASK:
            length = data.index(b"\0", start) - start
        path = data[start : start + length]
        if len(path) != length or not path:
            raise ValueError("truncated git index")
        offset += (start - offset + length + 8) & ~7
        yield Entry(path, mode, oid, ctime, mtime, ino)


def _line(mode: int, oid: str, path: bytes) -> bytes:
    return f"{mode:o} {oid}\t".encode() + path + b"\0"


def keep(
    s: Scratch, index: Path, dest: Path, *, env: dict[str, str], since: int, oid_length: int
) -> None:
    """Write the kept index of a baseline at `dest` from `index`, the index its base tree was
    written from (`env` is the hermetic environment of that index): the base's gitlinks leave
    it, entries changed at `since` or later lose their stat data, and the file keeps its mtime.
    Nothing is kept from an index this module cannot read: captures then hash every file.
    """
    fixes: list[bytes] = []
    try:
        entries = list(read_entries(index.read_bytes(), oid_length))
    except (ValueError, struct.error):
        return
    for entry in entries:
        if entry.mode == _GITLINK:
            fixes.append(_line(0, "0" * oid_length, entry.path))
        elif entry.ctime >= since or entry.mtime >= since:
            fixes.append(_line(entry.mode, entry.oid, entry.path))
    if fixes:
        s.git(["update-index", "-z", "--index-info"], env=env, stdin=b"".join(fixes))
    copy(index, dest)
    dest.chmod(0o444)


def copy(index: Path, dest: Path) -> None:
    """Copy an index file with its mtime, which git's racy-entry rule compares entries with."""
    shutil.copyfile(index, dest, follow_symlinks=False)
    seen = os.stat(index, follow_symlinks=False)
    os.utime(dest, ns=(seen.st_atime_ns, seen.st_mtime_ns), follow_symlinks=False)
