"""Hashing every file of an index as git would, without git: which entries are unchanged.

Interpreter side (files); run as a program of its own (`python -I -S -c <this source>`), which
becomes the tree's owner before it reads anything, with the top of the tree as its working
folder: the refresh of a capture's
slow path (`refresh.py`), where every file is hashed. git hashes each file with its
collision-detecting SHA-1, one file after the other; here OpenSSL's SHA-1 (or SHA-256) runs
in a thread per CPU, at about a third of git's CPU time a byte.

Standard input: for each entry, its mode (4 bytes, big-endian), object id (raw bytes), path,
and a NUL. Standard output: for each entry, 40 bytes: the file's stat data as git records it
in an entry (with the entry's mode) when the file's bytes hash as the entry's object id and
its kind and executable bit are the entry's, else 40 zero bytes (git then compares the file
itself). Arguments: the hash (`sha1` or `sha256`), the threads, the tree owner's user and
group ids (`-` and `-`: whoever runs it).

Only content decides: every entry is hashed, whatever its stat data. A path is reached one
folder at a time from the top, never through a symlink (`O_NOFOLLOW`); a file is read only if
`lstat` saw a regular file. The stat data answered are those `lstat` saw, before the read, as
git's refresh does: any change of the file after it (its bytes, its mode, another file renamed
in its place, or itself renamed back) moves a ctime, the file no longer matches them, and
`git add` hashes it again. This module imports the standard
library only (no site's packages), all of it before it becomes the tree's owner, who may not
be able to read our interpreter's library.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import stat
import struct
import sys
import threading
from collections.abc import Callable, Sequence

UNKNOWN = bytes(40)
"""The answer for an entry that is not proven unchanged."""

STAT = struct.Struct(">10I")
_CHUNK = 1 << 18
_MASK = 0xFFFFFFFF
_BILLION = 1_000_000_000
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_REGULAR = 0o100644
_EXECUTABLE = 0o100755
_SYMLINK = 0o120000

Job = tuple[int, bytes, bytes]
"""One entry to hash: its mode, object id (raw) and path."""


def stat_data(seen: os.stat_result, mode: int) -> bytes:
    """The 40 bytes of stat data git records for a file seen as `seen`, in an entry of `mode`."""
    return STAT.pack(
        seen.st_ctime_ns // _BILLION & _MASK,
        seen.st_ctime_ns % _BILLION,
        seen.st_mtime_ns // _BILLION & _MASK,
        seen.st_mtime_ns % _BILLION,
        seen.st_dev & _MASK,
        seen.st_ino & _MASK,
        mode,
        seen.st_uid & _MASK,
        seen.st_gid & _MASK,
        seen.st_size & _MASK,
    )


def _key(seen: os.stat_result) -> tuple[int, ...]:
    """What must not move while a symlink is read: which it is, its kind, size and times."""
    return (
        seen.st_dev,
        seen.st_ino,
        seen.st_mode,
        seen.st_size,
        seen.st_ctime_ns,
        seen.st_mtime_ns,
    )


class _Folders:
    """Open folders along the current path, from the top, each opened without following."""

    def __init__(self, top: int) -> None:
        self.top = top
        self.names: list[bytes] = []
        self.fds: list[int] = []

    def enter(self, folder: bytes) -> int | None:
        """A descriptor of `folder` (relative to the top), or None when it cannot be opened."""
        names = folder.split(b"/") if folder else []
        keep = 0
        while keep < min(len(names), len(self.names)) and names[keep] == self.names[keep]:
            keep += 1
        self.leave(keep)
        for name in names[keep:]:
            try:
                fd = os.open(name, _DIRECTORY, dir_fd=self.fds[-1] if self.fds else self.top)
            except OSError:
                return None
            self.names.append(name)
            self.fds.append(fd)
        return self.fds[-1] if self.fds else self.top

    def leave(self, keep: int = 0) -> None:
        """Close the folders past the first `keep`."""
        while len(self.fds) > keep:
            os.close(self.fds.pop())
            self.names.pop()


def _hash_file(
    name: bytes, folder: int, size: int, digest: hashlib._Hash, buffer: memoryview
) -> bool:
    """Feed the `size` bytes of the file `name` to `digest` (in one read when they fit
    `buffer`); False when it holds fewer. Opened `O_NOFOLLOW` and `O_NONBLOCK`: a symlink,
    fifo or device swapped in since its `lstat` is not followed and cannot hold the read."""
    fd = os.open(name, _FILE, dir_fd=folder)
    try:
        if size <= len(buffer):
            data = os.read(fd, size)
            digest.update(data)
            return len(data) == size
        left = size
        while left > 0:
            count = os.readv(fd, [buffer[: min(left, len(buffer))]])
            if count == 0:
                return False
            digest.update(buffer[:count])
            left -= count
        return True
    finally:
        os.close(fd)


def _unchanged(
    name: bytes,
    folder: int,
    mode: int,
    oid: bytes,
    new: Callable[[bytes], hashlib._Hash],
    buffer: memoryview,
) -> bytes:
    """The stat data of the file `name` in `folder` when its kind, executable bit and bytes are
    the entry's (`mode`, `oid`), else `UNKNOWN`; `new` makes the hash, `buffer` reads."""
    seen = os.stat(name, dir_fd=folder, follow_symlinks=False)
    kind = seen.st_mode
    if stat.S_ISREG(kind) and mode == (_EXECUTABLE if kind & stat.S_IXUSR else _REGULAR):
        digest = new(b"blob %d\0" % seen.st_size)
        if not _hash_file(name, folder, seen.st_size, digest, buffer):
            return UNKNOWN
    elif mode == _SYMLINK and stat.S_ISLNK(kind):
        target = os.readlink(name, dir_fd=folder)
        digest = new(b"blob %d\0" % len(target) + target)
        if _key(os.stat(name, dir_fd=folder, follow_symlinks=False)) != _key(seen):
            return UNKNOWN
    else:
        return UNKNOWN
    return stat_data(seen, mode) if digest.digest() == oid else UNKNOWN


