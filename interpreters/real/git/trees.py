"""git tree objects read and written in Python: parsing, editing along a few paths, hashing.

Interpreter side (pure functions on bytes; the caller reads the objects). The fidelity proof
(`proof.py`) edits the base tree along the paths a patch touches instead of reading the whole
base into an index: the trees it computes are those `git write-tree` writes for the same
index. As git's index does, an entry that is not a tree gets its canonical mode (`100644` or
`100755` for a file, `120000`, `160000`), and a folder left empty disappears; subtrees off the
patch's paths are kept as they are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from ssegrade.internal.errors import SsegradeError

__all__ = [
    "TREE",
    "Entry",
    "Unusual",
    "ancestors",
    "canonical",
    "compose",
    "parse_tree",
]

TREE = b"40000"
"""The mode of a subtree in a tree object, as git writes it."""

Entry = tuple[bytes, str]
"""The mode (ASCII octal, as in a tree object) and the object id (hex) of one tree entry."""


class Unusual(SsegradeError, ValueError):
    """A tree git would not write (unsorted, duplicated, malformed): the caller falls back to
    git's own way."""


def _sort_key(name: bytes, mode: bytes) -> bytes:
    return name + b"/" if mode == TREE else name


def canonical(mode: bytes) -> bytes:
    """The mode git's index gives an entry of a tree: files are `100644` or `100755`."""
    value = int(mode, 8)
    kind = value & 0o170000
    if kind == 0o040000:
        return TREE
    if kind in (0o120000, 0o160000):
        return b"%o" % kind
    return b"100755" if value & 0o100 else b"100644"


def parse_tree(data: bytes, oid_bytes: int) -> dict[bytes, Entry]:
    """The entries of a raw tree object (name → mode, hex id); raises `Unusual` for one git
    would not have written (entries unsorted or repeated)."""
    found: dict[bytes, Entry] = {}
    previous = b""
    at = 0
    while at < len(data):
        space = data.index(b" ", at)
        nul = data.index(b"\0", space)
        mode, name = data[at:space], data[space + 1 : nul]
        oid = data[nul + 1 : nul + 1 + oid_bytes]
        if len(oid) != oid_bytes or not name or name in found:
            raise Unusual("a malformed tree")
        key = _sort_key(name, mode)
        if found and key <= previous:
            raise Unusual("a tree out of git's order")
        previous = key
        found[name] = (mode, oid.hex())
        at = nul + 1 + oid_bytes
    return found


def _tree_id(entries: Mapping[bytes, Entry], oid_hex: int) -> str:
    ordered = sorted(entries.items(), key=lambda item: _sort_key(item[0], item[1][0]))
    body = b"".join(
        mode + b" " + name + b"\0" + bytes.fromhex(oid) for name, (mode, oid) in ordered
    )
    digest = hashlib.sha1 if oid_hex == 40 else hashlib.sha256
    return digest(b"tree %d\0" % len(body) + body).hexdigest()


def _parent(path: bytes) -> bytes:
    return path.rpartition(b"/")[0]


def _name(path: bytes) -> bytes:
    return path.rpartition(b"/")[2]


def ancestors(paths: Iterable[bytes]) -> set[bytes]:
    """Every folder above the paths, the top (`b""`) included."""
    found = {b""}
    for path in paths:
        above = path
        while above:
            above = _parent(above)
            found.add(above)
    return found


def compose(
    base: Mapping[bytes, dict[bytes, Entry]],
    touched: Iterable[bytes],
    result: Mapping[bytes, Entry],
    oid_hex: int,
) -> str:
    """The id of the top tree that is the base with every `touched` path (a file, a link or a
    gitlink of the patch, as its path in the tree) replaced by what `result` holds for it
    (absent: removed). `base` holds the base's listing of every folder above those paths
    (`ancestors`; absent: the base had no such folder). Folders left empty disappear."""
    touched = set(touched)
    folders = ancestors(touched)
    files_in: dict[bytes, list[bytes]] = {}
    for path in touched:
        files_in.setdefault(_parent(path), []).append(path)
    folders_in: dict[bytes, list[bytes]] = {}
    for child in folders - {b""}:
        folders_in.setdefault(_parent(child), []).append(child)
    made: dict[bytes, str | None] = {}
    for folder in sorted(folders, key=lambda path: -path.count(b"/") - bool(path)):
        entries: dict[bytes, Entry] = {
            name: (mode if mode == TREE else canonical(mode), oid)
            for name, (mode, oid) in base.get(folder, {}).items()
        }
        for path in (*files_in.get(folder, ()), *folders_in.get(folder, ())):
            entries.pop(_name(path), None)
        for path in files_in.get(folder, ()):
            if path in result:
                entries[_name(path)] = result[path]
        for child in folders_in.get(folder, ()):
            tree = made[child]
            if tree is not None:
                if _name(child) in entries:
                    raise Unusual("a path that is both a file and a folder")
                entries[_name(child)] = (TREE, tree)
        made[folder] = _tree_id(entries, oid_hex) if entries or not folder else None
    top = made[b""]
    assert top is not None
    return top
