"""A read-only cgroup mount made writable for this process alone (`writable_clones`).

Interpreter layer (mount system calls, `/proc/self/mountinfo`). A container engine mounts the
container's cgroup hierarchies read-only; with CAP_SYS_ADMIN (`--cap-add SYS_ADMIN`) ssegrade
clones each such mount (`open_tree`), detached from every mount namespace, and clears the
read-only flag on the clone only (`mount_setattr`). The clone is reached through its
descriptor (`/proc/self/fd/N`, kept open for the life of the process, close-on-exec): nothing
is mounted anywhere, the container's own mount stays read-only, and the clone goes with the
process. A child forked to run a script still holds the descriptor when it joins its cgroup.
"""

from __future__ import annotations

import ctypes
import os
import struct
import threading

from interpreters.real.files.mounts import clone_tree, set_attr

__all__ = ["read_only_cgroup_mounts", "writable_clones"]

_MOUNT_ATTR_RDONLY = 1
_held: dict[tuple[int, str], str] = {}
_lock = threading.Lock()


def read_only_cgroup_mounts() -> list[str]:
    """The mount points of the cgroup hierarchies mounted read-only here."""
    try:
        with open("/proc/self/mountinfo", "rb") as mountinfo:
            lines = mountinfo.read().decode(errors="replace").splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        cgroup = len(fields) >= 6 and tail[:1] in (["cgroup"], ["cgroup2"])
        if cgroup and "ro" in fields[5].split(","):
            found.append(fields[4])
    return found


def writable_clones(points: list[str]) -> tuple[dict[str, str], str | None]:
    """For each mount point of `points`, the path of a writable clone of it private to this
    process (made once per process and point); or, when the kernel refuses one, the clones
    made so far and why (one line)."""
    clones: dict[str, str] = {}
    with _lock:
        for point in points:
            key = (os.getpid(), point)
            if key not in _held:
                try:
                    tree = clone_tree(os.fsencode(point))
                except OSError as exc:
                    return clones, f"cannot clone the mount {point}: {exc.strerror}"
                try:
                    set_attr(tree, _writable())
                except OSError as exc:
                    os.close(tree)
                    return clones, f"cannot make a clone of {point} writable: {exc.strerror}"
                _held[key] = f"/proc/self/fd/{tree}"
            clones[point] = _held[key]
    return clones, None


def _writable() -> ctypes.Array[ctypes.c_char]:
    """The `mount_attr` that clears the read-only flag."""
    packed = struct.pack("=QQQQ", 0, _MOUNT_ATTR_RDONLY, 0, 0)
    return ctypes.create_string_buffer(packed, len(packed))
