"""Unified diffs `git apply` takes, written from a file's bytes before and after an edit.

Pure core, for the canonical cheats (`ssegrade.batch._cheats`): a changed, created or deleted
text file becomes one `diff --git` section. Paths git would quote (spaces, quotes, control or
non-ASCII bytes) are refused by `plain_path`: the cheats leave such files alone.
"""

from __future__ import annotations

import difflib
import re

__all__ = ["created", "deleted", "is_text", "modified", "plain_path"]

_PLAIN = re.compile(r"[A-Za-z0-9._+@%=,~/-]+")
_NO_EOL = b"\\ No newline at end of file\n"


def plain_path(path: str) -> bool:
    """Whether `path` is written as it is in a git diff header (no quoting), and relative.

    >>> plain_path("src/a.c"), plain_path("a b.c"), plain_path("../x"), plain_path("/x")
    (True, False, False, False)
    """
    parts = path.split("/")
    return (
        _PLAIN.fullmatch(path) is not None
        and not path.startswith("/")
        and all(p not in ("", ".", "..") for p in parts)
    )


def is_text(data: bytes) -> bool:
    """Whether git would diff `data` as text: no NUL byte in its first 8000 bytes."""
    return b"\0" not in data[:8000]


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) if data else []


def _body(old: bytes, new: bytes, old_name: bytes, new_name: bytes) -> bytes:
    diff = difflib.diff_bytes(
        difflib.unified_diff, _lines(old), _lines(new), old_name, new_name, lineterm=b"\n", n=3
    )
    out: list[bytes] = []
    for line in diff:
        out.append(line)
        if not line.endswith(b"\n"):  # the last line of a file without a final newline
            out.append(b"\n" + _NO_EOL)
    return b"".join(out)


def modified(path: str, old: bytes, new: bytes) -> bytes:
    """The diff of text file `path` from `old` to `new` (empty when they are equal).

    >>> print(modified("a.txt", b"x\\n", b"y\\n").decode(), end="")
    diff --git a/a.txt b/a.txt
    --- a/a.txt
    +++ b/a.txt
    @@ -1 +1 @@
    -x
    +y
    """
    if old == new:
        return b""
    name = path.encode()
    head = b"diff --git a/" + name + b" b/" + name + b"\n"
    return head + _body(old, new, b"a/" + name, b"b/" + name)


def created(path: str, new: bytes) -> bytes:
    """The diff that creates text file `path` holding `new` (mode 100644)."""
    name = path.encode()
    head = b"diff --git a/" + name + b" b/" + name + b"\nnew file mode 100644\n"
    return head + _body(b"", new, b"/dev/null", b"b/" + name)


def deleted(path: str, old: bytes, mode: str = "100644") -> bytes:
    """The diff that deletes text file `path`, which holds `old` (git's `mode`)."""
    name = path.encode()
    head = b"diff --git a/" + name + b" b/" + name + f"\ndeleted file mode {mode}\n".encode()
    return head + _body(old, b"", b"a/" + name, b"/dev/null")
