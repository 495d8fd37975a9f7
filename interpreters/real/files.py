"""Real file operations: fresh copies of a tree, the source archive, atomic writes, removal.

Interpreter layer (performs I/O). The copy is the hot path of grading (one fresh copy of the
grading repo per check) and, in the daemon's agent phase, a read of the agent's live tree as
root while the agent may change it. So it works on directory file descriptors only: each folder
is opened relative to its parent's descriptor with O_NOFOLLOW, listed through its own
descriptor, and its entries opened relative to it with O_NOFOLLOW; no path of the tree is looked
up twice, and no symlink is followed, whatever is swapped in meanwhile. File data is copied in
the kernel (`copy_file_range`, which also reflinks on filesystems that can, falling back to
`sendfile`, then to read/write) by a few worker threads: the system calls release the GIL, so
the data copies of several files overlap. `benchmarks/bench_copy.py` measures it against
`cp -a`."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import resource
import stat
import subprocess
import tarfile
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from returns.result import Failure, Result, Success

__all__ = ["archive", "atomic_write", "fresh_copy", "remove_tree"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO swapped in after the listing must not block the copy.
_SRC_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_DST_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_KEPT_BITS = 0o7777 & ~(stat.S_ISUID | stat.S_ISGID)
_BATCH = 128
_CHUNK = 1 << 30
_WORKERS = max(2, min(8, os.cpu_count() or 2))
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


# How file data is copied, degraded once for the whole process when the kernel refuses.
_data_copy = {"copy_file_range": hasattr(os, "copy_file_range"), "sendfile": True}
_FALLBACK_ERRNOS = {errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL, errno.EBADF}


def _copy_data(src: int, dst: int, size: int, ways: dict[str, bool] = _data_copy) -> None:
    """Copy the `size` bytes of `src` to `dst` in the best way `ways` still allows."""
    # Each way below continues from the file offsets the previous one left (all of them move
    # both offsets), so a fallback half-way copies the rest, not the whole file again.
    done = 0
    if ways["copy_file_range"]:
        try:
            while True:
                n = os.copy_file_range(src, dst, max(_CHUNK, size - done))
                done += n
                if done >= size or (n == 0 and done):
                    return
                if n == 0:
                    break  # nothing at all from a non-empty file: some filesystems do that
        except OSError as exc:
            if exc.errno not in _FALLBACK_ERRNOS:
                raise
            ways["copy_file_range"] = False
    if ways["sendfile"]:
        try:
            while os.sendfile(dst, src, None, _CHUNK):
                pass
            return
        except OSError as exc:
            if exc.errno not in _FALLBACK_ERRNOS:
                raise
            ways["sendfile"] = False
    while block := os.read(src, 1 << 20):
        view = memoryview(block)
        while view:
            view = view[os.write(dst, view) :]


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
        src = os.open(name, _SRC_FLAGS, dir_fd=sfd)
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
                _copy_data(src, dst, st.st_size)
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
    futures: list[Future[None]] = field(default_factory=list)
    made: list[_Dir] = field(default_factory=list)

    def submit(self, sfd: int, dfd: int, names: list[str]) -> None:
        """Hand a batch of names to the pool, with its own duplicates of both descriptors.

        At most a few batches wait at once, so the descriptors they hold stay few.
        """
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
            child = os.open(name, _DIR_FLAGS, dir_fd=sfd)
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
            made = os.open(name, _DIR_FLAGS, dir_fd=dfd)
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


def fresh_copy(src: Path, dest: Path, owner: tuple[int, int] | None) -> None:
    """Copy the tree `src` to `dest` (which must not exist; its parent must).

    Symlinks are copied as links, never followed (also when they point outside the tree, and
    when the tree changes during the copy: the walk uses directory descriptors only, see
    `_walk`); sockets, FIFOs and devices are skipped; set-uid and set-gid bits are dropped;
    permission bits (exec bits included) and times are kept. With `owner` (`(uid, gid)`, needs
    root) every copied entry belongs to that owner. `src` itself must be a directory, not a
    symlink to one. Raises `OSError` when the tree cannot be read or the copy cannot be written
    (`dest` may then hold part of the copy: remove it with `remove_tree`).
    """
    _enough_descriptors()
    try:
        top = os.open(src, _DIR_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise NotADirectoryError(
                errno.ENOTDIR, "not a directory (symlinks are not followed)", os.fspath(src)
            ) from None
        raise
    try:
        root = os.fstat(top)
        os.mkdir(dest, 0o700)
        out = os.open(dest, _DIR_FLAGS)
        try:
            plan = _Plan(owner=owner, umask=_current_umask())
            # Leaving the pool waits for every batch, also when the walk fails: nothing writes
            # into `dest` once the caller sees an error.
            with ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="fresh_copy") as pool:
                walk = _Walk(plan, pool, threading.BoundedSemaphore(_WORKERS * 4))
                _walk(top, out, walk)
            for future in walk.futures:
                future.result()
            # Children before parents: filling a folder changes its mtime, and the copy's
            # folders stay ours (0700) until their own contents are done.
            for item in reversed(walk.made):
                fd = os.open(item.path, _DIR_FLAGS, dir_fd=out)
                try:
                    _finish_dir(fd, item, plan)
                finally:
                    os.close(fd)
            _finish_dir(out, _Dir("", root.st_mode, root.st_atime_ns, root.st_mtime_ns), plan)
        finally:
            os.close(out)
    finally:
        os.close(top)


# ---------------------------------------------------------------------------- archive


def archive(source: Path, dest: Path) -> Result[None, str]:
    """Write `source` as a gzip-compressed tar file at `dest` (members under `source.name/`).

    Symlinks are stored as links, never followed; sockets, FIFOs and devices are left out.
    Best effort: any failure gives `Failure(message)` and leaves no partial file at `dest`.
    """
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as raw:
            with tarfile.open(fileobj=raw, mode="w:gz", compresslevel=6) as tar:
                tar.add(source, arcname=source.name, recursive=True, filter=_regular_only)
            raw.flush()
            os.fsync(raw.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
        tmp = None
    except (OSError, tarfile.TarError, ValueError) as exc:
        return Failure(f"could not archive {source}: {exc}")
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return Success(None)


def _regular_only(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
    # Sockets never reach the filter (tarfile cannot store them); FIFOs and devices do.
    if member.ischr() or member.isblk() or member.isfifo():
        return None
    return member


# ---------------------------------------------------------------------------- small writes


def atomic_write(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Replace `path` by `data` atomically: temp file in the same folder, fsync, chmod, rename.

    Readers see the old file or the new one, never a partial one. Raises `OSError` on failure
    (and leaves no temp file behind).
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
            os.fchmod(out.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


# ---------------------------------------------------------------------------- removal


def remove_tree(path: Path) -> None:
    """Remove `path` and everything under it; a missing path is fine.

    Works on directory descriptors (a symlink in the tree is removed, never followed) and makes
    directories writable when the runner left them read-only or unreadable. Trees too deep for
    that walk are handed to `chmod -R u+rwx` and `rm -rf`. Raises `OSError` when something
    remains.
    """
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(path)
        return
    try:
        fd = _open_dir(None, os.fspath(path))
        try:
            _clear_dir(fd)
        finally:
            os.close(fd)
        os.rmdir(path)
    except (RecursionError, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno not in (errno.EMFILE, errno.ENFILE):
            raise
        _remove_with_tools(path)


_ROOT = os.geteuid() == 0


def _open_dir(parent: int | None, name: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except PermissionError:
        # Not readable/searchable by its owner (us, as an ordinary user): make it so, then retry.
        os.chmod(name, 0o700, dir_fd=parent)
        return os.open(name, _DIR_FLAGS, dir_fd=parent)


def _clear_dir(fd: int) -> None:
    if not _ROOT and os.fstat(fd).st_mode & 0o700 != 0o700:
        os.fchmod(fd, 0o700)
    with os.scandir(fd) as listing:
        entries = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in listing]
    for name, is_dir in entries:
        if is_dir:
            child = _open_dir(fd, name)
            try:
                _clear_dir(child)
            finally:
                os.close(child)
            os.rmdir(name, dir_fd=fd)
        else:
            try:
                os.unlink(name, dir_fd=fd)
            except FileNotFoundError:
                pass
            except IsADirectoryError:  # replaced by a directory meanwhile
                child = _open_dir(fd, name)
                try:
                    _clear_dir(child)
                finally:
                    os.close(child)
                os.rmdir(name, dir_fd=fd)


def _remove_with_tools(path: Path) -> None:
    # GNU chmod -R never follows symlinks met in the walk; rm -rf handles any depth.
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}
    subprocess.run(["chmod", "-R", "u+rwx", "--", os.fspath(path)], env=env, check=False)
    done = subprocess.run(
        ["rm", "-rf", "--one-file-system", "--", os.fspath(path)],
        env=env,
        check=False,
        capture_output=True,
        text=True,
    )
    if os.path.lexists(path):
        raise OSError(errno.ENOTEMPTY, f"could not remove: {done.stderr.strip()}", os.fspath(path))
