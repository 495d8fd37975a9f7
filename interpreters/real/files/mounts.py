"""The mount system calls a copy-on-write view needs, callable in a child between fork and exec.

Interpreter side (Linux system calls through ctypes; x86-64 and arm64 numbers). Every function
here only calls the kernel with data prepared beforehand (bytes, a packed `mount_attr`), so a
child forked from a threaded process may call them before it runs anything else: nothing waits
on a lock another thread held at the fork. A refusal raises `OSError` with the kernel's errno.
"""

from __future__ import annotations

import ctypes
import os
import struct

__all__ = [
    "MS_NODEV",
    "MS_NOSUID",
    "attach",
    "clone_tree",
    "idmap_attr",
    "mount",
    "move_detached",
    "private_namespace",
    "read_only_attr",
    "set_attr",
    "unmount_detached",
]

MS_NOSUID, MS_NODEV = 2, 4
_MS_REC, _MS_PRIVATE = 16384, 1 << 18
_MNT_DETACH = 2
_CLONE_NEWNS = 0x00020000
_AT_FDCWD, _AT_EMPTY_PATH, _AT_RECURSIVE = -100, 0x1000, 0x8000
_OPEN_TREE_CLONE, _OPEN_TREE_CLOEXEC = 1, os.O_CLOEXEC
_MOVE_MOUNT_F_EMPTY_PATH = 4
_MOUNT_ATTR_RDONLY, _MOUNT_ATTR_NOSUID, _MOUNT_ATTR_NODEV = 1, 2, 4
_MOUNT_ATTR_IDMAP = 0x00100000
# open_tree, move_mount, mount_setattr: the same numbers on x86-64 and arm64 (the new mount
# API was numbered alike on every architecture).
_SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_MOUNT_SETATTR = 428, 429, 442

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_mount = _libc.mount
_mount.argtypes = [
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_ulong,
    ctypes.c_char_p,
]
_umount2 = _libc.umount2
_umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_unshare = _libc.unshare
_unshare.argtypes = [ctypes.c_int]


def _check(status: int) -> int:
    if status < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return status


def private_namespace() -> None:
    """Enter a mount namespace of our own where no mount event reaches the host's."""
    _check(_unshare(_CLONE_NEWNS))
    _check(_mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None))


def mount(source: bytes, target: bytes, fstype: bytes, flags: int, data: bytes) -> None:
    """mount(2)."""
    _check(_mount(source, target, fstype, flags, data))


def idmap_attr(userns: int) -> ctypes.Array[ctypes.c_char]:
    """The `mount_attr` that makes a mount read-only, nosuid, nodev and idmapped by the user
    namespace open at `userns`."""
    flags = _MOUNT_ATTR_IDMAP | _MOUNT_ATTR_RDONLY | _MOUNT_ATTR_NOSUID | _MOUNT_ATTR_NODEV
    packed = struct.pack("=QQQQ", flags, 0, 0, userns)
    return ctypes.create_string_buffer(packed, len(packed))


def move_detached(source: bytes, attr: ctypes.Array[ctypes.c_char], target: bytes) -> None:
    """Mount a clone of the folder `source` at `target` with the attributes `attr` (see
    `idmap_attr`), in this mount namespace."""
    tree = _check(
        _syscall(
            ctypes.c_long(_SYS_OPEN_TREE),
            ctypes.c_int(_AT_FDCWD),
            ctypes.c_char_p(source),
            ctypes.c_uint(_OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC),
        )
    )
    try:
        _check(
            _syscall(
                ctypes.c_long(_SYS_MOUNT_SETATTR),
                ctypes.c_int(tree),
                ctypes.c_char_p(b""),
                ctypes.c_uint(_AT_EMPTY_PATH),
                attr,
                ctypes.c_size_t(len(attr)),
            )
        )
        _check(
            _syscall(
                ctypes.c_long(_SYS_MOVE_MOUNT),
                ctypes.c_int(tree),
                ctypes.c_char_p(b""),
                ctypes.c_int(_AT_FDCWD),
                ctypes.c_char_p(target),
                ctypes.c_uint(_MOVE_MOUNT_F_EMPTY_PATH),
            )
        )
    finally:
        os.close(tree)


def read_only_attr() -> ctypes.Array[ctypes.c_char]:
    """The `mount_attr` that makes a mount read-only (see `set_attr`)."""
    packed = struct.pack("=QQQQ", _MOUNT_ATTR_RDONLY, 0, 0, 0)
    return ctypes.create_string_buffer(packed, len(packed))


def set_attr(where: int | bytes, attr: ctypes.Array[ctypes.c_char]) -> None:
    """Apply `attr` to the mount at the path `where`, or to the detached tree open at the
    descriptor `where`, and to every mount beneath it."""
    path, dirfd, flags = (
        (b"", where, _AT_EMPTY_PATH) if isinstance(where, int) else (where, _AT_FDCWD, 0)
    )
    _check(
        _syscall(
            ctypes.c_long(_SYS_MOUNT_SETATTR),
            ctypes.c_int(dirfd),
            ctypes.c_char_p(path),
            ctypes.c_uint(flags | _AT_RECURSIVE),
            attr,
            ctypes.c_size_t(len(attr)),
        )
    )


def clone_tree(source: bytes) -> int:
    """A detached copy of the mount tree at the folder `source` (its mounts beneath it too),
    open at the descriptor returned (close-on-exec): later changes to this namespace's mounts
    do not reach it."""
    return _check(
        _syscall(
            ctypes.c_long(_SYS_OPEN_TREE),
            ctypes.c_int(_AT_FDCWD),
            ctypes.c_char_p(source),
            ctypes.c_uint(_OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC | _AT_RECURSIVE),
        )
    )


def attach(tree: int, target: bytes) -> None:
    """Mount the detached tree open at `tree` (see `clone_tree`) at `target`."""
    _check(
        _syscall(
            ctypes.c_long(_SYS_MOVE_MOUNT),
            ctypes.c_int(tree),
            ctypes.c_char_p(b""),
            ctypes.c_int(_AT_FDCWD),
            ctypes.c_char_p(target),
            ctypes.c_uint(_MOVE_MOUNT_F_EMPTY_PATH),
        )
    )


def unmount_detached(target: bytes) -> None:
    """Detach the mount at `target` (what still uses it keeps it)."""
    _check(_umount2(target, _MNT_DETACH))
