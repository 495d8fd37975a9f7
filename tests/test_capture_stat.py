"""The capture that trusts stat data (`interpreters.real.git.kept_index`) on real trees.

A capture starts from the baseline's kept index and hashes only the files whose stat data
changed. These tests play an agent that edits a real tree with stat tricks (content changed
with size and mtime restored, a file of the same size and mtime swapped in from elsewhere,
edits in the same second as the baseline) and check the fast capture byte for byte against
a full rehash, and the tree it rebuilds against the agent's.

The trees are made ahead and aged: a file changed within a second of the baseline keeps no
stat data, so only trees older than that show the stat data being trusted.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interpreters.real import git
from interpreters.real.git.kept_index import read_entries
from tests.test_capture import (
    Entry,
    capture_ok,
    make_repo,
    rebuild,
    record,
    run,
    snapshot,
)

pytestmark = pytest.mark.slow

PAIRS = (("src/pair_a.c", "src/pair_b.c"), ("data/blob.bin", "data/twin.bin"))
"""Files of the same size and mtime: each can be swapped in for the other."""

TREE: dict[str, Entry] = {
    "README.md": ("file", b"# project\n\nSome words.\n", False),
    ".gitignore": ("file", b"*.log\nbuild/\n", False),
    "src/main.c": ("file", b"int main(void) { return run(); }\n", False),
    "src/util.c": ("file", b"int run(void) { return 0; }\n", False),
    "src/util.h": ("file", b"int run(void);\n", False),
    "src/pair_a.c": ("file", b"int a(void) { return 1; }\n", False),
    "src/pair_b.c": ("file", b"int b(void) { return 2; }\n", False),
    "lib/x/deep.py": ("file", b"def deep():\n    return 1\n", False),
    "lib/x/deeper/more.py": ("file", b"X = [1, 2, 3]\n", False),
    "data/blob.bin": ("file", bytes(range(256)) * 12, False),
    "data/twin.bin": ("file", bytes(range(255, -1, -1)) * 12, False),
    "run.sh": ("file", b"#!/bin/sh\nexec ./main\n", True),
    "link": ("link", b"README.md", False),
    "docs/a.md": ("file", b"alpha\n", False),
    "docs/b.md": ("file", b"bravo\n", False),
}
FILES = tuple(name for name, (kind, _, _) in TREE.items() if kind == "file")
TARGETS = tuple(name for name in FILES if name != ".gitignore")
"""What the agent edits: `.gitignore` stays, so that the tree's ignored paths stay known."""
NEW = ("src/new.c", "fresh/tree/file.txt", "docs/c.md", "notes.log")
OLD_MTIME = 1_600_000_000
"""The mtime both files of each pair get: old, and the same."""


def ignored(rel: str) -> bool:
    """Paths the patch leaves out: ignored, refused by git, or in a nested repository."""
    return rel.endswith(".log") or rel.partition("/")[0] in ("build", ".GIT", "vendored")


def make_tree(root: Path) -> Path:
    source = make_repo(root, TREE)
    for pair in PAIRS:
        for name in pair:
            os.utime(source / name, (OLD_MTIME, OLD_MTIME))
    return source


def newest_ctime(root: Path) -> float:
    return max(os.lstat(os.path.join(p, n)).st_ctime for p, ds, fs in os.walk(root) for n in fs)


def age(roots: list[Path]) -> None:
    """Wait until every file under `roots` is older than what a baseline recorded now trusts."""
    newest = max(newest_ctime(root) for root in roots)
    while int(time.time()) - 1 <= int(newest):
        time.sleep(int(newest) + 2 - time.time())


@dataclass
class Pool:
    """Trees made and aged ahead, one per example; another is made (and aged) when none is
    left."""

    folder: Path
    ready: list[Path] = field(default_factory=list)
    made: int = 0

    def fill(self, count: int) -> None:
        for _ in range(count):
            self.made += 1
            self.ready.append(make_tree(self.folder / f"tree{self.made}" / "src"))
        age(self.ready)

    def take(self) -> Path:
        if not self.ready:
            self.fill(1)
        return self.ready.pop()


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Pool:
    made = Pool(tmp_path_factory.mktemp("aged"))
    made.fill(EXAMPLES + 3)
    return made


EXAMPLES = 25


# ---------------------------------------------------------------------------- the agent's edits


def restore_times(path: Path, seen: os.stat_result) -> None:
    os.utime(path, ns=(seen.st_atime_ns, seen.st_mtime_ns), follow_symlinks=False)


