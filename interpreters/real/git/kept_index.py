"""The baseline's kept index: the base tree with the stat data of the tree it was staged from.

Interpreter side (files); SPEC §4. A capture that starts from a copy of this index
instead of `read-tree <base>` hashes only the files whose lstat (size, mtime, ctime, inode,
mode, owner) changed since the baseline was recorded, so it costs what changed. When that is
every file (`chmod -R`, `chown -R`, a restore), each is hashed (without git, in a thread per
free CPU: `refresh`), and only those whose bytes changed are stored (`staging.stage`).

Why stat data can be trusted: the kernel sets a file's ctime to the current time on every
change of its content or metadata, no system call lets a process choose it (`utimensat` sets
atime and mtime, and moves ctime to now), and a file put in another's place is another inode
with its own ctime. git compares whole seconds (built without `USE_NSEC`), so an entry is kept
with its stat data only when both its ctime and mtime are older than `trust_since()`, the
second before the baseline began reading the tree: any later change of that file carries a
ctime of that second or after. Other entries keep no stat data and are rehashed by every
capture (git's own racy-entry rule, which compares an entry's mtime with the index file's,
then has nothing left to catch). The kept index leaves out the base's gitlinks, as a capture
does before `git add`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from interpreters.real.git.index_file import index_bytes, load, new_entry, read_index

_GITLINK = 0o160000


def trust_since() -> int:
    """The first second whose stat data a kept index does not trust: one second before now.

    File times come from the kernel's coarse clock, which may lag `time.time()` by a tick; a
    second of margin covers it.
    """
    return int(time.time()) - 1


def keep(index: Path, dest: Path, *, since: int, oid_length: int) -> bool | None:
    """Write the kept index of a baseline at `dest` from `index`, the index its base tree was
    written from: the base's gitlinks leave it, entries changed at `since` or later lose their
    stat data, and the file keeps the mtime of `index`. Answer whether the base had gitlinks.
    Nothing is kept from an index this module cannot read (answer None): captures then hash
    every file.
    """
    try:
        data = load(index)
        read = read_index(data, oid_length)
    except (OSError, ValueError):
        return None
    kept = [
        new_entry(entry.mode, entry.oid, entry.path)
        if entry.ctime >= since or entry.mtime >= since
        else entry
        for entry in read.entries
        if entry.mode != _GITLINK
    ]
    mtime = os.stat(index, follow_symlinks=False).st_mtime_ns
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
    with os.fdopen(fd, "wb") as file:
        file.write(index_bytes(kept, oid_length, read.version))
        file.flush()
        os.utime(file.fileno(), ns=(mtime, mtime))
    return len(kept) != len(read.entries)
