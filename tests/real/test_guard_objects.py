"""The real interpreter's side of the guard: the scan of a build's objects for a sanitizer
runtime (real ELF files, hostile trees: links, FIFOs, deep folders; its bounds) and the read
of task files."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from interpreters.real.files.reading import read_start
from interpreters.real.objects import Reads, elf_markers, scan_objects
from ssegrade.guard import ObjectScan, runtimes_for
from tests.support.guardkit import fake_elf

ASAN = runtimes_for("address")


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    """A grading repo and a build's copy of it (files kept with their size and time)."""
    repo, copy = tmp_path / "repo", tmp_path / "copy"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    (repo / "prebuilt.so").write_bytes(fake_elf(b"__asan_init"))
    shutil.copytree(repo, copy)  # copy2 keeps times, as fresh copies do
    return repo, copy


@pytest.mark.parametrize(("wide", "little"), [(True, True), (False, True), (True, False)])
def test_an_elf_string_table_is_read_in_every_class_and_order(
    tmp_path: Path, wide: bool, little: bool
) -> None:
    path = tmp_path / "obj"
    path.write_bytes(fake_elf(b"libasan.so.8\0__asan_init", wide=wide, little=little))
    fd = os.open(path, os.O_RDONLY)
    try:
        found = elf_markers(fd, (b"__asan_init", b"libasan.so", b"__msan_init"), Reads())
    finally:
        os.close(fd)
    assert found == {b"__asan_init", b"libasan.so"}


def test_a_new_object_carrying_the_runtime_is_found(trees: tuple[Path, Path]) -> None:
    repo, copy = trees
    (copy / "build").mkdir()
    (copy / "build" / "plain.o").write_bytes(fake_elf(b"main\0printf"))
    (copy / "build" / "prog").write_bytes(fake_elf(b"main\0__asan_init_v5"))
    scan = scan_objects(copy, repo, ASAN)
    assert scan.carrying == (("address", "build/prog"),)
    assert scan.stopped is None


def test_unchanged_files_skipped_paths_and_non_elf_files_do_not_count(
    trees: tuple[Path, Path],
) -> None:
    repo, copy = trees
    (copy / "notes.txt").write_bytes(b"__asan_init " * 10)  # not an ELF file
    (copy / "patched.so").write_bytes(fake_elf(b"__asan_init"))  # written by the patch
    scan = scan_objects(copy, repo, ASAN, skip=("patched.so",))
    assert (scan.examined, scan.carrying) == (0, ())  # prebuilt.so is the repo's own
    os.utime(copy / "prebuilt.so", ns=(0, 0))  # rebuilt in place: counts
    again = scan_objects(copy, repo, ASAN, skip=("patched.so",))
    assert again.carrying == (("address", "prebuilt.so"),)


def test_links_are_never_followed_and_fifos_never_waited_on(
    trees: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, copy = trees
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "asan.so").write_bytes(fake_elf(b"__asan_init"))
    os.symlink(outside / "asan.so", copy / "link.so")
    os.symlink(outside, copy / "linked-dir")
    os.mkfifo(copy / "fifo")
    done: list[ObjectScan] = []
    worker = threading.Thread(target=lambda: done.append(scan_objects(copy, repo, ASAN)))
    worker.start()
    worker.join(timeout=20)
    assert done, "the scan hung on a FIFO"
    (scan,) = done
    assert scan == scan_objects(copy, repo, ASAN)
    assert scan.carrying == ()


def test_a_scan_is_bounded_in_time_and_depth(trees: tuple[Path, Path]) -> None:
    repo, copy = trees
    deep = copy
    for _ in range(200):
        deep = deep / "d"
        deep.mkdir()
    (deep / "asan.so").write_bytes(fake_elf(b"__asan_init"))
    assert scan_objects(copy, repo, ASAN).carrying == ()  # below the depth walked
    (copy / "a.so").write_bytes(fake_elf(b"__asan_init"))
    late = scan_objects(copy, repo, ASAN, seconds=0)
    assert (late.carrying, late.stopped) == ((), "out of time")


def test_every_runtime_asked_for_is_looked_for(trees: tuple[Path, Path]) -> None:
    repo, copy = trees
    (copy / "a.o").write_bytes(fake_elf(b"__ubsan_handle_add_overflow"))
    scan = scan_objects(copy, repo, runtimes_for("address,undefined"))
    assert scan.carrying == (("undefined", "a.o"),)
    assert scan.carrier("address") is None
    assert scan.examined == 1


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_what_gcc_builds_with_and_without_address_sanitizer(tmp_path: Path) -> None:
    repo, copy = tmp_path / "repo", tmp_path / "copy"
    for tree in (repo, copy):
        tree.mkdir()
        (tree / "m.c").write_text("int main(void) { return 0; }\n")
    plain = ["gcc", "-o", str(copy / "plain"), str(copy / "m.c")]
    subprocess.run(plain, check=True)
    assert scan_objects(copy, repo, ASAN).carrying == ()
    asan = ["gcc", "-fsanitize=address", "-c", "-o", str(copy / "m.o"), str(copy / "m.c")]
    subprocess.run(asan, check=True)
    assert scan_objects(copy, repo, ASAN).carrying == (("address", "m.o"),)


def test_a_task_file_is_read_only_when_it_is_a_regular_file(tmp_path: Path) -> None:
    poc = tmp_path / "poc.bin"
    poc.write_bytes(b"0123456789")
    assert read_start(str(poc), 4).unwrap() == b"0123"
    os.symlink(poc, tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    for name in ("link", "fifo", "missing"):
        assert not read_start(str(tmp_path / name), 4).value_or(None)
