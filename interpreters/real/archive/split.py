"""The source archive written by several processes at once, then put together in order.

Interpreter side (files, processes); what keeps the archive of SPEC §3 step 7 from waiting on
one CPU while the others are idle. Walking a tree and reading its files costs Python time per
entry, which threads cannot share; so the archive's child process (`start_archive`) cuts the
tree into units, in the order the archive stores them (a folder with its files; the whole
subtree of a folder), and forks workers that take units from a queue. Each worker compresses
what it archives afresh into a file of its own and notes, unit by unit, where the unit's
stream lies: in its file, or in the baseline's archive cache. The parent then copies the spans
into the archive in unit order: the same tar stream as one walk writes, in other gzip members.

Each worker walks its units with directory descriptors from the root it inherits, as one walk
does: a folder swapped for a link or gone meanwhile is left out. A worker stops when its
parent is gone; the parent stops when its own is (the grading), or when a worker fails.
"""

from __future__ import annotations

import contextlib
import errno
import heapq
import os
import select
import signal
import struct
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from interpreters.real.archive.cache import Cache, ReusingArchiver
from interpreters.real.archive.compression import Span, SpooledGzip, copy_span, gzip_members
from interpreters.real.archive.tarstream import END, Archiver
from interpreters.real.files.descriptors import DIR_FLAGS, Check, write_all

__all__ = ["PROCESSES", "SplitArchive", "Unit", "folder_of", "start_split", "units", "write_split"]

PROCESSES = max(1, min(8, len(os.sched_getaffinity(0))))
"""Workers of one archive: one per CPU this process may use (the archive's child yields the CPU, so
the checks it overlaps come first)."""
UNITS_PER_PROCESS = 32
"""Units the tree is cut into, per worker, when it has that many folders: enough for the
workers to end together, few enough that each unit's last gzip member stays large."""
_INDEX = struct.Struct("<I")
_RECORD = struct.Struct("<Iiqq")  # unit, file, offset, length
_DONE = -1
"""In a record's file field: the unit is done (its offset field: bytes from the cache)."""
_POLL = 0.01


@dataclass(frozen=True, slots=True)
class Unit:
    """A part of the tree, named by its path from the root: the folder with its files and
    links (`whole` False), or the folder and everything under it."""

    names: tuple[str, ...]
    whole: bool


def _open(root: int, names: tuple[str, ...]) -> int | None:
    """The folder at `names` under `root`, opened one name at a time without following a
    link; None when one is gone, swapped for a link or a file, or unreadable."""
    fd = os.dup(root)
    try:
        for name in names:
            try:
                sub = os.open(name, DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT, errno.EACCES):
                    os.close(fd)
                    return None
                raise
            os.close(fd)
            fd = sub
    except BaseException:
        os.close(fd)
        raise
    return fd


def _folders(root: int) -> dict[tuple[str, ...], tuple[int, list[str]]]:
    """Every folder under `root` (by its names from the root): how many other entries it has,
    and its subfolders. Listings only: no entry is looked at."""
    found: dict[tuple[str, ...], tuple[int, list[str]]] = {}
    stack: list[tuple[int, tuple[str, ...]]] = [(os.dup(root), ())]
    try:
        while stack:
            fd, names = stack.pop()
            try:
                with os.scandir(fd) as listing:
                    entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in listing]
                subs = sorted(name for name, is_dir in entries if is_dir)
                found[names] = (len(entries) - len(subs), subs)
                for sub in subs:
                    with contextlib.suppress(OSError):  # gone or swapped: the walk will see
                        stack.append((os.open(sub, DIR_FLAGS, dir_fd=fd), (*names, sub)))
            finally:
                os.close(fd)
    finally:
        for fd, _names in stack:
            os.close(fd)
    return found


