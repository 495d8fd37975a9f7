"""The guard's scan of a build's objects reads within one byte budget and holds little memory,
whatever an object's header claims.

The attack as it was found: one 16 KiB sparse file shaped like an object, whose header names
a hundred symbol tables each linked to its own string table of a terabyte, made the scan (as
root) read 64 MiB of each into memory: gigabytes, until the OOM killer picked a process.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from interpreters.real.objects import CHUNK, Reads, elf_markers, scan_objects
from ssegrade.guard import runtimes_for
from tests.support.guardkit import fake_elf

ASAN = runtimes_for("address")
_ENTRY = struct.Struct("<IIQQQQII")
_TERABYTE = 1 << 40


def hostile_object(path: Path, *, tables: int = 100) -> None:
    """A sparse ELF file of a terabyte holding only its headers: `tables` symbol tables,
    each linked to a string table of a terabyte of zeros."""

    def entry(kind: int, size: int = 0, link: int = 0) -> bytes:
        return _ENTRY.pack(0, kind, 0, 0, 0, size, link, 0).ljust(64, b"\0")

    sections = [entry(0)]
    sections += [entry(2, link=1 + tables + i) for i in range(tables)]  # SHT_SYMTAB
    sections += [entry(3, size=_TERABYTE)] * tables  # SHT_STRTAB, at offset 0
    ident = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    rest = struct.pack("<HHIQQQIHHHHHH", 1, 62, 1, 0, 0, 64, 0, 64, 0, 0, 64, len(sections), 0)
    head = ident + rest + b"".join(sections)
    with path.open("wb") as out:
        out.write(head)
        out.truncate(_TERABYTE)
    assert path.stat().st_blocks * 512 <= len(head) + (64 << 10)  # sparse: no more on disk


SCAN = """
import json, resource, sys, tracemalloc
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
from pathlib import Path
from interpreters.real.objects import scan_objects
from ssegrade.guard import runtimes_for
tracemalloc.start()
scan = scan_objects(Path(sys.argv[1]), Path(sys.argv[2]), runtimes_for("address"),
                    budget=int(sys.argv[3]))
print(json.dumps({"peak": tracemalloc.get_traced_memory()[1], "stopped": scan.stopped,
                  "examined": scan.examined}))
"""


BUDGET = 64 << 20
"""The scan's byte budget here: a quarter of a second's reading on a quiet machine, where the
default (`MAX_READ`, 1 GiB) can outlast the scan's time limit on a busy one, and the test then
sees the time run out before the budget does."""


def test_a_sparse_object_claiming_terabytes_of_tables_costs_the_budget_not_memory(
    tmp_path: Path,
) -> None:
    copy, repo = tmp_path / "copy", tmp_path / "repo"
    copy.mkdir()
    repo.mkdir()
    hostile_object(copy / "evil.o")
    done = subprocess.run(
        [sys.executable, "-c", SCAN, str(copy), str(repo), str(BUDGET)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout)
    assert answer["peak"] < 16 * CHUNK, answer  # about a chunk, never a table
    assert answer["examined"] == 1
    assert answer["stopped"] == f"read {BUDGET >> 20} MiB of objects (the most a scan reads)"


def test_every_byte_read_counts_headers_and_section_tables_included(tmp_path: Path) -> None:
    hostile_object(tmp_path / "evil.o", tables=1000)  # a section table of 125 KiB
    reads = Reads(100 << 10)
    fd = os.open(tmp_path / "evil.o", os.O_RDONLY)
    try:
        found = elf_markers(fd, (b"__asan_init",), reads)
    finally:
        os.close(fd)
    assert found == set()
    assert reads.left == 0  # the section table alone spent it: not one byte more was read


def test_the_note_says_the_budget_ran_out(tmp_path: Path) -> None:
    copy, repo = tmp_path / "copy", tmp_path / "repo"
    copy.mkdir()
    repo.mkdir()
    hostile_object(copy / "evil.o", tables=3)
    scan = scan_objects(copy, repo, ASAN, budget=1 << 20)
    assert (scan.examined, scan.carrying) == (1, ())
    assert scan.stopped == "read 1 MiB of objects (the most a scan reads)"


@settings(max_examples=40, deadline=None)
@given(
    before=st.integers(min_value=0, max_value=3 * CHUNK),
    marker=st.sampled_from(["__asan_init", "libasan.so", "__asan_report_load8"]),
)
def test_a_marker_is_found_wherever_the_chunks_cut_the_table(before: int, marker: str) -> None:
    data = fake_elf(b"x" * before + b"\0" + marker.encode() + b"\0tail")
    fd = os.memfd_create("object")
    try:
        os.write(fd, data)
        found = elf_markers(fd, (b"__asan_init", b"libasan.so"), Reads())
    finally:
        os.close(fd)
    assert found == ({marker.encode()} & {b"__asan_init", b"libasan.so"})
