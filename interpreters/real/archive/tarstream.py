"""A tree as a tar stream, walked with directory descriptors (SPEC §6).

Interpreter side (files). The walk never follows a symlink nor looks a path up twice: an entry
swapped for a link meanwhile is stored as the link, or left out; sockets, FIFOs and devices are
left out. Headers are plain ustar when they can be, tarfile's pax headers otherwise.
"""

from __future__ import annotations

import errno
import grp
import os
import pwd
import stat
import struct
import tarfile
from dataclasses import dataclass
from typing import Protocol

from interpreters.real.files.descriptors import DIR_FLAGS, SRC_FLAGS, Check

__all__ = ["END", "Archiver", "Sink", "group_name", "user_name"]

_READ_SIZE = 1 << 20
_BLOCK = 512
END = bytes(2 * _BLOCK)
"""The end-of-archive blocks."""


_HEAD = struct.Struct("100s8s8s8s12s12s")
"""A ustar header up to its checksum: name, mode, uid, gid, size, mtime (octal, NUL-ended)."""
_TAIL = struct.Struct("c100s8s32s32s8s8s155s12x")
"""A ustar header after its checksum: type, link, magic and version, owner names, device
numbers, name prefix, padding."""
_SMALL = 8**7
_LARGE = 8**11


def _ustar(
    name: str, st: os.stat_result, kind: bytes, size: int, link: str, names: tuple[str, str]
) -> bytes | None:
    """A ustar header block, or None when the entry needs tarfile's pax headers."""
    if not (name.isascii() and link.isascii() and names[0].isascii() and names[1].isascii()):
        return None
    raw, target = name.encode(), link.encode()
    prefix = b""
    if len(raw) > 100:
        cut = raw.rfind(b"/", 0, 156)
        if cut <= 0 or len(raw) - cut - 1 > 100:
            return None
        prefix, raw = raw[:cut], raw[cut + 1 :]
    mtime, uid, gid = int(st.st_mtime), st.st_uid, st.st_gid
    if not (
        len(target) <= 100
        and 0 <= uid < _SMALL
        and 0 <= gid < _SMALL
        and 0 <= size < _LARGE
        and 0 <= mtime < _LARGE
    ):
        return None
    mode = stat.S_IMODE(st.st_mode)
    head = _HEAD.pack(raw, b"%07o" % mode, b"%07o" % uid, b"%07o" % gid, b"%011o" % size,
                      b"%011o" % mtime)  # fmt: skip
    tail = _TAIL.pack(kind, target, b"ustar\x0000", names[0].encode(), names[1].encode(),
                      b"0000000", b"0000000", prefix)  # fmt: skip
    # The checksum counts its own field as eight spaces.
    return b"%s%06o\0 %s" % (head, sum(head) + sum(tail) + 8 * 32, tail)


class Sink(Protocol):
    """Where the tar stream goes (compressed on its way)."""

    def write(self, data: bytes) -> None:
        """Add `data` to the stream."""


