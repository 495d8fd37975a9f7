"""gzip compression on `WORKERS` threads: a stream written as gzip members compressed at once.

Interpreter side (files); the compression of the source archive (SPEC §6).

Why hand-written, not python-isal's `igzip_threaded`: it was put in this pool's place (its
threads writing one gzip member per run of fresh tar data, the cache's pieces copied between
members, the pieces compressed by ISA-L too) and lost. `benchmarks/bench_evaluate.py --against`
(20,000 files, 200 MB on /dev/shm, 2 CPUs, medians of 3), each checkout twice in the same run,
alternating (library, this pool, library, this pool) so that a round's order favours neither:
`evaluate` until it exits 3.36 s and 2.72 s with the library against 2.65 s and 2.32 s with
this pool (22 % slower on average; the archive is what it waits for after `result.json`, which
came as soon: 1.43/1.24 s against 1.45/1.18 s). An earlier run on a busier host (load average
11-18) had it 20 % slower to its exit too (13.26 s against 11.03 s).
ISA-L's deflate itself is faster than zlib's (32 MB of random bytes in 0.20 s
at level 1, zlib storing them in 0.30 s); what costs is the shape of this archive: a member
ends wherever a piece of the baseline's archive cache is copied in and wherever a split worker
takes its next part of the tree, so the stream is many short members, and each of the
library's writers starts and joins threads of its own, where this pool keeps its threads for
the whole archive and stores what deflate cannot halve.
"""

from __future__ import annotations

import collections
import errno
import os
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from interpreters.real.files.descriptors import CHUNK, WORKERS, Check, write_all

_MEMBER_SIZE = 4 << 20
"""Bytes of tar data per gzip member: members are compressed by `WORKERS` threads at once."""
_PIECE = 512 << 10
"""Bytes of one gzip member inside a block: each chooses its own way of compressing."""
_PROBE = 16 << 10
"""Bytes of a piece tried first, to choose how to compress the rest."""


def _level(piece: bytes, level: int) -> int:
    """The zlib level that pays for `piece`, judged on its first bytes: 0 (stored) when
    deflate saves less than half of them (git's objects, archives, media, dense data), for it
    would spend ten times as long as storing for little; `level` otherwise, as for source
    code, which it shrinks to about a quarter."""
    if not level or len(piece) <= 2 * _PROBE:
        return level
    return 0 if len(zlib.compress(piece[:_PROBE], level)) * 2 > _PROBE else level


def gzip_members(data: bytes, level: int) -> bytes:
    """`data` as gzip members of `_PIECE` bytes each, each at the level `_level` says."""
    out: list[bytes] = []
    for start in range(0, len(data), _PIECE):
        piece = data[start : start + _PIECE]
        packer = zlib.compressobj(_level(piece, level), zlib.DEFLATED, 31)  # 31: gzip member
        out += (packer.compress(piece), packer.flush())
    return b"".join(out)


@dataclass(frozen=True, slots=True)
class Span:
    """`length` bytes of the file `fd` from `offset`: gzip members compressed earlier."""

    fd: int
    offset: int
    length: int

    def then(self, after: Span) -> Span | None:
        """This span and `after` as one, when `after` follows it in the same file."""
        if after.fd != self.fd or after.offset != self.offset + self.length:
            return None
        return Span(self.fd, self.offset, self.length + after.length)


def copy_span(span: Span, fd: int, check: Check) -> None:
    """Append `span` to `fd` (at its position): in the kernel where it can, read and written
    here where it cannot."""
    offset, left = span.offset, span.length
    while left:
        check()
        try:
            done = os.copy_file_range(span.fd, fd, min(left, CHUNK), offset)
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                raise
            done = 0
        if not done:
            data = os.pread(span.fd, min(left, _PIECE), offset)
            if not data:
                raise OSError(errno.EIO, "the compressed span ends early")
            done = len(data)
            write_all(fd, data)
        offset += done
        left -= done


class ParallelGzip:
    """Writes what it is given to `fd` as gzip, compressed by `WORKERS` threads at once (zlib
    releases the GIL). The output is a series of gzip members, which every gzip reader takes
    as one stream (RFC 1952, section 2.2); `copy` puts members compressed earlier among them.
    """

    def __init__(self, fd: int, level: int, pool: ThreadPoolExecutor, check: Check) -> None:
        self._fd = fd
        self._level = level
        self._pool = pool
        self._check = check
        self._buffer = bytearray()
        self._pending: collections.deque[Future[bytes] | Span] = collections.deque()

    def write(self, data: bytes) -> None:
        """Add `data` to the stream."""
        self._buffer += data
        if len(self._buffer) >= _MEMBER_SIZE:
            self._submit()

    def _submit(self) -> None:
        block, self._buffer = bytes(self._buffer), bytearray()
        self._pending.append(self._pool.submit(gzip_members, block, self._level))
        while len(self._pending) > WORKERS:
            self._drain_one()

    def copy(self, span: Span) -> None:
        """Add gzip members compressed earlier, after what was written so far (one copy with
        the span before when they follow each other in the same file)."""
        if self._buffer:
            self._submit()
        last = self._pending[-1] if self._pending else None
        joined = last.then(span) if isinstance(last, Span) else None
        if joined is not None:
            self._pending[-1] = joined
            return
        self._pending.append(span)
        while len(self._pending) > WORKERS:
            self._drain_one()

    def _drain_one(self) -> None:
        item = self._pending.popleft()
        if isinstance(item, Span):
            copy_span(item, self._fd, self._check)
            return
        write_all(self._fd, item.result(), self._check)

    def finish(self) -> None:
        """Compress and write what is left."""
        if self._buffer:
            self._submit()
        while self._pending:
            self._drain_one()


class SpooledGzip(ParallelGzip):
    """A `ParallelGzip` whose stream is put together later, by another process: what it
    compresses goes to its own file `fd` (from the file's position on), the members it is
    given to `copy` stay where they are, and `spans` says in order where the stream lies."""

    def __init__(self, fd: int, level: int, pool: ThreadPoolExecutor, check: Check) -> None:
        super().__init__(fd, level, pool, check)
        self._end = os.lseek(fd, 0, os.SEEK_CUR)
        self.spans: list[Span] = []

    def _drain_one(self) -> None:
        item = self._pending.popleft()
        if not isinstance(item, Span):
            data = item.result()
            write_all(self._fd, data, self._check)
            item, self._end = Span(self._fd, self._end, len(data)), self._end + len(data)
        joined = self.spans[-1].then(item) if self.spans else None
        if joined is not None:
            self.spans[-1] = joined
        else:
            self.spans.append(item)