def units(root: int, budget: int) -> list[Unit]:
    """The tree of `root` cut into at most about `budget` units of similar numbers of
    entries, in archive order: the largest subtree is split (its folder's files, then each
    subfolder whole) until the budget is spent or every subtree is small."""
    folders = _folders(root)
    totals: dict[tuple[str, ...], int] = {}
    for names in sorted(folders, key=len, reverse=True):  # children before their parent
        files, subs = folders[names]
        totals[names] = 1 + files + sum(totals.get((*names, sub), 0) for sub in subs)
    small = totals[()] // budget
    whole: list[tuple[int, tuple[str, ...]]] = [(-totals[()], ())]
    parts: list[Unit] = []
    while whole and len(parts) + len(whole) < budget:
        size, names = heapq.heappop(whole)
        subs = folders.get(names, (0, []))[1]  # none listed: gone or swapped meanwhile
        if -size <= small or not subs:
            parts.append(Unit(names, True))
            continue
        parts.append(Unit(names, False))
        for sub in subs:
            heapq.heappush(whole, (-totals.get((*names, sub), 1), (*names, sub)))
    parts += (Unit(names, True) for _size, names in whole)
    return sorted(parts, key=lambda unit: unit.names)


def folder_of(fd: int) -> str:
    """The folder of the file open as `fd`."""
    return os.path.dirname(os.readlink(f"/proc/self/fd/{fd}"))


def _anonymous(folder: str) -> int:
    """A file of no name in `folder` (for a spool: nothing is left behind whatever
    happens)."""
    try:
        return os.open(folder, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            raise
    path = os.path.join(folder, f".ssegrade-spool-{os.getpid()}-{time.monotonic_ns()}")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    os.unlink(path)
    return fd


@dataclass(slots=True)
class _Job:
    """What every worker shares: the tree, its units and their queue, the cache."""

    root: int
    name: str
    parts: list[Unit]
    queue: int
    level: int
    cache: Cache | None


def _work(job: _Job, spool: int, plan: int, check: Check) -> None:
    """One worker: archive the units it takes from the queue into `spool`, and after each
    write to `plan` where its stream lies, then its end (`_DONE`, with the bytes that came
    from the cache)."""
    names: dict[tuple[int, int], tuple[str, str]] = {}
    with ThreadPoolExecutor(1, thread_name_prefix="archive") as pool:
        while raw := os.read(job.queue, _INDEX.size):
            (number,) = _INDEX.unpack(raw)
            unit = job.parts[number]
            fd = _open(job.root, unit.names)
            records: list[bytes] = []
            reused = 0
            if fd is not None:  # else gone or swapped meanwhile: left out, as by one walk
                out = SpooledGzip(spool, job.level, pool, check)
                archiver = (
                    Archiver(out, check, names)
                    if job.cache is None
                    else ReusingArchiver(out, check, names, job.cache, out)
                )
                try:
                    path = "/".join((job.name, *unit.names))
                    (archiver.subtree if unit.whole else archiver.folder)(fd, path)
                finally:
                    os.close(fd)
                out.finish()
                reused = archiver.reused if isinstance(archiver, ReusingArchiver) else 0
                records = [_RECORD.pack(number, s.fd, s.offset, s.length) for s in out.spans]
            records.append(_RECORD.pack(number, _DONE, reused, 0))
            write_all(plan, b"".join(records))


def _fork(job: _Job, spool: int, feed: int, check_parent: Callable[[], bool]) -> tuple[int, int]:
    """Start one worker (`feed`: the queue's write end, which it closes); its pid and the
    read end of its plan."""
    read, write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write)
        return pid, read
    status = 1
    try:
        os.close(read)
        os.close(feed)

        def check() -> None:
            if not check_parent():
                raise SystemExit("the archive's parent is gone")

        _work(job, spool, write, check)
        status = 0
    except BaseException as exc:  # noqa: BLE001 (a worker ends here, whatever happened)
        with contextlib.suppress(BaseException):
            sys.stderr.write(f"archive worker: {exc}\n")
            sys.stderr.flush()
    os._exit(status)


