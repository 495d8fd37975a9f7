"""Real file operations: fresh copies, the source archive, atomic writes, tree removal."""

from __future__ import annotations

import inspect
import os
import socket
import stat
import sys
import tarfile
import threading
from pathlib import Path

import pytest

from interpreters.real.archive import archive
from interpreters.real.files import atomic_write, fresh_copy, remove_later, remove_tree
from interpreters.real.files.data import copy_data
from tests.support.waiting import wait_until

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="needs root (chown to another owner)")

OLD = 1_000_000_000_123_456_789  # a distinctive mtime, in ns


def make_tree(base: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tree with every kind of entry `fresh_copy` must handle."""
    outside.mkdir()
    (outside / "secret").write_text("outside")
    src = base / "src"
    (src / "a" / "b" / "c").mkdir(parents=True)
    (src / "empty").mkdir()
    (src / "a" / "b" / "c" / "deep.txt").write_text("deep")
    (src / "plain.txt").write_text("plain")
    (src / "empty.txt").write_bytes(b"")
    (src / "big.bin").write_bytes(os.urandom(3 * 1024 * 1024 + 7))
    (src / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (src / "run.sh").chmod(0o750)
    (src / "suid").write_text("x")
    (src / "suid").chmod(0o4755 | stat.S_ISGID)
    (src / "sgid-dir").mkdir()
    (src / "sgid-dir" / "f").write_text("f")
    (src / "sgid-dir").chmod(0o2775)
    (src / "locked").mkdir()
    (src / "locked" / "inside.txt").write_text("inside")
    (src / "locked").chmod(0o555)
    (src / "link-in").symlink_to("plain.txt")
    (src / "a" / "link-up").symlink_to("../plain.txt")
    (src / "link-out").symlink_to(outside / "secret")
    (src / "link-dir-out").symlink_to(outside)
    (src / "dangling").symlink_to("nowhere")
    os.mkfifo(src / "fifo")
    monkeypatch.chdir(src)  # a short relative name: socket paths are limited in length
    sock = socket.socket(socket.AF_UNIX)
    sock.bind("sock")
    sock.close()
    monkeypatch.chdir(base)
    os.utime(src / "plain.txt", ns=(OLD, OLD))
    os.utime(src / "a" / "b", ns=(OLD, OLD))
    os.utime(src / "link-in", ns=(OLD, OLD), follow_symlinks=False)
    return src


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_tree(tmp_path, tmp_path / "outside", monkeypatch)


def entries(root: Path) -> dict[str, os.stat_result]:
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            found[str(path.relative_to(root))] = path.lstat()
    return found


# ---------------------------------------------------------------------------- fresh_copy


def test_fresh_copy_mirrors_the_tree(tree: Path, tmp_path: Path) -> None:
    dest = tmp_path / "copy"
    fresh_copy(tree, dest, None)
    want = {k: v for k, v in entries(tree).items() if k not in ("fifo", "sock")}
    got = entries(dest)
    assert set(got) == set(want)
    for name, st in want.items():
        copied = got[name]
        assert stat.S_IFMT(copied.st_mode) == stat.S_IFMT(st.st_mode), name
        if not stat.S_ISLNK(st.st_mode):
            assert stat.S_IMODE(copied.st_mode) == stat.S_IMODE(st.st_mode) & ~0o6000, name
        if stat.S_ISREG(st.st_mode):
            assert (dest / name).read_bytes() == (tree / name).read_bytes(), name
        assert copied.st_mtime_ns == st.st_mtime_ns, name
    assert stat.S_IMODE(dest.stat().st_mode) == stat.S_IMODE(tree.stat().st_mode)


def test_fresh_copy_keeps_exec_bits_and_drops_setuid(tree: Path, tmp_path: Path) -> None:
    dest = tmp_path / "copy"
    fresh_copy(tree, dest, None)
    assert stat.S_IMODE((dest / "run.sh").stat().st_mode) == 0o750
    assert stat.S_IMODE((dest / "suid").stat().st_mode) == 0o755
    assert stat.S_IMODE((dest / "sgid-dir").stat().st_mode) == 0o775
    assert stat.S_IMODE((dest / "locked").stat().st_mode) == 0o555
    assert (dest / "locked" / "inside.txt").read_text() == "inside"
    assert (dest / "empty").is_dir()
    assert not any((dest / "empty").iterdir())
    assert (dest / "a" / "b").stat().st_mtime_ns == OLD


def test_fresh_copy_never_follows_symlinks(tree: Path, tmp_path: Path) -> None:
    dest = tmp_path / "copy"
    fresh_copy(tree, dest, None)
    assert os.readlink(dest / "link-in") == "plain.txt"
    assert os.readlink(dest / "a" / "link-up") == "../plain.txt"
    assert os.readlink(dest / "link-out") == str(tmp_path / "outside" / "secret")
    assert os.readlink(dest / "link-dir-out") == str(tmp_path / "outside")
    assert os.readlink(dest / "dangling") == "nowhere"
    assert (dest / "link-in").lstat().st_mtime_ns == OLD
    assert sorted(p.name for p in (tmp_path / "outside").iterdir()) == ["secret"]


def test_fresh_copy_skips_fifos_and_sockets(tree: Path, tmp_path: Path) -> None:
    dest = tmp_path / "copy"
    fresh_copy(tree, dest, None)  # would block forever on the FIFO if it opened it
    assert not os.path.lexists(dest / "fifo")
    assert not os.path.lexists(dest / "sock")


def test_fresh_copy_refuses_an_existing_destination_and_a_symlinked_source(
    tree: Path, tmp_path: Path
) -> None:
    (tmp_path / "taken").mkdir()
    with pytest.raises(FileExistsError):
        fresh_copy(tree, tmp_path / "taken", None)
    (tmp_path / "alias").symlink_to(tree)
    with pytest.raises(NotADirectoryError):
        fresh_copy(tmp_path / "alias", tmp_path / "copy", None)
    assert not (tmp_path / "copy").exists()


@needs_root
def test_fresh_copy_gives_everything_to_the_owner(tree: Path, tmp_path: Path) -> None:
    dest = tmp_path / "copy"
    fresh_copy(tree, dest, (65534, 65533))
    owners = {(st.st_uid, st.st_gid) for st in entries(dest).values()}
    assert owners == {(65534, 65533)}
    assert (dest.stat().st_uid, dest.stat().st_gid) == (65534, 65533)


def test_fresh_copy_of_many_files(tmp_path: Path) -> None:
    src = tmp_path / "many"
    for d in range(20):
        folder = src / f"d{d}" / "sub"
        folder.mkdir(parents=True)
        for f in range(60):
            (folder / f"f{f}").write_text(f"{d}/{f}")
    fresh_copy(src, tmp_path / "copy", None)
    copied = sorted(p for p in (tmp_path / "copy").rglob("*") if p.is_file())
    assert len(copied) == 1200
    assert all(p.read_text() == f"{p.parent.parent.name[1:]}/{p.name[1:]}" for p in copied)


# ---------------------------------------------------------------------------- archive


def test_archive_round_trip(tree: Path, tmp_path: Path) -> None:
    dest = tmp_path / "source.tar.gz"
    assert archive(tree, dest).unwrap() is None
    with tarfile.open(dest, "r:gz") as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert "src/fifo" not in members
        assert "src/sock" not in members
        assert members["src/link-out"].issym()
        assert members["src/link-out"].linkname == str(tmp_path / "outside" / "secret")
        assert members["src/link-dir-out"].issym()
        assert not any(name.startswith("src/link-dir-out/") for name in members)
        assert members["src/run.sh"].mode & 0o777 == 0o750
        assert members["src/empty"].isdir()
        for name in ("plain.txt", "big.bin", "a/b/c/deep.txt", "locked/inside.txt", "empty.txt"):
            data = tar.extractfile(members[f"src/{name}"])
            assert data is not None
            assert data.read() == (tree / name).read_bytes(), name
    assert dest.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside", "source.tar.gz", "src"]


def test_archive_failure_is_a_value(tree: Path, tmp_path: Path) -> None:
    missing_folder = archive(tree, tmp_path / "no" / "such" / "source.tar.gz")
    assert "could not archive" in missing_folder.failure()
    missing_source = archive(tmp_path / "nothing", tmp_path / "source.tar.gz")
    assert "could not archive" in missing_source.failure()
    assert not (tmp_path / "source.tar.gz").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


# ---------------------------------------------------------------------------- atomic_write


def test_atomic_write(tmp_path: Path) -> None:
    target = tmp_path / "result.json"
    old_umask = os.umask(0o077)
    try:
        atomic_write(target, b'{"a": 1}')
    finally:
        os.umask(old_umask)
    assert target.read_bytes() == b'{"a": 1}'
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    atomic_write(target, b"second", mode=0o600)
    assert target.read_bytes() == b"second"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_atomic_write_failure_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        atomic_write(tmp_path / "missing" / "x", b"data")
    target = tmp_path / "f"
    target.write_bytes(b"old")

    with pytest.raises(TypeError):  # fails half-way: after the temp file was made
        atomic_write(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f"]


# ---------------------------------------------------------------------------- remove_tree


def test_remove_tree_handles_what_a_runner_leaves(tree: Path, tmp_path: Path) -> None:
    dest = tmp_path / "copy"
    fresh_copy(tree, dest, None)
    (dest / "a" / "b").chmod(0o500)  # read-only: its entries cannot be unlinked as is
    (dest / "a" / "b" / "c").chmod(0o000)  # not even readable
    (dest / "empty").chmod(0o300)  # writable but not listable
    remove_tree(dest)
    assert not dest.exists()
    assert (tmp_path / "outside" / "secret").read_text() == "outside"  # links not followed
    assert tree.exists()


def test_remove_tree_of_missing_paths_files_and_symlinks(tmp_path: Path) -> None:
    remove_tree(tmp_path / "never")
    (tmp_path / "file").write_text("x")
    remove_tree(tmp_path / "file")
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "x").write_text("x")
    (tmp_path / "alias").symlink_to(tmp_path / "keep")
    remove_tree(tmp_path / "alias")
    assert not os.path.lexists(tmp_path / "alias")
    assert (tmp_path / "keep" / "x").exists()


def test_remove_tree_of_a_tree_too_deep_to_walk(tmp_path: Path) -> None:
    top = tmp_path / "deep"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(150):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)
    (top / "d" / "d").chmod(0o500)
    # Deeper than the recursion limit lets the walk go (a small limit keeps the test fast).
    depth = len(inspect.stack())
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + 100)
    try:
        remove_tree(top)
    finally:
        sys.setrecursionlimit(limit)
    assert not top.exists()


@pytest.mark.parametrize(
    "ways",
    [
        {"copy_file_range": True, "sendfile": True},
        {"copy_file_range": False, "sendfile": True},
        {"copy_file_range": False, "sendfile": False},
    ],
    ids=["copy_file_range", "sendfile", "read-write"],
)
def test_every_way_of_copying_data(tmp_path: Path, ways: dict[str, bool]) -> None:
    data = os.urandom(5 * 1024 * 1024 + 3)
    (tmp_path / "in").write_bytes(data)
    src = os.open(tmp_path / "in", os.O_RDONLY)
    dst = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        copy_data(src, dst, len(data), dict(ways))
    finally:
        os.close(src)
        os.close(dst)
    assert (tmp_path / "out").read_bytes() == data


def test_a_tree_removed_later_goes_by_itself(tmp_path: Path) -> None:
    tree = tmp_path / "scratch"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "b" / "f").write_text("x")
    (tree / "a" / "b").chmod(0o500)  # left read-only by a script
    (tree / "link").symlink_to(tmp_path)  # removed, not followed
    keep = tmp_path / "keep"
    keep.write_text("kept")
    remove_later(tree)
    # the remover's own process, seen through the tree it removes
    wait_until(lambda: not tree.exists(), "the tree's removal", 60)
    assert keep.read_text() == "kept"


def test_two_removals_of_one_tree_at_once_both_succeed(tmp_path: Path) -> None:
    # The evaluator's detached remover and its caller may remove the same scratch folder.
    tree = tmp_path / "scratch"
    for a in range(20):
        for b in range(20):
            folder = tree / f"a{a}" / f"b{b}"
            folder.mkdir(parents=True)
            for c in range(5):
                (folder / f"f{c}").write_text("x")
    errors: list[BaseException] = []

    def remove() -> None:
        try:
            remove_tree(tree)
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            errors.append(exc)

    threads = [threading.Thread(target=remove) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert not tree.exists()


@pytest.mark.parametrize("where", ["top", "below"])
def test_a_folder_refilled_by_another_remover_is_cleared_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    # The guardian renames a dead grading's scratch folder to a trash name in the same
    # parent before removing it: a folder already cleared can fill again before it goes.
    tree = tmp_path / "scratch"
    (tree / "sub").mkdir(parents=True)
    moved = tmp_path / "moved"
    (moved / "deep").mkdir(parents=True)
    (moved / "deep" / "f").write_text("x")
    target = tree if where == "top" else tree / "sub"
    real = os.rmdir
    calls: list[str] = []

    def rmdir(name: str | Path, *, dir_fd: int | None = None) -> None:
        calls.append(os.fspath(name))
        if len(calls) == (1 if where == "below" else 2):  # refilled just before it goes
            os.rename(moved, target / "ssegrade-trash-x")
        real(name, dir_fd=dir_fd)

    monkeypatch.setattr(os, "rmdir", rmdir)
    remove_tree(tree)
    assert not tree.exists()
    assert not moved.exists()
