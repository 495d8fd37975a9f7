"""The source archive: `source.tar.gz` written whole or not at all, here or in a child process.

Interpreter side (files, processes); the archive of SPEC §6. The archive is written to a temp
file beside its destination and renamed into place once whole; `start_archive` writes it in a
child process, which shares no lock of ours and is stopped by a kill.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from returns.result import Failure, Result, Success

from interpreters.real.archive import child as archive_child
from interpreters.real.archive.cache import CACHE_NAME, Cache, ReusingArchiver, open_cache
from interpreters.real.archive.compression import ParallelGzip
from interpreters.real.archive.split import PROCESSES, SplitArchive, start_split, write_split
from interpreters.real.archive.tarstream import Archiver
from interpreters.real.files.descriptors import DIR_FLAGS, WORKERS, Check

ARCHIVE_LEVEL = 1
"""gzip level of `source.tar.gz`, where deflate pays (stored elsewhere): the fastest; the
archive is a record, not a distribution."""


ARCHIVE_NICENESS = 10
"""The archive's child's niceness where the idle scheduling class is refused (`_yield_cpu`):
the checks it overlaps, and `result.json`, come first; once they are done it has the CPU to
itself all the same."""

WAIT_SLICE = 0.2
"""Seconds between two checks while `ArchiveProcess.wait` waits: how late a deadline is seen."""


def _never() -> None:
    return None


def _yield_cpu() -> None:
    """Run (with the workers forked later) only on CPU time nothing else wants: the idle
    scheduling class where there is one, else niced by `ARCHIVE_NICENESS`."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(ARCHIVE_NICENESS)


@dataclass(slots=True)
class _Ahead:
    """An archive begun before its job came (`archive_child.spawn`'s hint): the tree, the
    archive cache and the workers archiving them."""

    source: Path
    root: int
    cache: Cache
    split: SplitArchive

    def serves(self, source: Path, cache: Path | None, processes: int) -> bool:
        """Whether it is the archive of this job: the same tree and cache, by name and by
        inode (what the names lead to now), with as many workers."""
        if cache is None or source.name != self.source.name or processes != PROCESSES:
            return False
        try:
            fd = os.open(source, DIR_FLAGS)
            try:
                now = os.fstat(fd)
            finally:
                os.close(fd)
            kept = os.stat(cache, follow_symlinks=False)
        except OSError:
            return False
        return _same(now, os.fstat(self.root)) and _same(kept, os.fstat(self.cache.fd))

    def close(self) -> None:
        """Stop what is left of it and close its files."""
        self.split.stop()
        self.cache.close()
        os.close(self.root)


def _same(one: os.stat_result, other: os.stat_result) -> bool:
    """Whether two statuses are of one file (device and inode)."""
    return (one.st_dev, one.st_ino) == (other.st_dev, other.st_ino)


def _begin(hint: list[str]) -> _Ahead | None:
    """The archive of the tree `hint[0]` with the archive cache of the baseline `hint[1]`,
    begun with `PROCESSES` workers (spools in the baseline's folder); None when there is no
    hint, no usable cache, or it cannot begin."""
    if len(hint) != 2 or PROCESSES < 2:
        return None
    source, cache_path = Path(hint[0]), Path(hint[1]) / CACHE_NAME
    opened = open_cache(cache_path)
    if not isinstance(opened, Cache):
        return None
    root = -1
    try:
        root = os.open(source, DIR_FLAGS)
        split = start_split(
            root, source.name, str(cache_path.parent), ARCHIVE_LEVEL, opened, PROCESSES
        )
    except OSError:
        opened.close()
        if root >= 0:
            os.close(root)
        return None
    return _Ahead(source, root, opened, split)


def _write_archive(
    source: Path,
    fd: int,
    check: Check,
    level: int,
    cache: Path | None = None,
    processes: int = 1,
    ahead: _Ahead | None = None,
) -> str | None:
    """Write the tar.gz of `source` to `fd`, reusing what it can of the archive cache at
    `cache`, with `processes` workers (`split_archive`; 1: in this process alone), or
    finishing `ahead`, this very archive begun earlier (`_Ahead.serves`); raises on failure.
    Says what the cache spared (None without one)."""
    if ahead is not None:
        reused = ahead.split.finish(fd, check)
        return _said(fd, reused, ahead.cache)
    opened = None if cache is None else open_cache(cache)
    reusable = opened if isinstance(opened, Cache) else None
    root = os.open(source, DIR_FLAGS)
    try:
        if processes > 1:
            reused = write_split(root, source.name, fd, check, level, reusable, processes)
        else:
            with ThreadPoolExecutor(WORKERS, thread_name_prefix="archive") as pool:
                out = ParallelGzip(fd, level, pool, check)
                archiver = (
                    Archiver(out, check, {})
                    if reusable is None
                    else ReusingArchiver(out, check, {}, reusable, out)
                )
                archiver.tree(root, source.name)
                out.finish()
            reused = archiver.reused if isinstance(archiver, ReusingArchiver) else 0
    finally:
        os.close(root)
        if reusable is not None:
            reusable.close()
    if reusable is not None:
        return _said(fd, reused, reusable)
    os.fsync(fd)
    return opened if isinstance(opened, str) else None


def _said(fd: int, reused: int, cache: Cache) -> str:
    """Sync the archive `fd`; say what share of it the cache spared."""
    os.fsync(fd)
    written = os.fstat(fd).st_size
    share = reused / written if written else 0.0
    return f"{share:.0%} of the archive reused from the baseline's archive cache"


