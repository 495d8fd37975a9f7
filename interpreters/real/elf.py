"""Reading ELF files and `ar` archives for the object scan, bounded: only the headers, the
section tables and the string tables the symbol tables and dynamic section use are read, a
chunk at a time (`CHUNK`), every byte counted against a budget (`Reads`); an archive's members
(a static library, a Rust `.rlib`) are found by their headers. A file whose header claims huge
or many tables (a sparse file of terabytes) costs the budget, never the memory.

Interpreter side: reads from descriptors the caller opened (`interpreters.real.objects`).
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["ARCHIVE", "CHUNK", "MAX_READ", "Reads", "archive_members", "elf_markers", "read_at"]

MAX_READ = 1 << 30
"""The most bytes a scan reads, all files together: headers, section tables, string tables."""

CHUNK = 64 << 10
"""The most bytes read at once (and about the most a scan holds)."""

_SHT_SYMTAB, _SHT_DYNAMIC, _SHT_DYNSYM = 2, 6, 11


def read_at(fd: int, size: int, offset: int) -> bytes:
    """Up to `size` bytes of `fd` at `offset` (fewer only at its end)."""
    data = b""
    while len(data) < size:
        chunk = os.pread(fd, size - len(data), offset + len(data))
        if not chunk:
            break
        data += chunk
    return data


@dataclass
class Reads:
    """The bytes a scan may still read (`left`); every read is counted against it, and none
    is larger than `CHUNK`."""

    left: int = MAX_READ

    def read(self, fd: int, size: int, offset: int) -> bytes:
        """At most `size` bytes of `fd` at `offset`, fewer when the budget or the file ends."""
        data = read_at(fd, max(0, min(size, self.left, CHUNK)), offset)
        self.left -= len(data)
        return data

    def spent(self) -> bool:
        """Whether the budget is used up."""
        return self.left <= 0


def _headers(fd: int, reads: Reads, base: int = 0) -> tuple[struct.Struct, int, int, int] | None:
    """The section header's layout, and where the section table is, its entry size and its
    entry count, of the ELF file open at `fd` (from `base`: an archive's member); None when
    it is not one."""
    head = reads.read(fd, 64, base)
    if len(head) < 52 or head[:4] != b"\x7fELF" or head[4] not in (1, 2) or head[5] not in (1, 2):
        return None
    order = "<" if head[5] == 1 else ">"
    if head[4] == 2:
        if len(head) < 64:
            return None
        shoff, shentsize, shnum = struct.unpack_from(f"{order}Q10xHH", head, 40)
        return struct.Struct(f"{order}IIQQQQII"), base + shoff, shentsize, shnum
    shoff, shentsize, shnum = struct.unpack_from(f"{order}I10xHH", head, 32)
    return struct.Struct(f"{order}IIIIIIII"), base + shoff, shentsize, shnum


def _sections(
    fd: int, reads: Reads, entry: struct.Struct, shoff: int, shentsize: int, shnum: int
) -> Iterator[tuple[int, tuple[int, ...]]]:
    """Each section header (its index and fields), read a chunk of the table at a time."""
    per_chunk = max(1, CHUNK // shentsize)
    for first in range(0, shnum, per_chunk):
        count = min(per_chunk, shnum - first)
        table = reads.read(fd, (count - 1) * shentsize + entry.size, shoff + first * shentsize)
        for i in range(count):
            if i * shentsize + entry.size > len(table):
                return  # the file, or the budget, ended
            yield first + i, entry.unpack_from(table, i * shentsize)


def _table_holds(
    fd: int, reads: Reads, offset: int, size: int, needles: tuple[bytes, ...]
) -> set[bytes]:
    """The needles some entry of the string table at `offset` (`size` bytes) starts with,
    read a chunk at a time."""
    found: set[bytes] = set()
    keep = max((len(n) for n in needles), default=0) + 1
    before = b"\0"  # the table's first entry starts at its first byte
    done = 0
    while done < size and len(found) < len(needles):
        chunk = reads.read(fd, size - done, offset + done)
        if not chunk:
            break
        window = before + chunk
        found.update(n for n in needles if b"\0" + n in window)
        before = window[-keep:]
        done += len(chunk)
    return found


def elf_markers(
    fd: int, needles: tuple[bytes, ...], reads: Reads, base: int = 0
) -> set[bytes] | None:
    """The needles some entry starts with in the string tables the symbol tables and the
    dynamic section of the ELF file open at `fd` use; None when it is not an ELF file.
    Every byte read (header, section table, string tables) is counted in `reads`, which
    stops it when spent; at most `CHUNK` bytes are held at once. `base`: where the ELF file
    starts in `fd` (a member of an archive)."""
    layout = _headers(fd, reads, base)
    if layout is None:
        return None
    entry, shoff, shentsize, shnum = layout
    if shoff == base or shnum == 0 or shentsize < entry.size:
        return set()
    linked = bytearray(shnum)  # one flag a section: at most 64 KiB
    for _, fields in _sections(fd, reads, entry, shoff, shentsize, shnum):
        if fields[1] in (_SHT_SYMTAB, _SHT_DYNAMIC, _SHT_DYNSYM) and 0 < fields[6] < shnum:
            linked[fields[6]] = 1
    found: set[bytes] = set()
    last = linked.rfind(1)
    for index, fields in _sections(fd, reads, entry, shoff, shentsize, last + 1):
        if linked[index]:
            found |= _table_holds(fd, reads, base + fields[4], fields[5], needles)
        if reads.spent() or len(found) == len(needles):
            break
    return found


ARCHIVE = b"!<arch>\n"
_MAX_MEMBERS = 4096


def archive_members(fd: int, reads: Reads) -> Iterator[tuple[int, bool]]:
    """Where each member of the `ar` archive open at `fd` starts (a static library, a Rust
    `.rlib`), and whether it is a relocatable object; at most `_MAX_MEMBERS` of them."""
    offset = len(ARCHIVE)
    for _ in range(_MAX_MEMBERS):
        header = reads.read(fd, 60, offset)
        if len(header) < 60 or header[58:60] != b"`\n":
            return
        try:
            size = int(header[48:58].strip() or b"0")
        except ValueError:
            return
        start = offset + 60
        if header.startswith(b"#1/"):  # a BSD name stored before the data
            with contextlib.suppress(ValueError):
                start += int(header[3:16].strip())
        magic = reads.read(fd, 18, start)
        if magic[:4] == b"\x7fELF":
            yield start, magic[16:18] in (b"\x01\x00", b"\x00\x01")
        offset += 60 + size + (size & 1)
