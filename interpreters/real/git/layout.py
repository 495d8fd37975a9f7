"""What every private repository holds, and who reads a tree: the layout ssegrade writes.

Interpreter side (files). A private repository's `config` and `info/attributes` (SPEC §4:
nothing the agent writes can change the bytes recorded), the layout `git init --bare
--template=` makes, written directly (`lay_out`), and the account that reads a tree owned by
another user when we are root (`reader_of`). Running git is `command.py`'s.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

__all__ = ["ATTRIBUTES", "CONFIG", "Ids", "lay_out", "reader_of"]

Ids = tuple[int, int]
"""A user id and a group id."""

ATTRIBUTES = b"* -text -eol -crlf -ident -filter -working-tree-encoding !diff -merge -whitespace\n"
"""`info/attributes` of every private repository: no `.gitattributes` can change recorded bytes."""

CONFIG = b"""\
[core]
\trepositoryformatversion = 0
\tbare = true
\tfilemode = true
\tsymlinks = true
\tautocrlf = false
\tfsmonitor = false
\tuntrackedCache = false
\ttrustctime = true
\tcheckStat = default
\tignoreStat = false
\tsplitIndex = false
\tpreloadIndex = true
[index]
\tversion = 2
\tskipHash = false
[feature]
\tmanyFiles = false
[gc]
\tauto = 0
[advice]
\taddEmbeddedRepo = false
"""
"""`config` of every private repository. The stat settings make git compare every field of
an entry's stat data with the file's (ctime included) and keep its index in a format
`kept_index` reads; no untracked cache or fsmonitor answers for the tree."""


def lay_out(path: Path, owner: Ids | None = None) -> None:
    """A scratch bare repository with our config and attributes: the layout `git init --bare
    --template=` makes, written directly (a git process per scratch repository is costly).

    Readable by everyone; writable by `owner` only when given, else by us only.
    """
    path.mkdir()
    for folder in ("objects", "refs", "info"):
        (path / folder).mkdir()
    (path / "HEAD").write_bytes(b"ref: refs/heads/main\n")
    (path / "config").write_bytes(CONFIG)
    (path / "info" / "attributes").write_bytes(ATTRIBUTES)
    for parent, dirs, files in os.walk(path):
        for name in (".", *dirs, *files):
            entry = os.path.join(parent, name)
            os.chmod(entry, 0o755 if name in (".", *dirs) else 0o644)
            if owner is not None:
                os.chown(entry, *owner)


def reader_of(source: Path) -> Ids | None:
    """The user the tree-reading commands run as: the tree's owner, when we are root."""
    if os.geteuid() != 0:
        return None
    owner = source.stat()
    if owner.st_uid == 0:
        return None
    try:
        gid = pwd.getpwuid(owner.st_uid).pw_gid
    except KeyError:
        gid = owner.st_gid
    return owner.st_uid, gid
