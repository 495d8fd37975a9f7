"""The slow path's hashing without git (`interpreters.real.git.hashing`), on real trees.

When every file's stat data moved after the baseline, the capture hashes every file in a
program of its own, as the tree's owner, instead of `git update-index --refresh`. It must
decide exactly as git: the property test compares, entry by entry, the index it refreshes with
the one git's refresh writes from the same entries, after any of the agent's edits (stat
tricks, type changes, a folder swapped for a symlink to a copy of itself, a fifo). The attacks:
a folder reached through a symlink, a file its owner may not read, an answer of the hashing
program that would change an entry's mode or count; each is captured as git captures it or
fails the capture, never trusted.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interpreters.real import git
from interpreters.real.git import hashing, refresh
from interpreters.real.git.command import Out, Scratch, scratch
from interpreters.real.git.index_file import load, place, read_entries
from interpreters.real.git.layout import lay_out, reader_of
from tests.support.agentaccounts import agent_account
from tests.support.gittrees import (
    AFTER,
    TARGETS,
    TREE,
    age,
    capture_ok,
    chmod_all,
    edit,
    make_repo,
    make_tree,
    rebuild,
    record,
    snapshot,
)

pytestmark = pytest.mark.slow

FUTURE_NS = 4_000_000_000 * 10**9
"""An index file's mtime no entry reaches: git then holds no entry for racily clean."""


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, git.Baseline]:
    folder = tmp_path_factory.mktemp("hashing")
    source = make_tree(folder / "src")
    return source, record(source, folder / "baseline")


def folder_to_link(source: Path, outside: Path, name: str) -> None:
    """The agent's folder `name` swapped for a symlink to a copy of it, outside the tree:
    every file reached through it has the bytes and mode of the base's."""
    folder = (source / name).parent
    if folder == source or folder.is_symlink() or not folder.is_dir():
        return
    copy = outside / f"copy-{len(list(outside.iterdir()))}"
    shutil.copytree(folder, copy, symlinks=True)
    shutil.rmtree(folder)
    folder.symlink_to(copy)


def unreadable(source: Path, _outside: Path, name: str) -> None:
    """The file `name` kept, its bytes unreadable to anyone but root."""
    path = source / name
    if path.is_file() and not path.is_symlink():
        path.chmod(0)


def to_folder(source: Path, _outside: Path, name: str) -> None:
    """The file `name` swapped for a folder holding a file of the same bytes."""
    path = source / name
    if path.is_file() and not path.is_symlink():
        data = path.read_bytes()
        path.unlink()
        path.mkdir()
        (path / "inside").write_bytes(data)


MORE = {"folder_to_link": folder_to_link, "unreadable": unreadable, "to_folder": to_folder}


def play(source: Path, outside: Path, edits: Sequence[tuple[str, str, bytes]]) -> None:
    for op, name, data in edits:
        if op in MORE:
            MORE[op](source, outside, name)
        else:
            edit(source, outside, op, name, data)


def both_refreshes(source: Path, baseline: git.Baseline) -> tuple[bytes, bytes]:
    """The index of the base's entries (no stat data) refreshed against `source` by
    `hashing`, then by git's refresh."""
    base = baseline.base_tree
    with scratch(reader_of(source)) as s:
        repo = s.top / "repo"
        lay_out(repo)
        index = s.work / "index"
        admin = s.environment(repo, index=index, alternates=baseline.objects)
        s.git(["read-tree", base], env=admin)
        data = load(index)
        ours = refresh.hashed(s, data, len(base), source)
        place(s, data, index, FUTURE_NS)
        # With the base's objects: git compares a symlink's target with its blob's bytes
        # (a file it hashes), so without them it would leave every symlink to `add`.
        reader = s.environment(repo, index=index, work_tree=source, alternates=baseline.objects)
        s.git(refresh.REFRESH, env=reader, cwd=source, ok=(0, 1), as_reader=True)
        return ours, load(index)


@settings(max_examples=40, deadline=None)
@given(
    edits=st.lists(
        st.tuples(
            st.sampled_from((*AFTER, *MORE)), st.sampled_from(TARGETS), st.binary(max_size=16)
        ),
        max_size=5,
    )
)
def test_hashing_gives_each_entry_what_git_s_refresh_gives(
    base: tuple[Path, git.Baseline], edits: list[tuple[str, str, bytes]]
) -> None:
    source, baseline = base
    with tempfile.TemporaryDirectory(dir=source.parent.parent) as folder:
        tree = Path(folder) / "src"
        shutil.copytree(source, tree, symlinks=True)
        outside = Path(folder) / "outside"
        outside.mkdir()
        play(tree, outside, edits)

        ours, theirs = both_refreshes(tree, baseline)

    oid_length = len(baseline.base_tree)
    mine = [entry.raw for entry in read_entries(ours, oid_length)]
    gits = [entry.raw for entry in read_entries(theirs, oid_length)]
    assert mine == gits


@pytest.fixture
def stale_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small tree taken for a large one (the capture hashes it with `hashing` once every
    ctime moved), aged so that its baseline trusts its stat data."""
    monkeypatch.setattr(refresh, "LARGE", 1)
    source = make_repo(tmp_path / "tree" / "src", TREE)
    age([source])
    return source


@contextlib.contextmanager
def hashing_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """What ran to hash the tree: `hashing` or git's refresh, each time."""
    ran: list[str] = []
    python, git_ = Scratch.python, Scratch.git

    def spy_python(self: Scratch, name: str, *args: Any, **options: Any) -> Out:
        ran.append(name)
        return python(self, name, *args, **options)

    def spy_git(self: Scratch, args: Sequence[str], **options: Any) -> Out:
        if "--refresh" in args:
            ran.append("git refresh")
        return git_(self, args, **options)

    with monkeypatch.context() as patched:
        patched.setattr(Scratch, "python", spy_python)
        patched.setattr(Scratch, "git", spy_git)
        yield ran


