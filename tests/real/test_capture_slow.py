"""The capture when the tree's stat data cannot be trusted: every file's ctime changed after the
baseline (`chmod -R`, `chown -R`, a restore), on real trees.

Every file then has to be hashed, and is: an edit that keeps the size and mtime of the file it
changes is captured among thousands of files whose only change is their ctime. What such a
capture must not do is store a blob of each of those files (the reader cannot see the base's
objects, so `git add` alone writes every file it hashes): only the blobs that changed are
written. The trees are aged first, so that the baseline trusts their stat data.
"""

from __future__ import annotations

import os
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from interpreters.real import git
from interpreters.real.git.command import scratch
from interpreters.real.git.layout import lay_out, reader_of
from interpreters.real.git.staging import stage
from tests.support.gittrees import (
    FILES,
    TREE,
    Entry,
    Pool,
    age,
    capture_ok,
    chmod_all,
    edit,
    every_file,
    make_repo,
    rebuild,
    record,
    snapshot,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Pool:
    made = Pool(tmp_path_factory.mktemp("aged"))
    made.fill(8)
    return made


def retime_all(source: Path) -> None:
    """A restore that sets every file's times back as they were: only the ctime moves."""
    for path in every_file(source):
        seen = os.lstat(path)
        os.utime(path, ns=(seen.st_atime_ns, seen.st_mtime_ns), follow_symlinks=False)


def chown_all(source: Path) -> None:
    """`chown -R` to the same owner: only the ctime moves."""
    for path in every_file(source):
        seen = os.lstat(path)
        os.chown(path, seen.st_uid, seen.st_gid, follow_symlinks=False)


UNTRUSTED: dict[str, Callable[[Path], None]] = {
    "chmod": chmod_all,
    "restore": retime_all,
    "chown": chown_all,
}


def stored_blobs(source: Path, baseline: git.Baseline) -> int:
    """How many blobs a staging of `source` from the kept index writes."""
    with scratch(reader_of(source)) as s:
        repo = s.top / "repo"
        lay_out(repo)
        stage(
            s,
            source,
            baseline.base_tree,
            repo=repo,
            alternates=baseline.objects,
            start=baseline.index,
        )
        stored = [Path(p, name) for p, _, names in os.walk(s.work / "objects") for name in names]
        return sum(zlib.decompress(path.read_bytes()).startswith(b"blob ") for path in stored)


@pytest.mark.parametrize("how", sorted(UNTRUSTED))
def test_an_edit_that_keeps_size_and_mtime_among_untrusted_stat_data_is_captured(
    pool: Pool, how: str
) -> None:
    source = pool.take()
    with tempfile.TemporaryDirectory(dir=source.parent) as folder:
        outside = Path(folder)
        baseline = record(source, outside / "baseline")
        name = "src/util.c"
        before = os.lstat(source / name)
        edit(source, outside, "content_keep_stat", name, b"agent")
        UNTRUSTED[how](source)
        after = os.lstat(source / name)
        assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
        assert after.st_ctime_ns != before.st_ctime_ns

        captured = capture_ok(source, baseline)

        assert captured.patch.count(b"diff --git") == 1
        assert f"b/{name}".encode() in captured.patch
        assert captured == git.capture(source, baseline, rehash=True).unwrap()
        rebuilt = rebuild(baseline, captured, outside / "repo")
        assert snapshot(rebuilt) == snapshot(source, lambda rel: rel.endswith(".log"))


@pytest.mark.parametrize("op", ["content_keep_stat", "swap_outside", "truncate_keep_stat"])
def test_every_stat_trick_is_captured_after_a_chmod_of_the_whole_tree(pool: Pool, op: str) -> None:
    source = pool.take()
    with tempfile.TemporaryDirectory(dir=source.parent) as folder:
        outside = Path(folder)
        baseline = record(source, outside / "baseline")
        chmod_all(source)
        for name in FILES:
            if name != ".gitignore":
                edit(source, outside, op, name, b"agent")

        captured = capture_ok(source, baseline)

        assert captured.patch.count(b"diff --git") == len(FILES) - 1
        assert captured == git.capture(source, baseline, rehash=True).unwrap()


def test_after_a_chmod_of_the_whole_tree_only_the_changed_blobs_are_stored(
    tmp_path: Path,
) -> None:
    many: dict[str, Entry] = {
        f"many/f{number}.txt": ("file", f"file {number}\n".encode() * (number % 7 + 1), False)
        for number in range(300)
    }
    source = make_repo(tmp_path / "tree" / "src", {**TREE, **many})
    age([source])
    baseline = record(source, tmp_path / "baseline")
    chmod_all(source)
    edit(source, tmp_path, "content_keep_stat", "many/f7.txt", b"agent")
    (source / "new.txt").write_bytes(b"a new file\n")

    # Two blobs: the edited file and the new one; none of the 300-odd files only chmodded.
    assert stored_blobs(source, baseline) == 2