@dataclass(slots=True)
class SplitArchive:
    """Workers archiving their units of a tree into spools (`start_split`), until `finish`
    puts the archive together; `stop` ends them, whatever state they are in."""

    parts: list[Unit]
    level: int
    workers: dict[int, int]
    """pid: the read end of its plan, until it is reaped."""
    spools: list[int]
    queue: int

    def finish(self, fd: int, check: Check) -> int:
        """Write the archive to `fd` as the units are done; answer how many of its bytes
        came from the cache. Raises `OSError` when a worker fails; what `check` raises stops
        the archive (the workers stop by themselves, or with `stop`)."""
        reused = _assemble(self.parts, list(self.workers.values()), fd, check)
        for pid in list(self.workers):
            while not (ended := os.waitpid(pid, os.WNOHANG))[0]:
                check()
                time.sleep(_POLL)
            os.close(self.workers.pop(pid))
            if os.waitstatus_to_exitcode(ended[1]):
                raise OSError(errno.EIO, "an archive worker failed")
        write_all(fd, gzip_members(END, self.level))
        return reused

    def stop(self) -> None:
        """Kill the workers still running and close every file (idempotent)."""
        for pid, plan in self.workers.items():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            os.close(plan)
        self.workers.clear()
        for spool in self.spools:
            os.close(spool)
        self.spools.clear()
        if self.queue >= 0:
            os.close(self.queue)
            self.queue = -1


def start_split(
    root: int, name: str, spools: str, level: int, cache: Cache | None, processes: int
) -> SplitArchive:
    """Start `processes` workers archiving the tree `root` (members under `name/`), their
    spools in the folder `spools`; `SplitArchive.finish` puts the archive together."""
    parts = units(root, processes * UNITS_PER_PROCESS)
    queue_read, queue_write = os.pipe()
    started = SplitArchive(parts, level, {}, [], queue_read)
    try:
        job = _Job(root, name, parts, queue_read, level, cache)
        me = os.getpid()
        for _ in range(min(processes, len(parts))):
            started.spools.append(_anonymous(spools))
            pid, plan = _fork(job, started.spools[-1], queue_write, lambda: os.getppid() == me)
            started.workers[pid] = plan
        # The workers take from the queue meanwhile. A write of at most PIPE_BUF bytes is
        # whole or waits, so no record is ever cut and each read takes exactly one.
        queue = b"".join(_INDEX.pack(number) for number in range(len(parts)))
        step = select.PIPE_BUF - select.PIPE_BUF % _INDEX.size
        for start in range(0, len(queue), step):
            os.write(queue_write, queue[start : start + step])
    except BaseException:
        started.stop()
        raise
    finally:
        os.close(queue_write)
    return started


def write_split(
    root: int, name: str, fd: int, check: Check, level: int, cache: Cache | None, processes: int
) -> int:
    """Write the tar.gz of the tree `root` (members under `name/`) to `fd` with `processes`
    workers, their spools beside it; answer how many of its bytes were copied from `cache`.
    Raises `OSError` when a worker fails; what `check` raises stops it."""
    started = start_split(root, name, folder_of(fd), level, cache, processes)
    try:
        return started.finish(fd, check)
    finally:
        started.stop()


def _assemble(parts: list[Unit], plans: list[int], fd: int, check: Check) -> int:
    """Copy each unit's spans into `fd` in unit order, as soon as the workers' `plans` say
    where the next one lies, until they end; the bytes that came from the cache. Raises
    `OSError` when a unit was never done (a worker failed)."""
    spans: list[list[Span]] = [[] for _ in parts]
    done = [False] * len(parts)
    left = dict.fromkeys(plans, b"")
    poller = select.poll()
    for plan in plans:
        poller.register(plan, select.POLLIN)
    copied = reused = 0
    while left:
        for plan, _event in poller.poll(int(_POLL * 1000) * 5):
            data = left[plan] + os.read(plan, 1 << 16)
            if len(data) == len(left[plan]):  # the worker ended
                poller.unregister(plan)
                del left[plan]
                continue
            whole = len(data) - len(data) % _RECORD.size
            left[plan] = data[whole:]
            for number, source, offset, length in _RECORD.iter_unpack(data[:whole]):
                if source == _DONE:
                    done[number] = True
                    reused += offset
                else:
                    spans[number].append(Span(source, offset, length))
        check()
        while copied < len(parts) and done[copied]:
            for span in spans[copied]:
                copy_span(span, fd, check)
            spans[copied] = []
            copied += 1
    if copied < len(parts):
        raise OSError(errno.EIO, "an archive worker failed")
    return reused
