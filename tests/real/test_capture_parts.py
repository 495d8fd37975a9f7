"""The private index of a capture, written here (`interpreters.real.git.index_file`), and its
refresh when every file is to be hashed (`interpreters.real.git.refresh`).

On real trees: after a `chmod -R` of a large tree, every file is hashed (by `hashing`, not
git's refresh), an edit that keeps size and mtime is captured in the first entry as in the
last, and the capture equals a full rehash. The scratch folder's index is where the tree's
owner writes: a symlink planted there is replaced, never written through.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from interpreters.real import git
from interpreters.real.git import refresh
from interpreters.real.git.command import Scratch, scratch
from interpreters.real.git.index_file import (
    Entry,
    entry_offsets,
    index_bytes,
    new_entry,
    read_index,
)
from interpreters.real.git.layout import lay_out, reader_of
from interpreters.real.git.staging import stage
from tests.support.gittrees import TREE, age, capture_ok, chmod_all, edit, make_repo, record, run

pytestmark = pytest.mark.slow

OID = "0" * 39 + "1"


def _entries(sizes: Sequence[int]) -> list[Entry]:
    made = []
    for number, size in enumerate(sizes):
        entry = new_entry(0o100644, OID, f"f{number:06d}".encode())
        raw = entry.raw[:36] + size.to_bytes(4, "big") + entry.raw[40:]
        made.append(entry._replace(raw=raw, size=size))
    return made


def test_an_index_written_here_is_read_by_git_as_written(tmp_path: Path) -> None:
    entries = _entries([3, 0, 70000])
    entries.append(new_entry(0o120000, OID, b"link"))
    entries.sort(key=lambda entry: entry.path)
    data = index_bytes(entries, len(OID))
    with scratch() as s:
        repo = s.top / "repo"
        lay_out(repo)
        (s.work / "index").write_bytes(data)
        listed = s.git(
            ["ls-files", "-s", "-z", "--debug"], env=s.environment(repo, index=s.work / "index")
        )
    assert listed.stdout.count(b"\0") == len(entries)
    assert read_index(data, len(OID)).entries == tuple(entries)
    offsets = entry_offsets(data, len(OID))
    assert [data[a:b] for a, b in itertools.pairwise(offsets)] == [e.raw for e in entries]


def _large_tree(root: Path, count: int) -> Path:
    files = {
        f"many/d{number // 100:03d}/f{number}.txt": ("file", f"line {number}\n".encode(), False)
        for number in range(count)
    }
    return make_repo(root, {**TREE, **files})


def test_after_a_chmod_of_a_large_tree_every_file_is_hashed_and_every_edit_captured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _large_tree(tmp_path / "tree" / "src", refresh.LARGE + 500)
    age([source])
    baseline = record(source, tmp_path / "baseline")
    chmod_all(source)
    number = refresh.LARGE + 499
    first, last = "many/d000/f0.txt", f"many/d{number // 100:03d}/f{number}.txt"
    for name in (first, last):
        edit(source, tmp_path, "content_keep_stat", name, b"agent")
    monkeypatch.setattr(refresh, "_threads", lambda: 2)  # the first and last in two threads
    ran: list[str] = []
    real_git, real_python = Scratch.git, Scratch.python

    def spy(self: Scratch, args: Sequence[str], **options: Any) -> Any:
        if "--refresh" in args:
            ran.append("git refresh")
        return real_git(self, args, **options)

    def spy_python(self: Scratch, name: str, *args: Any, **options: Any) -> Any:
        ran.append(name)
        return real_python(self, name, *args, **options)

    monkeypatch.setattr(Scratch, "git", spy)
    monkeypatch.setattr(Scratch, "python", spy_python)

    captured = capture_ok(source, baseline)

    assert ran == ["hashing"]
    assert captured.patch.count(b"diff --git") == 2
    assert f"b/{first}".encode() in captured.patch
    assert f"b/{last}".encode() in captured.patch
    assert captured == git.capture(source, baseline, rehash=True).unwrap()


def test_a_symlink_planted_as_the_scratch_index_is_replaced_not_written_through(
    tmp_path: Path,
) -> None:
    source = make_repo(tmp_path / "tree" / "src", TREE)
    age([source])
    baseline = record(source, tmp_path / "baseline")
    assert baseline.index is not None
    victim = tmp_path / "victim"
    victim.write_bytes(b"not an index\n")
    seen = os.lstat(victim)
    with scratch(reader_of(source)) as s:
        repo = s.top / "repo"
        lay_out(repo)
        # What the tree's owner can do in the folder given to it, before the capture writes.
        (s.work / "index").symlink_to(victim)
        tree, _ = stage(
            s,
            source,
            baseline.base_tree,
            repo=repo,
            alternates=baseline.objects,
            start=baseline.index,
        )
    assert victim.read_bytes() == b"not an index\n"
    after = os.lstat(victim)
    assert (after.st_uid, after.st_gid, after.st_mode) == (seen.st_uid, seen.st_gid, seen.st_mode)
    assert tree == capture_ok(source, baseline).new_tree


def test_a_baseline_notes_its_gitlinks_and_one_that_does_not_say_is_looked_at(
    tmp_path: Path,
) -> None:
    plain = make_repo(tmp_path / "plain" / "src", TREE)
    assert record(plain, tmp_path / "plain-baseline").gitlinks is False
    source = make_repo(tmp_path / "tree" / "src", TREE)
    sub = source / "sub"
    sub.mkdir()
    run(sub, "init", "-q")
    (sub / "lib.c").write_text("/* v1 */\n")
    run(sub, "add", "lib.c")
    run(sub, "commit", "-q", "-m", "v1")
    run(source, "add", "sub")
    run(source, "commit", "-q", "--amend", "--no-edit")
    recorded = record(source, tmp_path / "baseline")
    assert recorded.gitlinks is True
    # A baseline recorded before the note: whether the base has gitlinks is not known.
    meta = tmp_path / "baseline" / "baseline.json"
    fields = json.loads(meta.read_text())
    del fields["gitlinks"]
    meta.write_text(json.dumps(fields))
    loaded = git.load_baseline(tmp_path / "baseline").unwrap()
    assert loaded.gitlinks is None
    (source / "README.md").write_bytes(b"changed\n")

    for baseline in (recorded, loaded):
        captured = capture_ok(source, baseline)
        # The base's gitlink, out of the index while the tree was staged, is back: no change.
        assert captured.patch.count(b"diff --git") == 1
        assert b"b/README.md" in captured.patch


@pytest.mark.parametrize("planted", ["symlink", "hard link"])
def test_the_index_handed_to_the_tree_s_owner_is_never_a_link(tmp_path: Path, planted: str) -> None:
    # The tree's owner owns the scratch folder's work part: between root's write and the
    # change of owner it can swap the index for a link to a file of root's.
    victim = tmp_path / "victim"
    victim.write_bytes(b"root's\n")
    seen = os.lstat(victim)
    with scratch((65534, 65534)) as s:
        index = s.work / "index"
        if planted == "symlink":
            index.symlink_to(victim)
        else:
            os.link(victim, index)
        with pytest.raises(OSError, match=r"symbolic links|one name"):
            s.hand_over(index)
        plain = s.work / "plain"
        plain.write_bytes(b"index\n")
        s.hand_over(plain)
        assert (os.lstat(plain).st_uid, os.lstat(plain).st_gid) == (65534, 65534)
    after = os.lstat(victim)
    assert (after.st_uid, after.st_gid, after.st_mode) == (seen.st_uid, seen.st_gid, seen.st_mode)


def test_a_repository_for_the_tree_s_owner_is_laid_out_apart_and_moved_in_whole(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "config").write_bytes(b"root's\n")
    seen = os.lstat(victim / "config")
    with scratch((65534, 65534)) as s:
        repo = s.reader_repository("log.git")
        assert repo.parent == s.work
        for path in (repo, *repo.rglob("*")):
            assert (os.lstat(path).st_uid, os.lstat(path).st_gid) == (65534, 65534), path
        assert [p.name for p in s.top.iterdir() if p.name.startswith("log.git")] == []
        # A link the owner planted where the next one goes is refused, never followed.
        (s.work / "fetch.git").symlink_to(victim)
        with pytest.raises(OSError, match="Not a directory"):
            s.reader_repository("fetch.git")
    after = os.lstat(victim / "config")
    assert (after.st_uid, after.st_mode, after.st_size) == (seen.st_uid, seen.st_mode, seen.st_size)
