"""The baseline's kept index (`interpreters.real.git.kept_index`): what a capture reads, and
the index format.

A capture from the kept index opens only the files that changed (seen with inotify); without
one, every file. The index entries are read as git lists them.
"""

from __future__ import annotations

import ctypes
import os
import struct
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from interpreters.real import git
from interpreters.real.git.index_file import read_entries
from tests.support.gittrees import (
    FILES,
    TREE,
    Pool,
    agent_env,
    capture_ok,
    edit,
    make_repo,
    record,
    run,
)
from tests.support.realtask import ssegrade

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Pool:
    made = Pool(tmp_path_factory.mktemp("aged"))
    made.fill(3)
    return made


IN_OPEN = 0x20
IN_ISDIR = 0x40000000
_EVENT = struct.Struct("iIII")


@dataclass
class Opens:
    """The files opened under a tree, as inotify reports them (`.git` left out)."""

    root: Path
    fd: int = -1
    folders: dict[int, str] = field(default_factory=dict)

    def __enter__(self) -> Opens:
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self.fd >= 0, os.strerror(ctypes.get_errno())
        for parent, dirs, _files in os.walk(self.root):
            dirs[:] = [d for d in dirs if d != ".git"]
            rel = os.path.relpath(parent, self.root)
            watch = libc.inotify_add_watch(self.fd, os.fsencode(parent), IN_OPEN)
            assert watch >= 0, os.strerror(ctypes.get_errno())
            self.folders[watch] = "" if rel == "." else rel + "/"
        return self

    def __exit__(self, *_: object) -> None:
        os.close(self.fd)

    def files(self) -> set[str]:
        """The files opened since the last call (events are queued when the open happens)."""
        opened: set[str] = set()
        data = b""
        while True:
            try:
                data += os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
        offset = 0
        while offset < len(data):
            watch, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0")
            offset += _EVENT.size + length
            if name and not mask & IN_ISDIR:
                opened.add(self.folders[watch] + os.fsdecode(name))
        return opened


def test_the_capture_reads_only_the_files_that_changed(pool: Pool) -> None:
    source = pool.take()
    with tempfile.TemporaryDirectory(dir=source.parent) as folder:
        outside = Path(folder)
        baseline = record(source, outside / "baseline")
        (source / "src" / "util.c").write_bytes(b"int run(void) { return 1; }\n")
        (source / "docs" / "new.md").write_bytes(b"new\n")

        with Opens(source) as opens:
            fast = capture_ok(source, baseline)
            read_fast = opens.files() - {".gitignore"}
            full = git.capture(source, baseline, rehash=True).unwrap()
            read_full = opens.files()

        assert fast == full
        assert read_fast == {"src/util.c", "docs/new.md"}
        assert read_full >= set(FILES)


# ---------------------------------------------------------------------------- the index format


def test_index_entries_are_read_as_git_lists_them(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "src", TREE)
    long = "/".join(["d" * 200] * 21) + "/tail.txt"  # longer than the 12 bits of a length
    oid = run(source, "rev-parse", "HEAD:README.md").strip()
    info = f"100644 {oid}\t{long}\0".encode()
    subprocess.run(
        ["git", "update-index", "-z", "--index-info"],
        cwd=source,
        env=agent_env(source),
        input=info,
        check=True,
    )
    run(source, "update-index", "--skip-worktree", "README.md")  # an extended flag: format 3
    listed = run(source, "ls-files", "-s", "-z").split("\0")[:-1]
    data = (source / ".git" / "index").read_bytes()
    assert data[4:8] == b"\0\0\0\3"

    entries = list(read_entries(data, 40))

    assert [f"{e.mode:o} {e.oid} 0\t{os.fsdecode(e.path)}" for e in entries] == listed
    assert long in {os.fsdecode(e.path) for e in entries}
    with pytest.raises(ValueError, match="not a git index"):
        list(read_entries(b"nope", 40))


def test_a_baseline_without_a_kept_index_hashes_every_file(pool: Pool) -> None:
    source = pool.take()
    with tempfile.TemporaryDirectory(dir=source.parent) as folder:
        outside = Path(folder)
        baseline = record(source, outside / "baseline")
        assert baseline.index is not None
        mode = os.stat(baseline.index).st_mode
        assert mode & 0o777 == 0o444  # read-only material in the root-only baseline folder
        edit(source, outside, "content_keep_stat", "src/util.c", b"agent")
        fast = capture_ok(source, baseline)
        baseline.index.unlink()  # as a baseline recorded before indexes were kept

        assert git.load_baseline(baseline.path).unwrap().index is None
        with Opens(source) as opens:
            assert capture_ok(source, baseline) == fast
            assert opens.files() >= set(FILES)


def test_the_kept_stat_data_are_the_source_trees_not_its_copys(pool: Pool) -> None:
    source = pool.take()
    with tempfile.TemporaryDirectory(dir=source.parent) as folder:
        into = Path(folder) / "baseline"
        done = ssegrade("baseline", "--source", str(source), "--into", str(into))
        assert done.returncode == 0, done.stderr
        baseline = git.load_baseline(into).unwrap()
        assert baseline.index is not None
        assert baseline.repo_copy is not None
        entries = read_entries(baseline.index.read_bytes(), len(baseline.base_tree))
        kept = {os.fsdecode(e.path): (e.ino, e.ctime) for e in entries}

        def seen(root: Path) -> dict[str, tuple[int, int]]:
            stats = {name: os.lstat(root / name) for name in kept}
            return {n: (s.st_ino & 0xFFFFFFFF, int(s.st_ctime)) for n, s in stats.items()}

        assert kept == seen(source)
        assert not set(kept.items()) & set(seen(baseline.repo_copy).items())