def same_size(data: bytes, size: int) -> bytes:
    """Other bytes of exactly `size` bytes."""
    return (data * (size // max(len(data), 1) + 1))[:size] if data else b"\xff" * size


def edit(source: Path, outside: Path, op: str, name: str, data: bytes) -> None:
    """One edit of the agent; `outside` is a folder beside the tree, on the same file system."""
    path = source / name
    if op in ("refused_name", "nested_repo"):  # left out of the patch, and listed as such
        folder = source / (".GIT" if op == "refused_name" else "vendored")
        folder.mkdir(exist_ok=True)
        (folder / "config").write_bytes(data)
        if op == "nested_repo":
            run(folder, "init", "-q")
        return
    if not path.is_file() or path.is_symlink():
        if op == "create" and not path.exists() and not path.parent.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return
    seen = os.lstat(path)
    old = path.read_bytes()
    if op == "content_keep_stat":  # size and mtime restored
        new = same_size(data + b"!", len(old))
        if new == old:
            new = bytes(b ^ 1 for b in old)
        path.write_bytes(new)
        restore_times(path, seen)
    elif op == "truncate_keep_stat":
        with open(path, "wb") as out:
            out.flush()
            out.write(bytes(b ^ 0x20 for b in old))
        restore_times(path, seen)
    elif op == "swap_outside":  # same size and mtime, from elsewhere, renamed in
        stranger = outside / f"swap-{time.monotonic_ns()}"
        stranger.write_bytes(same_size(data + b"?", len(old)))
        os.chmod(stranger, seen.st_mode & 0o777)
        restore_times(stranger, seen)
        os.rename(stranger, path)
    elif op == "swap_twin":
        twin = next((b if a == name else a for a, b in PAIRS if name in (a, b)), None)
        if twin is not None and (source / twin).is_file():
            os.rename(source / twin, path)
    elif op == "hardlink_twin":
        twin = next((b if a == name else a for a, b in PAIRS if name in (a, b)), None)
        if twin is not None and (source / twin).is_file():
            linked = outside / f"linked-{time.monotonic_ns()}"
            os.link(source / twin, linked)
            os.rename(linked, path)
    elif op == "rewrite_same":
        path.write_bytes(old)
    elif op == "touch":
        os.utime(path)
    elif op == "chmod":
        path.chmod(seen.st_mode ^ 0o111)
    elif op == "chmod_keep_mtime":
        path.chmod(seen.st_mode ^ 0o100)
        restore_times(path, seen)
    elif op == "delete":
        path.unlink()
    elif op == "to_link":
        path.unlink()
        path.symlink_to("README.md")
    elif op == "to_fifo":
        path.unlink()
        os.mkfifo(path)
    elif op == "append":
        with open(path, "ab") as out:
            out.write(data or b"\n")


AFTER = (
    "content_keep_stat",
    "truncate_keep_stat",
    "swap_outside",
    "swap_twin",
    "hardlink_twin",
    "rewrite_same",
    "touch",
    "chmod",
    "chmod_keep_mtime",
    "delete",
    "to_link",
    "to_fifo",
    "append",
    "create",
    "refused_name",
    "nested_repo",
)
BEFORE = ("content_keep_stat", "touch", "rewrite_same", "swap_outside", "append")
edits = st.lists(
    st.tuples(st.sampled_from(AFTER), st.sampled_from(TARGETS + NEW), st.binary(max_size=24)),
    max_size=6,
)
early = st.lists(
    st.tuples(st.sampled_from(BEFORE), st.sampled_from(TARGETS), st.binary(max_size=8)),
    max_size=3,
)


def kept_stat(baseline: git.Baseline) -> dict[str, bool]:
    """Each path of the kept index: whether it keeps stat data."""
    assert baseline.index is not None
    data = baseline.index.read_bytes()
    return {os.fsdecode(e.path): e.ctime != 0 for e in read_entries(data, len(baseline.base_tree))}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=early, after=edits)
def test_the_fast_capture_equals_a_full_rehash(
    pool: Pool, before: list[tuple[str, str, bytes]], after: list[tuple[str, str, bytes]]
) -> None:
    source = pool.take()
    with tempfile.TemporaryDirectory(dir=source.parent) as folder:
        outside = Path(folder)
        for op, name, data in before:  # in the second the baseline is recorded
            edit(source, outside, op, name, data)
        baseline = record(source, outside / "baseline")
        touched = {name for _, name, _ in before}
        assert all(kept for name, kept in kept_stat(baseline).items() if name not in touched)
        for op, name, data in after:
            edit(source, outside, op, name, data)

        fast = capture_ok(source, baseline)
        full = git.capture(source, baseline, rehash=True).unwrap()

        assert fast == full
        assert snapshot(rebuild(baseline, fast, outside / "repo")) == snapshot(source, ignored)


# ---------------------------------------------------------------------------- each trick alone


@pytest.mark.parametrize(
    "op",
    ["content_keep_stat", "truncate_keep_stat", "swap_outside", "swap_twin", "chmod_keep_mtime"],
)
def test_a_stat_trick_after_the_baseline_is_captured(pool: Pool, op: str) -> None:
    source = pool.take()
    with tempfile.TemporaryDirectory(dir=source.parent) as folder:
        outside = Path(folder)
        baseline = record(source, outside / "baseline")
        name = PAIRS[1][0]
        before = os.lstat(source / name)
        edit(source, outside, op, name, b"agent")
        after = os.lstat(source / name)
        # Only what the kernel sets tells the edit: the size and mtime are as recorded.
        assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)

        captured = capture_ok(source, baseline)

        assert f"b/{name}".encode() in captured.patch
        assert captured == git.capture(source, baseline, rehash=True).unwrap()


def test_an_edit_in_the_second_of_the_baseline_with_its_stat_restored_is_captured(
    pool: Pool,
) -> None:
    source = pool.take()
    with tempfile.TemporaryDirectory(dir=source.parent) as folder:
        outside = Path(folder)
        name = "src/util.c"
        edit(source, outside, "content_keep_stat", name, b"first")
        baseline = record(source, outside / "baseline")
        # Changed just before the baseline: its stat data are not trusted, whatever second the
        # next edit falls in.
        assert kept_stat(baseline)[name] is False
        assert kept_stat(baseline)["src/main.c"] is True
        edit(source, outside, "content_keep_stat", name, b"second")

        captured = capture_ok(source, baseline)

        assert b"second" in captured.patch
        assert captured == git.capture(source, baseline, rehash=True).unwrap()
