"""A node's lock files (`interpreters.engine.lockfile`): removed by their last holder, and
still one holder at a time while they come and go. Real files, real processes.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from interpreters.engine.lockfile import held

COUNTER = """
import sys
from pathlib import Path
from interpreters.engine.lockfile import held
lock, counter = Path(sys.argv[1]), Path(sys.argv[2])
for _ in range(int(sys.argv[3])):
    with held(lock):
        value = int(counter.read_text() or "0")
        counter.write_text(str(value + 1))
"""


def test_the_holder_removes_the_file_unless_told_to_keep_it(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    with held(path) as lock:
        assert path.is_file()
        assert path.stat().st_mode & 0o777 == 0o600
        os.write(lock.fd, b"gone with it")
    assert not path.exists()
    with held(path) as lock:
        os.write(lock.fd, b"kept")
        lock.remove = False
    assert path.read_bytes() == b"kept"
    with held(path) as lock:
        assert os.pread(lock.fd, 16, 0) == b"kept"


def test_a_link_at_the_path_is_refused_and_left(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"theirs")
    path = tmp_path / "x.lock"
    path.symlink_to(target)
    with pytest.raises(OSError, match="symbolic link") as refused, held(path):
        pass
    assert refused.value.errno == errno.ELOOP
    assert path.is_symlink()
    assert target.read_bytes() == b"theirs"


@pytest.mark.slow
def test_holders_never_overlap_while_the_file_comes_and_goes(tmp_path: Path) -> None:
    # Each holder removes the file; a process that opened it just before locks a file no
    # longer there, and must open the path again rather than hold the lock beside the next.
    lock, counter = tmp_path / "x.lock", tmp_path / "counter"
    counter.write_text("0")
    procs, rounds = 6, 150
    running = [
        subprocess.Popen([sys.executable, "-c", COUNTER, str(lock), str(counter), str(rounds)])
        for _ in range(procs)
    ]
    assert [proc.wait(timeout=300) for proc in running] == [0] * procs
    assert int(counter.read_text()) == procs * rounds  # no update lost to two holders
    assert not lock.exists()