def archive(
    source: Path,
    dest: Path,
    *,
    check: Check | None = None,
    level: int = ARCHIVE_LEVEL,
    cache: Path | None = None,
) -> Result[str | None, str]:
    """Write `source` as a gzip-compressed tar file at `dest` (members under `source.name/`).

    The tree is walked with directory descriptors, so no symlink is ever followed and no path
    is looked up twice (an entry swapped for a link meanwhile is stored as the link, or left
    out). Symlinks are stored as links; sockets, FIFOs and devices are left out. Compression
    (gzip `level` where it pays, stored elsewhere) runs on `WORKERS` threads. `check` is
    called between entries and reads: what it raises stops the archive and is raised again,
    leaving no file. Best effort otherwise: any failure gives `Failure(message)` and leaves no
    partial file at `dest`. With `cache` (the baseline's archive cache), the pieces of
    entries unchanged since it was recorded are copied from it; the answer says how much
    (None without a cache).
    """
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
        try:
            said = _write_archive(source, fd, check if check is not None else _never, level, cache)
        finally:
            os.close(fd)
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
        tmp = None
    except (OSError, tarfile.TarError, ValueError) as exc:
        return Failure(f"could not archive {source}: {exc}")
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return Success(said)


@dataclass(slots=True)
class ArchiveProcess:
    """`archive` running in a child process (`start_archive`): no lock of ours is shared with
    it, and stopping it is a kill."""

    process: subprocess.Popen[bytes]
    tmp: str
    dest: Path

    def finish(self, timeout: float | None) -> Result[str | None, str]:
        """Wait at most `timeout` seconds (None: until it ends); the archive is then at
        `dest`, or absent. Says what the archive cache spared, as `archive` does."""
        try:
            out, err = self.process.communicate(
                timeout=None if timeout is None else max(timeout, 0.0)
            )
        except subprocess.TimeoutExpired:
            self.stop()
            return Failure("not finished within the time limit")
        try:
            if self.process.returncode != 0:
                lines = err.decode(errors="replace").strip().splitlines() or ["no message"]
                return Failure(f"could not archive: {lines[-1]}")
            os.chmod(self.tmp, 0o644)
            os.replace(self.tmp, self.dest)
        except OSError as exc:
            return Failure(f"could not archive: {exc}")
        finally:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)
        said = out.decode(errors="replace").strip()
        return Success(said or None)

    def wait(self, check: Check) -> Result[str | None, str]:
        """Wait until it ends, calling `check` every `WAIT_SLICE` seconds meanwhile: what `check`
        raises stops the archive, leaving nothing, and is raised again. Then as `finish`."""
        try:
            # Woken the moment it ends (`Popen.wait` would poll, up to 50 ms late).
            ended = os.pidfd_open(self.process.pid)
            try:
                while not select.select([ended], [], [], WAIT_SLICE)[0]:
                    check()
            finally:
                os.close(ended)
        except BaseException:
            self.stop()
            raise
        return self.finish(None)

    def stop(self) -> None:
        """Kill it and its workers (its process group) and remove what it wrote."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.communicate()
        with contextlib.suppress(OSError):
            os.unlink(self.tmp)


def start_archive(
    source: Path, dest: Path, cache: Path | None = None, processes: int = PROCESSES
) -> ArchiveProcess:
    """Start writing the archive of `source` to `dest` in a child process (see `archive`,
    also for `cache`), with `processes` workers (`split_archive`): the child started ahead
    (`archive_child.warm_up`) if there is one, else a new one.

    The child writes a temp file beside `dest`; `ArchiveProcess.finish` renames it into place
    once it is whole. The child runs on idle CPU time (`_yield_cpu`) and stops by itself when its
    parent is gone. Raises `OSError` when it cannot start.
    """
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    job: dict[str, object] = {
        "source": os.fspath(source),
        "cache": None if cache is None else os.fspath(cache),
        "processes": processes,
    }
    try:
        child = archive_child.take_warm()
        if child is not None:
            try:
                archive_child.hand_over(child, job, fd)
            except OSError:
                child.kill()
                child = None
        if child is None:
            child = archive_child.spawn()
            try:
                archive_child.hand_over(child, job, fd)
            except BaseException:
                child.kill()
                raise
    except BaseException:
        os.unlink(tmp)
        raise
    finally:
        os.close(fd)
    return ArchiveProcess(child.process, tmp, dest)


def _archive_child() -> None:
    """The archive's child (`archive_child.spawn`): `job-socket parent-pid` on its command
    line; writes the archive its job asks for, and says on stdout what the cache spared."""
    _yield_cpu()
    ahead = _begin(sys.argv[3:5])
    try:
        received = archive_child.receive(int(sys.argv[1]))
        if received is None:
            return  # the grading ended without an archive to write
        job, fd = received
        parent = int(sys.argv[2])
        source, cache, processes = job["source"], job["cache"], job["processes"]
        if not isinstance(source, str) or not isinstance(processes, int):
            raise SystemExit("the archive's job is not one")

        def check() -> None:
            if os.getppid() != parent:
                raise SystemExit("the grading that started the archive is gone")

        where = Path(cache) if isinstance(cache, str) else None
        if ahead is not None and not ahead.serves(Path(source), where, processes):
            ahead.close()  # another archive: its workers stop now, not after the job's
            ahead = None
        try:
            said = _write_archive(Path(source), fd, check, ARCHIVE_LEVEL, where, processes, ahead)
        except OSError as exc:
            raise SystemExit(f"{source}: {exc}") from None
    finally:
        if ahead is not None:
            ahead.close()
    if said:
        print(said)