def test_a_folder_swapped_for_a_link_to_its_copy_is_captured_as_a_link(
    stale_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every file under the link has the base's bytes, mode and a fresh ctime. The rule of
    # SPEC §4 end to end (the folder is a link in the patch): `git add` also refuses a path
    # under a link, so this cannot tell whether the hashing follows one; the property test
    # above holds that (its answers equal git's refresh after a folder swapped for a link).
    baseline = record(stale_tree, tmp_path / "baseline")
    chmod_all(stale_tree)
    folder_to_link(stale_tree, tmp_path, "lib/x/deep.py")
    with hashing_runs(monkeypatch) as ran:
        captured = capture_ok(stale_tree, baseline)
    assert ran == ["hashing"]
    assert b"deleted file mode 100644" in captured.patch
    assert b"diff --git a/lib/x/deep.py b/lib/x/deep.py" in captured.patch
    assert b"new file mode 120000" in captured.patch
    rebuilt = rebuild(baseline, captured, tmp_path / "repo")
    assert (rebuilt / "lib" / "x").is_symlink()
    assert snapshot(rebuilt) == snapshot(stale_tree)


def test_the_tree_is_hashed_as_its_owner(monkeypatch: pytest.MonkeyPatch) -> None:
    # A file its owner can no longer read, with the base's bytes: root would read it and find
    # it unchanged; its owner cannot, so git leaves it out and says so.
    if os.geteuid() != 0:
        pytest.skip("reading as the tree's owner needs root")
    monkeypatch.setattr(refresh, "LARGE", 1)
    with agent_account() as owner, tempfile.TemporaryDirectory() as folder:
        top = Path(folder)  # its owner reaches it: /tmp/pytest-of-root is root's only
        top.chmod(0o755)
        source = make_repo(top / "src", TREE)
        for parent, dirs, files in os.walk(source):
            for name in (".", *dirs, *files):
                path = os.path.join(parent, name)
                os.chown(path, owner.pw_uid, owner.pw_gid, follow_symlinks=False)
        age([source])
        baseline = record(source, top / "baseline")
        chmod_all(source)
        (source / "src" / "util.c").chmod(0)
        with hashing_runs(monkeypatch) as ran:
            captured = capture_ok(source, baseline)
    assert ran == ["hashing"]
    assert "src/util.c" in captured.left_out
    assert captured.patch == b""


@pytest.mark.parametrize("back", [False, True])
def test_a_file_swapped_in_after_its_lstat_never_matches_the_stat_data_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, back: bool
) -> None:
    # The agent's edit (same size) is at the path when it is `lstat`ed; a file with the base's
    # bytes is renamed in before it is read (and, with `back`, the edit renamed back after):
    # the bytes read hash as the base's, but the stat data answered match no file at the path.
    tree = tmp_path / "tree"
    tree.mkdir()
    base, edited = b"int run(void) { return 0; }\n", b"int run(void) { return 1; }\n"
    (tree / "util.c").write_bytes(edited)
    (tmp_path / "base.c").write_bytes(base)
    oid = hashlib.sha1(b"blob %d\0" % len(base) + base).digest()
    real_open = os.open
    swapped: list[bool] = []

    def swap_then_open(path: Any, flags: int, *args: Any, **options: Any) -> int:
        if path == b"util.c" and not swapped:
            swapped.append(True)
            os.rename(tree / "util.c", tmp_path / "edited.c")
            os.rename(tmp_path / "base.c", tree / "util.c")
        return real_open(path, flags, *args, **options)

    top = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with monkeypatch.context() as patched:
            patched.setattr(os, "open", swap_then_open)
            answer = hashing.answers(top, [(0o100644, oid, b"util.c")], "sha1")
    finally:
        os.close(top)
    if back:
        os.rename(tmp_path / "edited.c", tree / "util.c")

    assert swapped
    assert answer != hashing.UNKNOWN  # the bytes read were the base's, as git would find too
    now = os.lstat(tree / "util.c")
    assert answer != hashing.stat_data(now, 0o100644)


@pytest.mark.parametrize("forged", ["mode", "count"])
def test_an_answer_that_is_not_stat_data_fails_the_capture(
    stale_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forged: str
) -> None:
    baseline = record(stale_tree, tmp_path / "baseline")
    chmod_all(stale_tree)
    python = Scratch.python

    def lie(self: Scratch, *args: Any, **options: Any) -> Out:
        said = python(self, *args, **options)
        out = said.stdout
        if forged == "mode":  # the first entry found unchanged made executable
            at = next(at for at in range(0, len(out), 40) if any(out[at : at + 40]))
            out = out[: at + 24] + (0o100755).to_bytes(4, "big") + out[at + 28 :]
        else:
            out = out[:-40]
        return Out(said.code, out, said.stderr)

    monkeypatch.setattr(Scratch, "python", lie)
    failed = git.capture(stale_tree, baseline)
    assert "hashing of the tree answered another" in failed.failure().message


@pytest.mark.parametrize(
    ("cpus", "running", "threads"),
    [(2, 1, 2), (2, 2, 1), (2, 9, 1), (1, 1, 1), (8, 1, 4), (8, 5, 4), (8, 7, 2), (2, 0, 2)],
)
def test_threads_hash_on_the_cpus_no_other_task_runs_on(
    cpus: int, running: int, threads: int
) -> None:
    assert refresh.free_cpus(cpus, running) == threads