@dataclass(slots=True)
class Archiver:
    """Writes a tree as a tar stream, walking it with directory descriptors (SPEC §6)."""

    out: Sink
    check: Check
    names: dict[tuple[int, int], tuple[str, str]]

    def header(
        self, name: str, st: os.stat_result, kind: bytes, size: int = 0, link: str = ""
    ) -> None:
        """The header of one member (`kind` a tarfile type), named after `st`'s owner."""
        key = (st.st_uid, st.st_gid)
        if key not in self.names:
            self.names[key] = (user_name(st.st_uid), group_name(st.st_gid))
        if kind == tarfile.DIRTYPE:
            name += "/"
        block = _ustar(name, st, kind, size, link, self.names[key])
        if block is None:  # long or non-ASCII names, big numbers: tarfile's pax headers
            member = tarfile.TarInfo(name)
            member.type, member.size, member.linkname = kind, size, link
            member.mode = stat.S_IMODE(st.st_mode)
            member.mtime = int(st.st_mtime)
            member.uid, member.gid = st.st_uid, st.st_gid
            member.uname, member.gname = self.names[key]
            block = member.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
        self.out.write(block)

    def tree(self, root: int, name: str) -> None:
        """The whole tree of the folder `root` under `name/`, then the end-of-archive blocks."""
        self.subtree(root, name)
        self.out.write(END)

    def folder(self, fd: int, name: str) -> None:
        """The folder `fd` as `name/` and its files and links, not its subfolders."""
        self.header(name, os.fstat(fd), tarfile.DIRTYPE)
        self.entries(fd, name)

    def subtree(self, root: int, name: str) -> None:
        """The folder `root` as `name/` and everything under it, depth first (`root` is left
        open)."""
        self.header(name, os.fstat(root), tarfile.DIRTYPE)
        # Each level keeps its descriptor until its subfolders are done: every lookup is one
        # name relative to a folder already open, never a path looked up again.
        stack: list[tuple[int, str, list[str]]] = [(root, name, self.entries(root, name))]
        try:
            while stack:
                fd, where, folders = stack[-1]
                if not folders:
                    stack.pop()
                    if fd != root:
                        os.close(fd)
                    continue
                child = folders.pop()
                self.check()
                try:
                    sub = os.open(child, DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT, errno.EACCES):
                        continue  # swapped for a link or a file, gone, or unreadable
                    raise
                try:
                    path = f"{where}/{child}"
                    self.header(path, os.fstat(sub), tarfile.DIRTYPE)
                    stack.append((sub, path, self.entries(sub, path)))
                except BaseException:
                    os.close(sub)
                    raise
        finally:
            for fd, _where, _folders in stack:
                if fd != root:
                    os.close(fd)

    def entries(self, fd: int, where: str) -> list[str]:
        """Add the files and links of the folder `fd`; answer its subfolders, last first."""
        with os.scandir(fd) as listing:
            found = sorted((entry.name, entry.is_dir(follow_symlinks=False)) for entry in listing)
        self.files(fd, where, [name for name, is_dir in found if not is_dir])
        folders = [name for name, is_dir in found if is_dir]
        folders.reverse()
        return folders

    def files(self, fd: int, where: str, names: list[str]) -> None:
        """Add the files and links `names` (sorted) of the folder `fd`, archived as `where`."""
        for name in names:
            self.check()
            self.entry(fd, name, f"{where}/{name}")

    def entry(self, dfd: int, name: str, path: str) -> os.stat_result | None:
        """The file or link `name` of the folder `dfd`, as `path`; anything else left out.
        Answers the status of what it stored (None: nothing)."""
        try:
            src = os.open(name, SRC_FLAGS, dir_fd=dfd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return self.link(dfd, name, path)
            if exc.errno not in (errno.ENXIO, errno.ENOENT, errno.EACCES):
                raise  # ENXIO: a socket; the others: gone or unreadable, left out
            return None
        try:
            st = os.fstat(src)
            if not stat.S_ISREG(st.st_mode):  # FIFOs, devices and folders swapped in: left out
                return None
            self.header(path, st, tarfile.REGTYPE, st.st_size)
            self.data(src, st.st_size)
            return st
        finally:
            os.close(src)

    def data(self, fd: int, size: int) -> None:
        """Exactly `size` bytes of `fd`: a file that shrank meanwhile is padded with zeros,
        one that grew is cut."""
        left = size
        while left:
            self.check()
            chunk = os.read(fd, min(left, _READ_SIZE))
            if not chunk:
                chunk = bytes(min(left, _READ_SIZE))
            self.out.write(chunk)
            left -= len(chunk)
        if size % _BLOCK:
            self.out.write(bytes(_BLOCK - size % _BLOCK))

    def link(self, dfd: int, name: str, path: str) -> os.stat_result | None:
        """The symlink `name` of the folder `dfd`, as `path` (left out if no longer a link)."""
        try:
            target = os.readlink(name, dir_fd=dfd)
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except OSError:
            return None
        if not stat.S_ISLNK(st.st_mode):
            return None
        self.header(path, st, tarfile.SYMTYPE, link=target)
        return st


def user_name(uid: int) -> str:
    """The name of the user `uid` (empty when it has none)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return ""


def group_name(gid: int) -> str:
    """The name of the group `gid` (empty when it has none)."""
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return ""