def answers(top: int, jobs: Sequence[Job], algorithm: str) -> bytes:
    """The answer for each of `jobs` (in git's order), paths relative to the folder `top`."""
    folders = _Folders(top)
    buffer = memoryview(bytearray(_CHUNK))
    new = getattr(hashlib, algorithm)
    out: list[bytes] = []
    last: bytes | None = None
    folder: int | None = None
    try:
        for mode, oid, path in jobs:
            parent, _, name = path.rpartition(b"/")
            if parent != last:
                folder, last = folders.enter(parent), parent
            found = UNKNOWN
            if folder is not None:
                try:
                    found = _unchanged(name, folder, mode, oid, new, buffer)
                except OSError:  # gone, or not to be read: git compares it itself
                    found = UNKNOWN
            out.append(found)
    finally:
        folders.leave()
    return b"".join(out)


def parse(data: bytes, oid_bytes: int) -> list[Job]:
    """The jobs of standard input; `ValueError` when it is cut short."""
    jobs: list[Job] = []
    at = 0
    while at < len(data):
        end = data.find(b"\0", at + 4 + oid_bytes)
        if end < 0:
            raise ValueError("an entry without its end")
        mode = int.from_bytes(data[at : at + 4], "big")
        jobs.append((mode, data[at + 4 : at + 4 + oid_bytes], data[at + 4 + oid_bytes : end]))
        at = end + 1
    return jobs


def become(uid: str, gid: str) -> None:
    """Become the user `uid`, group `gid`, with no other group (`-`: stay who we are). Once
    changed from root, the process may not be traced by that user's other processes."""
    if uid != "-":
        os.setgroups([])
        os.setgid(int(gid))
        os.setuid(int(uid))


def in_threads(threads: int, chunks: Sequence[Sequence[Job]], top: int, algorithm: str) -> bytes:
    """The answers for `chunks` of jobs, in order, taken in turn by `threads` threads."""
    done: list[bytes | None] = [None] * len(chunks)
    turns = itertools.count()  # its `next` is atomic: each chunk is taken once

    def work() -> None:
        while (number := next(turns)) < len(chunks):
            done[number] = answers(top, chunks[number], algorithm)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if any(answer is None for answer in done):
        raise OSError("a thread of the hashing stopped short")
    return b"".join(answer for answer in done if answer is not None)


def main(arguments: Sequence[str]) -> int:
    """Become the reader, then answer for each entry of standard input, hashed in `threads`
    threads. Arguments: hash, threads, user and group."""
    algorithm, threads, uid, gid = arguments[0], int(arguments[1]), arguments[2], arguments[3]
    become(uid, gid)
    jobs = parse(sys.stdin.buffer.read(), hashlib.new(algorithm).digest_size)
    top = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    if threads <= 1:
        sys.stdout.buffer.write(answers(top, jobs, algorithm))
    else:
        size = -(-len(jobs) // (threads * 4)) or 1
        chunks = [jobs[at : at + size] for at in range(0, len(jobs), size)]
        sys.stdout.buffer.write(in_threads(threads, chunks, top, algorithm))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (OSError, ValueError, IndexError) as exc:
        sys.stderr.write(f"fatal: cannot hash the tree: {exc}\n")
        sys.exit(128)
