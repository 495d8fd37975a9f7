"""The source archive: a standard tar.gz, written walking the agent's tree with directory
descriptors, never following a link, whole or absent."""

from __future__ import annotations

import contextlib
import errno
import gzip
import os
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interpreters.real.archive import (
    ARCHIVE_LEVEL,
    CACHE_NAME,
    archive,
    record_archive_cache,
    split,
    start_archive,
)
from interpreters.real.archive import child as archive_child
from tests.support.waiting import wait_until


class Swap(Exception):
    """Raised by a check to stop an archive."""


def members(path: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: m for m in tar.getmembers()}


def read_member(path: Path, name: str) -> bytes:
    with tarfile.open(path, "r:gz") as tar:
        data = tar.extractfile(name)
        assert data is not None
        return data.read()


def once(action: Callable[[], None], after: int = 0) -> Callable[[], None]:
    """A check that performs `action` at its `after`-th call, once."""
    calls = [0]

    def check() -> None:
        calls[0] += 1
        if calls[0] == after + 1:
            action()

    return check


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "a" / "b").mkdir(parents=True)
    (src / "a" / "b" / "deep.txt").write_text("deep")
    (src / "plain.txt").write_text("plain")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("secret")
    return src


def test_gnu_tar_and_gzip_read_it(tree: Path, tmp_path: Path) -> None:
    (tree / "big.bin").write_bytes(os.urandom(9 << 20))  # several gzip members
    dest = tmp_path / "source.tar.gz"
    assert archive(tree, dest).unwrap() is None
    subprocess.run(["gzip", "-t", str(dest)], check=True)
    listing = subprocess.run(["tar", "-tzf", str(dest)], capture_output=True, text=True, check=True)
    expected = ["src", "src/a", "src/a/b", "src/a/b/deep.txt", "src/big.bin", "src/plain.txt"]
    assert sorted(name.rstrip("/") for name in listing.stdout.split()) == expected
    assert sorted(members(dest)) == expected
    assert read_member(dest, "src/big.bin") == (tree / "big.bin").read_bytes()


def test_a_folder_swapped_for_a_link_is_never_followed(tree: Path, tmp_path: Path) -> None:
    def swap() -> None:
        shutil.rmtree(tree / "a")
        (tree / "a").symlink_to(tmp_path / "outside")

    dest = tmp_path / "source.tar.gz"
    # The root is listed before the first check: "a" is then a folder, opened after the swap.
    assert archive(tree, dest, check=once(swap)).unwrap() is None
    names = members(dest)
    assert not any(name.startswith("src/a/") for name in names)
    assert "src/plain.txt" in names


def test_a_file_swapped_for_a_fifo_or_a_link_is_left_out_or_stored_as_a_link(
    tree: Path, tmp_path: Path
) -> None:
    def swap() -> None:
        (tree / "plain.txt").unlink()
        os.mkfifo(tree / "plain.txt")
        (tree / "a" / "b" / "deep.txt").unlink()
        (tree / "a" / "b" / "deep.txt").symlink_to(tmp_path / "outside" / "secret")

    dest = tmp_path / "source.tar.gz"
    assert archive(tree, dest, check=once(swap)).unwrap() is None
    names = members(dest)
    assert "src/plain.txt" not in names
    assert names["src/a/b/deep.txt"].issym()


def test_a_file_that_shrinks_is_padded_and_the_archive_stays_valid(
    tree: Path, tmp_path: Path
) -> None:
    (tree / "big.bin").write_bytes(b"x" * (3 << 20))
    dest = tmp_path / "source.tar.gz"
    # Calls: root entries a (folder), big.bin, then the first read of big.bin.
    truncate = once(lambda: os.truncate(tree / "big.bin", 10), after=2)
    assert archive(tree, dest, check=truncate).unwrap() is None
    data = read_member(dest, "src/big.bin")
    assert len(data) == 3 << 20
    assert data.strip(b"\0") in (b"x" * 10, b"x" * (1 << 20))


def test_a_stopped_archive_leaves_no_file(tree: Path, tmp_path: Path) -> None:
    def stop() -> None:
        raise Swap

    dest = tmp_path / "source.tar.gz"
    with pytest.raises(Swap):
        archive(tree, dest, check=once(stop, after=1))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside", "src"]


def test_in_a_child_process_whole_or_absent(tree: Path, tmp_path: Path) -> None:
    dest = tmp_path / "source.tar.gz"
    assert start_archive(tree, dest).finish(timeout=60).unwrap() is None
    assert read_member(dest, "src/plain.txt") == b"plain"
    dest.unlink()
    (tree / "huge").write_bytes(b"")
    os.truncate(tree / "huge", 1 << 40)  # sparse: reading it takes far longer than allowed
    failed = start_archive(tree, dest).finish(timeout=0.5)
    assert "time limit" in failed.failure()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside", "src"]


