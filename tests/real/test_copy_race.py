"""`fresh_copy` against a tree that changes under it: a folder swapped for a symlink in a loop.

The daemon copies the agent's live tree as root while the agent runs. An agent that swaps one
of its folders with a symlink to a folder it cannot read (`renameat2(RENAME_EXCHANGE)`, atomic,
as fast as it can) must never get a file of that folder into a copy.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest

from interpreters.real.files import fresh_copy, remove_tree

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_SYS_RENAMEAT2 = {"x86_64": 316, "aarch64": 276}
_SECRET = b"root-only secret 7d1c0f"
_COPIES = 400
_SECONDS = 20.0


def _exchanger() -> Callable[..., int] | None:
    """A function `(a, b) -> int` calling renameat2(RENAME_EXCHANGE), or None when the
    system has none."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if hasattr(libc, "renameat2"):
        call = libc.renameat2
        call.argtypes = [
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_uint,
        ]
        call.restype = ctypes.c_int
        return cast(Callable[..., int], call)
    number = _SYS_RENAMEAT2.get(platform.machine())
    if number is None:
        return None
    syscall = libc.syscall
    syscall.restype = ctypes.c_long

    def via_syscall(*args: object) -> int:
        return int(syscall(ctypes.c_long(number), *args))

    return via_syscall


def _holds_secret(copy: Path) -> bool:
    """Whether any regular file of `copy` (no symlink followed) holds the secret."""
    for folder, _dirs, files in os.walk(copy):
        for name in files:
            path = Path(folder, name)
            if path.is_symlink() or not path.is_file():
                continue
            if _SECRET in path.read_bytes():
                return True
    return False


def test_a_folder_swapped_for_a_symlink_never_leaks_what_the_link_points_at(
    tmp_path: Path,
) -> None:
    exchange = _exchanger()
    if exchange is None:
        pytest.skip("no renameat2 on this system")
    vault = tmp_path / "vault"  # what only root may read
    (vault / "inner").mkdir(mode=0o700, parents=True)
    vault.chmod(0o700)
    (vault / "secret").write_bytes(_SECRET)
    (vault / "inner" / "secret").write_bytes(_SECRET)
    for secret in (vault / "secret", vault / "inner" / "secret"):
        secret.chmod(0o600)
    # The same names inside the tree: a copy that looks a path up twice mixes the two.
    tree = tmp_path / "tree"
    (tree / "src" / "inner").mkdir(parents=True)
    for folder in (tree / "src", tree / "src" / "inner"):
        for index in range(10):
            (folder / f"f{index}.c").write_text(f"int f{index};\n")
        (folder / "secret").write_text("an ordinary file of the tree\n")
    (tree / "alias").symlink_to(vault)
    a, b = bytes(tree / "src"), bytes(tree / "alias")

    stop = threading.Event()
    swaps = [0]

    def swapper() -> None:
        while not stop.is_set():
            if exchange(_AT_FDCWD, a, _AT_FDCWD, b, _RENAME_EXCHANGE) != 0:
                err = ctypes.get_errno()
                raise OSError(err, os.strerror(err))
            swaps[0] += 1

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    leaked, copies, seen_as_link, seen_as_folder = 0, 0, 0, 0
    deadline = time.monotonic() + _SECONDS
    try:
        while copies < _COPIES and time.monotonic() < deadline:
            dest = tmp_path / f"copy{copies}"
            fresh_copy(tree, dest, None)
            copies += 1
            leaked += _holds_secret(dest)
            seen_as_link += (dest / "src").is_symlink()
            seen_as_folder += (dest / "src").is_dir() and not (dest / "src").is_symlink()
            remove_tree(dest)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert thread.is_alive() is False
    assert swaps[0] > copies  # the swapper really raced every copy
    assert seen_as_link  # copies saw both states of the tree
    assert seen_as_folder
    assert copies >= 50
    assert leaked == 0, f"{leaked} of {copies} copies hold the secret"
