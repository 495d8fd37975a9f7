"""Copying the data of one open file to another in the kernel, in the best way it allows.

Interpreter side (files). `copy_file_range` (which also reflinks on filesystems that can), then
`sendfile`, then read/write: a way the kernel refuses is given up once for the whole process.
"""

from __future__ import annotations

import errno
import os

from interpreters.real.files.descriptors import CHUNK

# How file data is copied, degraded once for the whole process when the kernel refuses.
_data_copy = {"copy_file_range": hasattr(os, "copy_file_range"), "sendfile": True}
_FALLBACK_ERRNOS = {errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL, errno.EBADF}


def copy_data(src: int, dst: int, size: int, ways: dict[str, bool] = _data_copy) -> None:
    """Copy the `size` bytes of `src` to `dst` in the best way `ways` still allows."""
    # Each way below continues from the file offsets the previous one left (all of them move
    # both offsets), so a fallback half-way copies the rest, not the whole file again.
    done = 0
    if ways["copy_file_range"]:
        try:
            while True:
                n = os.copy_file_range(src, dst, max(CHUNK, size - done))
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
            while os.sendfile(dst, src, None, CHUNK):
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
