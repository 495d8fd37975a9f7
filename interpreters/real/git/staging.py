"""Staging a tree over a base tree in a private index: the tree id of the tree as it is.

Interpreter side (processes, files); the staging rules of SPEC §4, shared by the baseline, the
capture and the changed-files listing. Root (or we) runs the steps that need the base's objects;
the tree's owner runs those that read the tree, with a `GIT_DIR` of ours, never the agent's
`.git`, so nothing of the agent's configuration (fsmonitor, filters, hooks) can run. Nested
repositories stay out; fifos, sockets and devices leave the index.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from interpreters.real.git.command import Scratch
from interpreters.real.git.index_file import index_bytes, load, read_index
from interpreters.real.git.refresh import mostly_stale, refresh

_GITLINK = b"160000"
_NO_MODE = b"000000"
_GITLINK_MODE = 0o160000


def split_z(data: bytes) -> list[bytes]:
    """The fields of git's `-z` output (NUL-separated, NUL-terminated)."""
    parts = data.split(b"\0")
    if parts and not parts[-1]:
        parts.pop()
    return parts


def _index_line(mode: bytes, oid: bytes, path: bytes) -> bytes:
    return mode + b" " + oid + b"\t" + path + b"\0"


def _removal(path: bytes, oid_length: int) -> bytes:
    return _index_line(b"0", b"0" * oid_length, path)


def _special(top: Path, path: bytes) -> bool:
    """Whether `path` (relative to `top`) is a fifo, socket or device, following no symlink."""
    current = os.fsencode(top)
    parts = path.split(b"/")
    for depth, part in enumerate(parts):
        current = current + b"/" + part
        try:
            mode = os.lstat(current).st_mode
        except OSError:
            return False
        if depth < len(parts) - 1 and not stat.S_ISDIR(mode):
            return False
    return not (stat.S_ISREG(mode) or stat.S_ISLNK(mode) or stat.S_ISDIR(mode))


def _gitlink_in(index: Path) -> bool:
    """Whether the index file may hold a gitlink: its mode's bytes appear anywhere in it (or
    the file cannot be read here)."""
    try:
        return _GITLINK_MODE.to_bytes(4, "big") in load(index)
    except (OSError, ValueError):
        return True


def stage(
    s: Scratch,
    source: Path,
    base: str,
    *,
    repo: Path,
    alternates: Path,
    start: Path | None = None,
    links: bool | None = None,
) -> tuple[str, tuple[str, ...]]:
    """Stage `source` over `base` in a fresh private index (SPEC §4); answer the tree id written
    and the paths left out.

    The index starts as a copy of `start`, the baseline's kept index (`kept_index`), when one
    is given: only files whose stat data changed since are hashed, and only those whose bytes
    changed are stored, into objects that are thrown away (stored, not compressed). Otherwise
    it starts from `read-tree <base>` and every file is hashed. Root (or we) runs the steps
    that need the base's objects; the reader runs those that read the tree. New objects go to
    `s.work/objects`; `alternates` holds the base's. `links` says whether the base holds
    gitlinks, when known: with none there nor in the staged index, nothing is to be undone.
    """
    index = s.work / "index"
    objects = s.work / "objects"
    admin = s.environment(repo, index=index, objects=objects, alternates=alternates)
    reader = s.environment(repo, index=index, work_tree=source, objects=objects)
    oid_length = len(base)

    first = start
    if first is None:
        first = index
        s.git(["read-tree", base], env=admin)
    data = load(first)
    if start is None:
        # Gitlinks of the base leave the index while the tree is read: `add` would otherwise
        # run `git status` inside each checked-out nested repository, with its config. (The
        # kept index has none.)
        read = read_index(data, oid_length)
        links = any(entry.mode == _GITLINK_MODE for entry in read.entries)
        if links:
            entries = [entry for entry in read.entries if entry.mode != _GITLINK_MODE]
            data = index_bytes(entries, oid_length, read.version)

    # A refresh first hashes every file whose stat data differ from its entry's (all of them
    # after `read-tree`, or after a `chmod -R` from the kept index) without writing objects:
    # the reader may not see the base's, so `add` alone would store a blob of each of them,
    # changed or not, at several times the cost of hashing them. An entry whose bytes hash as
    # recorded takes the file's stat data; the others are left for `add`, which then writes
    # only the blobs that changed. The refresh decides on content, never on stat data alone;
    # when every file of a large index is to be hashed, `hashing` does it, not git (`refresh`).
    refresh(
        s,
        index,
        data,
        every=start is None or mostly_stale(source, data, oid_length),
        mtime_ns=os.stat(first, follow_symlinks=False).st_mtime_ns,
        oid_length=oid_length,
        env=reader,
        cwd=source,
    )
    tree_args: dict[str, Any] = {"env": reader, "cwd": source, "as_reader": True}
    thrown = [] if start is None else ["-c", "core.looseCompression=0"]
    added = s.git([*thrown, "add", "-A", "--ignore-errors"], ok=(0, 1), **tree_args)

    # Nested repositories stay out of the patch: every gitlink the index gained, changed or
    # lost goes back to the base's entry (or away when the base had none). Nothing to look
    # for when the base has none and no entry of the staged index has a gitlink's mode.
    raw = b""
    if links is not False or _gitlink_in(index):
        raw = s.git(
            [
                "diff-index",
                "--cached",
                "-z",
                "--raw",
                "--no-renames",
                "--ignore-submodules=none",
                base,
            ],
            env=admin,
        ).stdout
    fixes: list[bytes] = []
    fields = split_z(raw)
    for header, path in zip(fields[::2], fields[1::2], strict=True):
        src_mode, dst_mode, src_oid, _dst_oid, _status = header.lstrip(b":").split(b" ")
        if dst_mode == _GITLINK or (src_mode == _GITLINK and dst_mode == _NO_MODE):
            if src_mode == _NO_MODE:
                fixes.append(_removal(path, oid_length))
            else:
                fixes.append(_index_line(src_mode, src_oid, path))
    if fixes:
        s.git(["update-index", "-z", "--index-info"], env=admin, stdin=b"".join(fixes))
        s.hand_over(index)

    # What git left out: tracked paths still unlike the tree ("C": unreadable, or now a fifo,
    # socket or device, which leaves the index) and untracked paths it did not add ("?").
    # Nothing, when `add` met no error and no gitlink came or went: then the listing (another
    # walk of the tree) is spared to a capture that starts from stat data.
    listing: list[bytes] = []
    if start is None or added.code != 0 or fixes:
        listing = split_z(
            s.git(["ls-files", "-z", "-t", "-m", "-o", "--exclude-standard"], **tree_args).stdout
        )
    left = {entry[2:] for entry in listing}
    special = [entry[2:] for entry in listing if entry[:2] == b"C " and _special(source, entry[2:])]
    if special:
        removals = b"".join(_removal(path, oid_length) for path in special)
        s.git(["update-index", "-z", "--index-info"], env=admin, stdin=removals)
    tree = s.git(["write-tree"], env=admin).text()
    return tree, tuple(sorted(os.fsdecode(path) for path in left))
