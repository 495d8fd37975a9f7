"""The refresh of a private index before `git add`: files hashed without storing them.

Interpreter side (processes, files); a step of the staging of SPEC §4. When few files changed
(a capture from the kept index), `git update-index --refresh` hashes the files whose stat data
differ from their entry's and gives the file's stat data to each entry whose bytes hash as
recorded; the others are left for `git add`. When every file is to be hashed (a `chmod -R`
after the baseline, or an index read from the base tree), that hashing is the whole cost of a
capture, and `hashing.py` does it instead, as the tree's owner: OpenSSL's hash in a thread per
CPU at about a third of the CPU time of git's collision-detecting SHA-1, in one process that
hashes every entry whatever its stat data. Either way only content decides: an entry gets the
file's stat data only when the file's bytes hash as its object id.
"""

from __future__ import annotations

import functools
import itertools
import os
from pathlib import Path

from interpreters.real.git import hashing
from interpreters.real.git.command import Scratch
from interpreters.real.git.index_file import entry_spans, place, read_entries, seal

MAX_THREADS = 4
"""Threads that hash at most, whatever the CPUs."""

SAMPLE = 32
"""Entries whose ctime `mostly_stale` compares with their file's."""

LARGE = 4000
"""Entries from which `mostly_stale` looks at the ctimes: below, git's refresh, as cheap."""

REFRESH = ("-c", "core.preloadIndex=false", "update-index", "-q", "--refresh")
"""The refresh, without the preload's threads: where files changed, each would be `lstat`ed
twice (by a thread, then by the refresh that hashes it)."""

_ASSUME_VALID = 0x8000
_STAGE = 0x3000
_HASHED_MODES = tuple(mode.to_bytes(4, "big") for mode in (0o100644, 0o100755, 0o120000))


def mostly_stale(source: Path, data: bytes, oid_length: int) -> bool:
    """Whether, in a large index file (`data`), most of the first entries with stat data
    (`SAMPLE` of them) no longer match their file's ctime: every file is then likely to be
    hashed (a `chmod -R`, `chown -R` or restore moves every ctime).

    This decides only which program hashes the files, never what it hashes: git compares each
    entry's stat data with its file's; `hashing` hashes every entry."""
    if int.from_bytes(data[8:12], "big") < LARGE:
        return False
    stated = (entry for entry in read_entries(data, oid_length) if entry.ctime)
    stale = sampled = 0
    for entry in itertools.islice(stated, SAMPLE):
        sampled += 1
        try:
            stale += int(os.lstat(os.fsencode(source) + b"/" + entry.path).st_ctime) != entry.ctime
        except OSError:
            stale += 1
    return stale * 2 > sampled


def free_cpus(cpus: int, running: int) -> int:
    """Threads for `cpus` CPUs with `running` tasks runnable now, this one included: one per
    CPU no other task runs on, at least one and at most `MAX_THREADS`. On a busy host a
    second thread only shares the first one's CPU, at a cost: it never hashes sooner."""
    return max(1, min(MAX_THREADS, cpus - max(0, running - 1)))


def _threads() -> int:
    """`free_cpus` of the CPUs we may run on, with the tasks runnable now (`/proc/loadavg`)."""
    cpus = len(os.sched_getaffinity(0))
    try:
        with open("/proc/loadavg", encoding="ascii") as file:
            running = int(file.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        running = 1
    return free_cpus(cpus, running)


@functools.cache
def _program() -> str:
    """The source of `hashing`, run as a program of its own."""
    return Path(hashing.__file__).read_text(encoding="utf-8")


def _jobs(data: bytes, oid_length: int) -> tuple[list[bytes], list[int], int]:
    """What `hashing` is sent of an index file in format 2 or 3: each entry of a file or
    symlink at stage 0 not marked valid (its mode, object id and path), where each starts, and
    where the entries end."""
    at_flags = 40 + oid_length // 2
    jobs: list[bytes] = []
    where: list[int] = []
    end = 12
    for span in entry_spans(data, oid_length):
        at, end = span.start, span.end
        mode = data[at + 24 : at + 28]
        if mode in _HASHED_MODES and not span.flags & (_ASSUME_VALID | _STAGE):
            path = data[span.named : span.named + span.length]
            jobs.append(mode + data[at + 40 : at + at_flags] + path)
            where.append(at)
    return jobs, where, end


def hashed(s: Scratch, data: bytes, oid_length: int, cwd: Path) -> bytes:
    """The index file `data` with the stat data of each file `hashing` found unchanged (run as
    the reader in the tree `cwd`); every other entry as it was, and no extension."""
    jobs, where, end = _jobs(data, oid_length)
    reader = [str(id_) for id_ in s.reader] if s.reader is not None else ["-", "-"]
    algorithm = "sha1" if oid_length == 40 else "sha256"
    arguments = [algorithm, str(_threads()), *reader]
    stdin = b"".join(job + b"\0" for job in jobs)
    out = s.python("hashing", _program(), arguments, cwd=cwd, stdin=stdin).stdout
    if len(out) != len(hashing.UNKNOWN) * len(jobs):
        raise ValueError("the hashing of the tree answered another number of entries")
    body = bytearray(data[:end])
    for number, at in enumerate(where):
        stated = out[number * 40 : number * 40 + 40]
        if stated == hashing.UNKNOWN:
            continue
        if stated[24:28] != data[at + 24 : at + 28]:
            raise ValueError("the hashing of the tree answered another mode")
        body[at : at + 40] = stated
    return seal(bytes(body), oid_length)


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
    likely to be hashed) in an index of `LARGE` entries or more, every file is hashed by
    `hashing`, in threads (below, git's refresh costs less than starting it)."""
    if every and int.from_bytes(data[8:12], "big") >= LARGE:
        place(s, hashed(s, data, oid_length, cwd), index, mtime_ns)
        return
    place(s, data, index, mtime_ns)
    s.git(REFRESH, env=env, cwd=cwd, ok=(0, 1), as_reader=True)
