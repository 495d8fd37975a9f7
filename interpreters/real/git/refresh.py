"""The refresh of a private index before `git add`: files hashed without storing them, in
parallel parts of the index on a large tree.

Interpreter side (processes, files); a step of the staging of SPEC §4. `git update-index
--refresh` hashes every file whose stat data differ from its entry's, one file after the
other, and gives the file's stat data to each entry whose bytes hash as recorded; the others
are left for `git add`. When every file must be hashed (a `chmod -R` after the baseline, or an
index read from the base tree), that one thread is the whole cost of a capture: on a large
index, the entries are cut into as many parts as CPUs are at hand (contiguous runs of git's
order, of about the same bytes), each part is refreshed by its own git at once, and the parts
are joined back (as git wrote them when a part came back with its header and length, since
a refresh changes only stat data, of fixed size; else entry by entry, refused unless the same
entries). Each git decides on content as it does alone: the join changes nothing but where
the hashing ran.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from interpreters.real.git.command import Scratch
from interpreters.real.git.index_file import (
    Entry,
    entry_offsets,
    load,
    place,
    read_entries,
    read_index,
    seal,
)

PART_FROM = 2000
"""Entries per part at least: below twice this, one git refreshes the whole index."""

MAX_PARTS = 4
"""Parts at most, whatever the CPUs."""

FILE_WEIGHT = 8192
"""What opening and hashing a file costs beyond its bytes, in bytes, to balance the parts."""

SAMPLE = 32
"""Entries whose ctime `mostly_stale` compares with their file's."""

REFRESH = ("-c", "core.preloadIndex=false", "update-index", "-q", "--refresh")
"""The refresh, without the preload's threads: where files changed, each would be `lstat`ed
twice (by a thread, then by the refresh that hashes it)."""


def cuts_of(sizes: Sequence[int], count: int) -> list[int]:
    """Where to cut entries whose files have `sizes` (as recorded) into at most `count`
    contiguous runs of about the same weight (a file's bytes plus `FILE_WEIGHT`), each of
    `PART_FROM` entries at least: the first entry of each run, then the number of entries."""
    count = max(1, min(count, MAX_PARTS, len(sizes) // PART_FROM))
    cuts = [0]
    if count > 1:
        weights = list(itertools.accumulate(size + FILE_WEIGHT for size in sizes))
        for at, weight in enumerate(weights):
            even = weight * count >= weights[-1] * len(cuts)
            if even and at - cuts[-1] >= PART_FROM and len(sizes) - at >= PART_FROM:
                cuts.append(at)
                if len(cuts) == count:
                    break
    return [*cuts, len(sizes)]


def _unstated(entry: Entry) -> bytes:
    """An entry's bytes but its stat data: its mode, object id, flags and path."""
    return entry.raw[24:28] + entry.raw[40:]


def mostly_stale(source: Path, data: bytes, oid_length: int) -> bool:
    """Whether, in a large index file (`data`), most of the first entries with stat data
    (`SAMPLE` of them) no longer match their file's ctime: every file is then likely to be
    hashed (a `chmod -R`, `chown -R` or restore moves every ctime).

    This decides only whether the refresh runs in parts, never what it hashes: each git
    compares every entry itself."""
    if int.from_bytes(data[8:12], "big") < 2 * PART_FROM:
        return False
    stated = (entry for entry in read_entries(data, oid_length) if entry.ctime)
    stale = 0
    for entry in itertools.islice(stated, SAMPLE):
        try:
            stale += int(os.lstat(os.fsencode(source) + b"/" + entry.path).st_ctime) != entry.ctime
        except OSError:
            stale += 1
    return stale * 2 > SAMPLE


def _cpus() -> int:
    return len(os.sched_getaffinity(0))


def refresh(
    s: Scratch,
    index: Path,
    data: bytes,
    *,
    every: bool,
    mtime_ns: int,
    oid_length: int,
    env: dict[str, str],
    cwd: Path,
) -> None:
    """Write the index file `data` as `index` (given to the reader, with the mtime
    `mtime_ns`), refreshed against the tree as `env` (the reader's hermetic environment) sees
    it: each file whose stat data differ is hashed, never stored. With `every` (every file is
    likely to be hashed), a large index is refreshed in parallel parts."""
    cuts: list[int] = []
    if every and int.from_bytes(data[8:12], "big") >= 2 * PART_FROM:
        offsets = entry_offsets(data, oid_length)
        sizes = [int.from_bytes(data[at + 36 : at + 40], "big") for at in offsets[:-1]]
        cuts = cuts_of(sizes, _cpus())
    if len(cuts) < 3:
        place(s, data, index, mtime_ns)
        s.git(REFRESH, env=env, cwd=cwd, ok=(0, 1), as_reader=True)
        return
    files = [index.with_name(f"{index.name}.part{number}") for number in range(len(cuts) - 1)]
    written = [
        seal(
            data[:8] + (end - start).to_bytes(4, "big") + data[offsets[start] : offsets[end]],
            oid_length,
        )
        for start, end in itertools.pairwise(cuts)
    ]
    for file, part_data in zip(files, written, strict=True):
        place(s, part_data, file, mtime_ns)

    def run(file: Path) -> None:
        part_env = {**env, "GIT_INDEX_FILE": str(file)}
        s.git(REFRESH, env=part_env, cwd=cwd, ok=(0, 1), as_reader=True)

    with ThreadPoolExecutor(max_workers=len(files)) as pool:
        list(pool.map(run, files))
    joined = [_rejoin(file, sent, oid_length) for file, sent in zip(files, written, strict=True)]
    # As old as the index the parts came from: git holds for racy every entry it held so then.
    place(s, seal(data[:12] + b"".join(joined), oid_length), index, mtime_ns)


def _rejoin(file: Path, sent: bytes, oid_length: int) -> bytes:
    """The entries of a refreshed part, as git wrote them back; `ValueError` unless they are
    the entries `sent`, in the same order, but for their stat data."""
    back = load(file)
    file.unlink()
    if len(back) == len(sent) and back[:12] == sent[:12]:
        # The same entries with only their stat data (of fixed size) changed, no extension.
        return back[12 : -(oid_length // 2)]
    read = read_index(back, oid_length)
    if read.version != int.from_bytes(sent[4:8], "big") or list(
        map(_unstated, read.entries)
    ) != list(map(_unstated, read_entries(sent, oid_length))):
        raise ValueError("a part of the index came back with other entries")
    return b"".join(entry.raw for entry in read.entries)
