"""Fresh copies of a tree (`fresh_copy`), walked with directory descriptors only.

Interpreter side (files). The copy is the hot path of grading (one fresh copy of the grading
repo per check) and, in the daemon's agent phase, a read of the agent's live tree as root while
the agent may change it. So it works on directory file descriptors only: each folder is opened
relative to its parent's descriptor with O_NOFOLLOW, listed through its own descriptor, and its
entries opened relative to it with O_NOFOLLOW; no path of the tree is looked up twice, and no
symlink is followed, whatever is swapped in meanwhile. File data is copied in the kernel
(`data.copy_data`) by a few worker threads: the system calls release the GIL, so the data copies
of several files overlap. `benchmarks/bench_copy.py` measures it against `cp -a`.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import resource
import stat
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from interpreters.real.files.data import copy_data
from interpreters.real.files.descriptors import DIR_FLAGS, SRC_FLAGS, WORKERS

_DST_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_KEPT_BITS = 0o7777 & ~(stat.S_ISUID | stat.S_ISGID)
_BATCH = 128
_WANTED_FILES = 1 << 16


def _current_umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022  # the usual value; a wrong guess only costs an extra fchmod below


@dataclass(frozen=True, slots=True)
class _Plan:
    owner: tuple[int, int] | None
    umask: int


def _copy_entries(
    sfd: int, dfd: int, names: list[str], plan: _Plan, done: Callable[[], None]
) -> None:
    """Copy the regular files and symlinks `names` of the folder `sfd` into `dfd` (one batch).

    The batch owns both descriptors (duplicates made for it) and closes them; `done` is called
    at the end, whatever happens.
    """
    try:
        for name in names:
            _copy_entry(sfd, dfd, name, plan)
    finally:
        os.close(sfd)
        os.close(dfd)
        done()


def _copy_entry(sfd: int, dfd: int, name: str, plan: _Plan) -> None:
    try:
        src = os.open(name, SRC_FLAGS, dir_fd=sfd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symlink (the listing said so, or it was swapped in)
            _copy_symlink(sfd, dfd, name, plan)
            return
        if exc.errno in (errno.ENXIO, errno.ENOENT):  # a socket swapped in, or gone: skip
            return
        raise
    try:
        st = os.fstat(src)
        if not stat.S_ISREG(st.st_mode):
            return  # a folder, FIFO or device swapped in after the listing: skipped
        mode = st.st_mode & _KEPT_BITS
        dst = os.open(name, _DST_FLAGS, mode & 0o777, dir_fd=dfd)
        try:
            if st.st_size:
                copy_data(src, dst, st.st_size)
            if plan.owner is not None:
                os.fchown(dst, *plan.owner)
            if mode != mode & 0o777 & ~plan.umask:
                os.fchmod(dst, mode)
            os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(dst)
    finally:
        os.close(src)


def _copy_symlink(sfd: int, dfd: int, name: str, plan: _Plan) -> None:
    # One lookup: an O_PATH descriptor of the link itself, then its type and target from it.
    try:
        link = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=sfd)
    except FileNotFoundError:
        return
    try:
        st = os.fstat(link)
        if not stat.S_ISLNK(st.st_mode):
            return  # swapped for something else after the first look: skipped
        target = os.readlink("", dir_fd=link)
    finally:
        os.close(link)
    os.symlink(target, name, dir_fd=dfd)
    if plan.owner is not None:
        os.chown(name, *plan.owner, dir_fd=dfd, follow_symlinks=False)
    os.utime(name, ns=(st.st_atime_ns, st.st_mtime_ns), dir_fd=dfd, follow_symlinks=False)


@dataclass(frozen=True, slots=True)
class _Dir:
    path: str  # relative to the copy's top folder ("" for the top itself)
    mode: int
    atime_ns: int
    mtime_ns: int


@dataclass
class _Walk:
    """The state of one copy's walk: the pool, the batches handed to it, the folders made."""

    plan: _Plan
    pool: ThreadPoolExecutor
    slots: threading.BoundedSemaphore
    check: Callable[[], None] = lambda: None
    futures: list[Future[None]] = field(default_factory=list)
    made: list[_Dir] = field(default_factory=list)

    def submit(self, sfd: int, dfd: int, names: list[str]) -> None:
        """Hand a batch of names to the pool, with its own duplicates of both descriptors.

        At most a few batches wait at once, so the descriptors they hold stay few. `check`
        runs first: what it raises (the time limit) stops the copy.
        """
        self.check()
        self.slots.acquire()
        try:
            mine = os.dup(sfd), os.dup(dfd)
        except BaseException:
            self.slots.release()
            raise
        self.futures.append(
            self.pool.submit(_copy_entries, *mine, names, self.plan, self.slots.release)
        )

    def list_folder(self, sfd: int, dfd: int) -> list[str]:
        """Hand the files and symlinks of the folder `sfd` to the pool; answer its folders."""
        folders: list[str] = []
        files: list[str] = []
        with os.scandir(sfd) as listing:
            for entry in listing:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.name)
                elif entry.is_file(follow_symlinks=False) or entry.is_symlink():
                    files.append(entry.name)
                    if len(files) == _BATCH:
                        self.submit(sfd, dfd, files)
                        files = []
                # sockets, FIFOs and devices are skipped
        if files:
            self.submit(sfd, dfd, files)
        return folders

    def enter(self, sfd: int, dfd: int, name: str, where: str) -> tuple[int, int] | None:
        """Open the subfolder `name` of `sfd` (never through a symlink), make its copy in `dfd`;
        answer both descriptors, or None when it is no longer a folder (then it was copied as
        what it became, or skipped)."""
        try:
            child = os.open(name, DIR_FLAGS, dir_fd=sfd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # swapped after the listing
                _copy_entry(sfd, dfd, name, self.plan)
                return None
            if exc.errno == errno.ENOENT:
                return None
            raise
        try:
            st = os.fstat(child)
            os.mkdir(name, 0o700, dir_fd=dfd)
            made = os.open(name, DIR_FLAGS, dir_fd=dfd)
        except BaseException:
            os.close(child)
            raise
        self.made.append(_Dir(where, st.st_mode, st.st_atime_ns, st.st_mtime_ns))
        return child, made


def _walk(top: int, dest: int, walk: _Walk) -> None:
    """Copy the folders under the folder `top` into `dest`, handing their files to the pool.

    Only descriptors are used: each subfolder is opened relative to its parent's descriptor
    with O_NOFOLLOW, listed through its own descriptor, and its entries opened relative to it,
    so no path of the tree is ever looked up twice and no symlink is followed, however the
    tree changes meanwhile. Descriptors are held only along the current branch.
    """
    stack: list[tuple[int, int, str, Iterator[str]]] = [
        (top, dest, "", iter(walk.list_folder(top, dest)))
    ]
    try:
        while stack:
            sfd, dfd, where, folders = stack[-1]
            name = next(folders, None)
            if name is None:
                stack.pop()
                if stack:  # the top's descriptors belong to the caller
                    os.close(sfd)
                    os.close(dfd)
                continue
            path = f"{where}/{name}" if where else name
            opened = walk.enter(sfd, dfd, name, path)
            if opened is not None:
                try:
                    listed = walk.list_folder(*opened)
                except BaseException:
                    os.close(opened[0])
                    os.close(opened[1])
                    raise
                stack.append((*opened, path, iter(listed)))
    finally:
        for sfd, dfd, _where, _folders in stack[1:]:
            os.close(sfd)
            os.close(dfd)


def _finish_dir(fd: int, item: _Dir, plan: _Plan) -> None:
    if plan.owner is not None:
        os.fchown(fd, *plan.owner)
    os.fchmod(fd, item.mode & _KEPT_BITS)
    os.utime(fd, ns=(item.atime_ns, item.mtime_ns))


@functools.cache
def _enough_descriptors() -> None:
    """Raise this process's soft limit of open files towards its hard limit (once): a copy
    holds two descriptors per level of the branch it is in."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = _WANTED_FILES if hard == resource.RLIM_INFINITY else min(hard, _WANTED_FILES)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def fresh_copy(
    src: Path, dest: Path, owner: tuple[int, int] | None, *, check: Callable[[], None] | None = None
) -> None:
    """Copy the tree `src` to `dest` (which must not exist; its parent must).

    Symlinks are copied as links, never followed (also when they point outside the tree, and
    when the tree changes during the copy: the walk uses directory descriptors only, see
    `_walk`); sockets, FIFOs and devices are skipped; set-uid and set-gid bits are dropped;
    permission bits (exec bits included) and times are kept. With `owner` (`(uid, gid)`, needs
    root) every copied entry belongs to that owner. `src` itself must be a directory, not a
    symlink to one. Raises `OSError` when the tree cannot be read or the copy cannot be written
    (`dest` may then hold part of the copy: remove it with `remove_tree`). `check` is called
    before each batch of files is handed out: what it raises (e.g. the time limit) stops the
    copy the same way.
    """
    _enough_descriptors()
    try:
        top = os.open(src, DIR_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise NotADirectoryError(
                errno.ENOTDIR, "not a directory (symlinks are not followed)", os.fspath(src)
            ) from None
        raise
    try:
        root = os.fstat(top)
        os.mkdir(dest, 0o700)
        out = os.open(dest, DIR_FLAGS)
        try:
            plan = _Plan(owner=owner, umask=_current_umask())
            # Leaving the pool waits for every batch, also when the walk fails: nothing writes
            # into `dest` once the caller sees an error.
            with ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="fresh_copy") as pool:
                walk = _Walk(
                    plan, pool, threading.BoundedSemaphore(WORKERS * 4), check or (lambda: None)
                )
                _walk(top, out, walk)
            for future in walk.futures:
                future.result()
            # Children before parents: filling a folder changes its mtime, and the copy's
            # folders stay ours (0700) until their own contents are done.
            for item in reversed(walk.made):
                fd = os.open(item.path, DIR_FLAGS, dir_fd=out)
                try:
                    _finish_dir(fd, item, plan)
                finally:
                    os.close(fd)
            _finish_dir(out, _Dir("", root.st_mode, root.st_atime_ns, root.st_mtime_ns), plan)
        finally:
            os.close(out)
    finally:
        os.close(top)
