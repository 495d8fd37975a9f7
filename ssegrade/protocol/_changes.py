"""The files a patch changes (`GET /files`), read from git's listing.

Pure core: `changed_files` reads what `git diff-tree -r -z --raw --numstat --no-renames` prints
into `ChangedFile` documents; running git is the daemon's job.
"""

from __future__ import annotations

from returns.result import Failure, Result, Success

from ssegrade.protocol._documents import ChangedFile, ChangeKind

__all__ = ["changed_files"]

_NO_MODE = "000000"
_KINDS: dict[str, ChangeKind] = {"A": "added", "D": "deleted", "M": "modified", "T": "type_changed"}


def _raw_entries(fields: list[bytes]) -> tuple[list[tuple[bytes, bytes]], list[bytes]]:
    """Split `--raw` entries (a header and a path each) from the `--numstat` ones after them."""
    raw: list[tuple[bytes, bytes]] = []
    index = 0
    while index < len(fields) and fields[index].startswith(b":"):
        if index + 1 >= len(fields):
            raise ValueError("a raw entry without its path")
        raw.append((fields[index], fields[index + 1]))
        index += 2
    return raw, fields[index:]


def _changed_file(header: bytes, path: bytes, numstat: bytes | None) -> ChangedFile:
    old_mode, new_mode, old_oid, new_oid, letter = header[1:].decode("ascii").split(" ")
    kind = _KINDS.get(letter[:1])
    if kind is None:
        raise ValueError(f"unexpected change {letter!r}")
    if kind == "modified" and old_oid == new_oid and old_mode != new_mode:
        kind = "mode_changed"
    added = deleted = b"0"
    binary = False
    if numstat is not None:
        added, deleted, counted = numstat.split(b"\t", 2)
        if counted != path:
            raise ValueError("the line counts do not follow the raw entries")
        binary = added == b"-" and deleted == b"-"
    return ChangedFile(
        path=path.decode("utf-8", "backslashreplace"),
        status="added" if kind == "added" else "deleted" if kind == "deleted" else "modified",
        additions=0 if binary else int(added),
        deletions=0 if binary else int(deleted),
        kind=kind,
        old_mode=None if old_mode == _NO_MODE else old_mode,
        new_mode=None if new_mode == _NO_MODE else new_mode,
        binary=binary,
    )


def changed_files(listing: bytes) -> Result[tuple[ChangedFile, ...], str]:
    """The files of `git diff-tree -r -z --raw --numstat --no-renames`, with how they changed.

    Paths come NUL-terminated, so any name reads back as it is (a name that is not UTF-8
    shows its odd bytes as backslash escapes). A mode change alone is `mode_changed`; a file
    that became a symlink (or the other way) is `type_changed`, with `status` `modified`.

    >>> listing = (b":100644 100755 " + b"1" * 40 + b" " + b"1" * 40 + b" M\\0run.sh\\0"
    ...            b":000000 100644 " + b"0" * 40 + b" " + b"2" * 40 + b" A\\0a \\"b\\"\\nc\\0"
    ...            b"0\\t0\\trun.sh\\0" b"3\\t0\\ta \\"b\\"\\nc\\0")
    >>> [(f.path, f.kind, f.status, f.additions) for f in changed_files(listing).unwrap()]
    [('run.sh', 'mode_changed', 'modified', 0), ('a "b"\\nc', 'added', 'added', 3)]
    >>> changed_files(b":100644 100644 x").failure()
    'unreadable list of changed files: a raw entry without its path'
    """
    fields = listing.split(b"\0")
    if fields and not fields[-1]:
        fields.pop()
    try:
        raw, numstat = _raw_entries(fields)
        if numstat and len(numstat) != len(raw):
            raise ValueError("the line counts do not match the raw entries")
        counts: list[bytes | None] = list(numstat) if numstat else [None] * len(raw)
        found = tuple(
            _changed_file(header, path, count)
            for (header, path), count in zip(raw, counts, strict=True)
        )
    except (ValueError, UnicodeDecodeError) as exc:
        return Failure(f"unreadable list of changed files: {exc}")
    return Success(found)