NAMES = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/\0"),
    min_size=1,
    max_size=120,
).filter(lambda n: n not in (".", "..") and len(n.encode()) < 250)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    files=st.dictionaries(
        st.lists(NAMES, min_size=1, max_size=3).map(tuple), st.binary(max_size=2000), max_size=8
    )
)
def test_round_trip_of_any_names(
    tmp_path_factory: pytest.TempPathFactory, files: dict[tuple[str, ...], bytes]
) -> None:
    top = tmp_path_factory.mktemp("names")
    src = top / "src"
    src.mkdir()
    written: dict[str, bytes] = {}
    for parts, data in files.items():
        path = src.joinpath(*parts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists():
                continue
            path.write_bytes(data)
        except (NotADirectoryError, FileExistsError, IsADirectoryError):
            continue  # a name already used as a file or a folder
        written["/".join(("src", *parts))] = data
    dest = top / "source.tar.gz"
    assert archive(src, dest).unwrap() is None
    found = members(dest)
    for name, data in written.items():
        assert found[name].isfile()
        assert read_member(dest, name) == data
    assert {n for n, m in found.items() if m.isfile()} == set(written)


FOLDERS = st.lists(st.lists(st.sampled_from("abc"), min_size=1, max_size=4).map(tuple), max_size=12)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(folders=FOLDERS, budget=st.integers(1, 30))
def test_split_units_cover_each_folder_once_in_archive_order(
    tmp_path_factory: pytest.TempPathFactory, folders: list[tuple[str, ...]], budget: int
) -> None:
    root = tmp_path_factory.mktemp("units")
    for names in folders:
        root.joinpath(*names).mkdir(parents=True, exist_ok=True)
        root.joinpath(*names, "f").write_text("x")
    every = {()} | {names[:depth] for names in folders for depth in range(1, len(names) + 1)}
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        parts = split.units(fd, budget)
    finally:
        os.close(fd)

    assert [unit.names for unit in parts] == sorted(unit.names for unit in parts)
    alone = {unit.names for unit in parts if not unit.whole}
    whole = {unit.names for unit in parts if unit.whole}
    for names in every:  # its files in its own unit, or in the one whole unit above it
        above = [names[:depth] for depth in range(len(names) + 1) if names[:depth] in whole]
        assert len(above) + (names in alone) == 1, (names, parts)
    assert alone | whole <= every
    if budget == 1:
        assert parts == [split.Unit((), True)]


def test_a_stopped_split_archive_leaves_no_worker_and_no_file(tmp_path: Path) -> None:
    source = tmp_path / "split-src"
    for name in ("a", "b", "c"):
        (source / name).mkdir(parents=True)
        (source / name / "huge").write_bytes(b"")
        os.truncate(source / name / "huge", 1 << 40)  # sparse: far too long to read
    dest = tmp_path / "out" / "source.tar.gz"
    dest.parent.mkdir()

    started = start_archive(source, dest, processes=3)
    wait_until(lambda: len(in_group(started.process.pid)) > 1, "the child and workers", 30)
    failed = started.finish(timeout=0.5)

    assert "time limit" in failed.failure()
    assert list(dest.parent.iterdir()) == []
    wait_until(lambda: not in_group(started.process.pid), "the archive's processes to end", 30)


def in_group(group: int) -> list[int]:
    """The processes of the process group `group` (the archive's child and its workers)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit():
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
                if int(fields[2]) == group:  # after the name: state, ppid, pgrp
                    found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def test_a_wide_tree_split_among_workers_is_the_tree_archived_alone(tmp_path: Path) -> None:
    source = tmp_path / "wide"
    for number in range(2500):  # more parts than a pipe takes in one atomic write
        (source / f"d{number:04d}").mkdir(parents=True)
        (source / f"d{number:04d}" / "f").write_bytes(os.urandom(number % 700))
    (source / "d0007" / "link").symlink_to("../d0008/f")

    archive(source, tmp_path / "alone.tar.gz").unwrap()
    assert start_archive(source, tmp_path / "split.tar.gz", processes=3).finish(60).unwrap() is None

    alone = gzip.decompress((tmp_path / "alone.tar.gz").read_bytes())
    assert gzip.decompress((tmp_path / "split.tar.gz").read_bytes()) == alone


def test_the_child_started_ahead_writes_the_next_archive(tree: Path, tmp_path: Path) -> None:
    archive_child.warm_up()
    warm = archive_child.take_warm()
    assert warm is not None
    archive_child._warm = warm  # as `warm_up` left it, the pid known

    started = start_archive(tree, tmp_path / "source.tar.gz")

    assert started.process.pid == warm.process.pid
    assert archive_child.take_warm() is None
    assert started.finish(timeout=60).unwrap() is None
    assert read_member(tmp_path / "source.tar.gz", "src/plain.txt") == b"plain"


def baseline_of(source: Path, into: Path) -> Path:
    """A baseline folder holding the archive cache of `source`, as `ssegrade baseline`
    records it."""
    into.mkdir()
    record_archive_cache(source, into, level=ARCHIVE_LEVEL).unwrap()
    return into


def agent_edits(source: Path) -> None:
    (source / "a" / "b" / "deep.txt").write_text("edited by the agent")
    (source / "a" / "new.txt").write_text("added")


many_cpus = pytest.mark.skipif(split.PROCESSES < 2, reason="one CPU: nothing split")


@many_cpus
def test_a_child_told_the_tree_begins_before_its_job_and_writes_the_same_archive(
    tree: Path, tmp_path: Path
) -> None:
    baseline = baseline_of(tree, tmp_path / "baseline")
    agent_edits(tree)
    archive_child.warm_up((str(tree), str(baseline)))
    warm = archive_child.take_warm()
    assert warm is not None
    archive_child._warm = warm
    # Its workers are under way (or done, waiting to be reaped) before it has a job, and
    # they, like the child, only take CPU time nothing else wants.
    wait_until(lambda: len(in_group(warm.process.pid)) > 1, "the child's workers", 30)
    for pid in in_group(warm.process.pid):
        with contextlib.suppress(ProcessLookupError):  # a worker done meanwhile
            assert os.sched_getscheduler(pid) == os.SCHED_IDLE

    started = start_archive(tree, tmp_path / "ahead.tar.gz", baseline / CACHE_NAME)

    assert started.process.pid == warm.process.pid
    assert "reused from the baseline's archive cache" in str(started.finish(60).unwrap())
    archive(tree, tmp_path / "alone.tar.gz").unwrap()
    alone = gzip.decompress((tmp_path / "alone.tar.gz").read_bytes())
    assert gzip.decompress((tmp_path / "ahead.tar.gz").read_bytes()) == alone
    assert os.listdir(baseline) == [CACHE_NAME]  # its spools had no name


@many_cpus
@pytest.mark.parametrize("told", ["another tree", "the tree swapped", "another cache"])
def test_a_child_told_another_archive_writes_the_one_its_job_asks_for(
    tree: Path, tmp_path: Path, told: str
) -> None:
    other = tmp_path / "other" / tree.name  # the same name elsewhere
    shutil.copytree(tree, other)
    (other / "plain.txt").write_text("the other tree")
    baseline = baseline_of(tree, tmp_path / "baseline")
    hint = (str(other), str(baseline))
    if told == "the tree swapped":  # the name now leads to another folder
        hint = (str(tree), str(baseline))
    elif told == "another cache":
        hint = (str(tree), str(baseline_of(other, tmp_path / "other-baseline")))
    archive_child.warm_up(hint)
    warm = archive_child.take_warm()
    assert warm is not None
    archive_child._warm = warm
    wait_until(lambda: len(in_group(warm.process.pid)) > 1, "the child's workers", 30)
    if told == "the tree swapped":
        tree.rename(tmp_path / "moved")
        other.rename(tree)
        (tree / "plain.txt").write_text("in the swapped tree")

    started = start_archive(tree, tmp_path / "written.tar.gz", baseline / CACHE_NAME)

    assert started.process.pid == warm.process.pid
    started.finish(60).unwrap()
    archive(tree, tmp_path / "alone.tar.gz").unwrap()
    alone = gzip.decompress((tmp_path / "alone.tar.gz").read_bytes())
    assert gzip.decompress((tmp_path / "written.tar.gz").read_bytes()) == alone


@many_cpus
def test_a_child_told_the_tree_but_never_given_its_job_ends_quietly(
    tree: Path, tmp_path: Path
) -> None:
    baseline = baseline_of(tree, tmp_path / "baseline")
    child = archive_child.spawn((str(tree), str(baseline)))
    wait_until(lambda: len(in_group(child.process.pid)) > 1, "the child's workers", 30)
    child.job.close()
    out, err = child.process.communicate(timeout=30)
    assert (child.process.returncode, out, err) == (0, b"", b"")
    wait_until(lambda: not in_group(child.process.pid), "the archive's processes to end", 30)
    assert os.listdir(baseline) == [CACHE_NAME]


def test_a_child_never_given_its_job_ends_quietly() -> None:
    child = archive_child.spawn()
    child.job.close()
    out, err = child.process.communicate(timeout=30)
    assert (child.process.returncode, out, err) == (0, b"", b"")


def test_a_folder_swapped_while_the_tree_is_cut_is_a_part_still(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / name / "deep").mkdir(parents=True)
    opened = os.open

    def swapped(path: str, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if path == "b":  # a link now: O_NOFOLLOW refuses it
            raise OSError(errno.ELOOP, "swapped for a link")
        return opened(path, flags, mode, dir_fd=dir_fd)

    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with monkeypatch.context() as patched:
            patched.setattr(os, "open", swapped)
            parts = split.units(fd, 100)
    finally:
        os.close(fd)

    assert split.Unit(("b",), True) in parts
    assert [unit.names for unit in parts] == sorted(unit.names for unit in parts)
