"""Reading a patch for the guard: which files it touches and how, line by line.

Pure core. `parse_diff` reads the bytes of a git diff (what the capture writes: `diff --git`
headers, modes, text hunks, `GIT binary patch` literals) or a plain unified diff (`--- a/x`,
`+++ b/x`), binary-safe: lines are bytes, paths are decoded as git quotes them. Each file
becomes a `FileChange` with its paths, modes, removed lines and added lines (grouped in runs
of consecutive added lines, so that an array literal spread over lines can be read whole).
Nothing here judges a change; the rules do (`ssegrade.guard._rules`).
"""

from __future__ import annotations

import base64
import re
import struct
import zlib
from dataclasses import dataclass, field

from ssegrade.guard._patching import apply_delta, apply_hunks

__all__ = ["MAX_BINARY", "FileChange", "diff_paths", "parse_diff"]

MAX_BINARY = 16 << 20
"""The most bytes a binary literal of a patch is inflated to (a patch may be hostile)."""

_HUNK = re.compile(rb"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "t": "\t",
    "n": "\n",
    "v": "\v",
    "f": "\f",
    "r": "\r",
    '"': '"',
    "\\": "\\",
}


@dataclass(slots=True)
class FileChange:
    """One file of a patch. `old_path`/`new_path` are None for a created/deleted file; modes
    are git's octal strings (None when the patch does not say); `runs` are the runs of
    consecutive added lines (without their `+`), `removed` the removed lines (without `-`);
    `binary` is a binary change, `literal` the new content of a binary file when the patch
    carries it whole."""

    old_path: str | None = None
    new_path: str | None = None
    old_mode: str | None = None
    new_mode: str | None = None
    runs: list[tuple[bytes, ...]] = field(default_factory=list)
    removed: list[bytes] = field(default_factory=list)
    binary: bool = False
    literal: bytes | None = None
    encoded: list[bytes] | None = field(default=None, repr=False, compare=False)
    """The base85 lines of the new content of a binary file, until `content` inflates them."""
    hunks: list[tuple[int, list[bytes]]] = field(default_factory=list, repr=False, compare=False)
    """Each text hunk: its first old line (1-based) and its lines, each with its mark."""
    delta: list[bytes] | None = field(default=None, repr=False, compare=False)
    """The base85 lines of a binary file's forward delta (`delta N`), for `after`."""

    def content(self) -> bytes | None:
        """The new content of a binary file when the patch carries it whole (`literal`,
        inflated from `encoded` on first use: most gradings never need it)."""
        if self.literal is None and self.encoded is not None:
            self.literal, self.encoded = _binary_literal(self.encoded, 0)[0], None
        return self.literal

    @property
    def path(self) -> str:
        """The file's path after the patch (before it, for a deleted file)."""
        return self.new_path or self.old_path or ""

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path the change touches (both sides of a rename)."""
        return tuple(dict.fromkeys(p for p in (self.old_path, self.new_path) if p))

    @property
    def added(self) -> tuple[bytes, ...]:
        """Every added line, in order."""
        return tuple(line for run in self.runs for line in run)

    def after(self, before: bytes | None, limit: int = MAX_BINARY) -> bytes | None:
        """The file's content after the patch, given its content `before` (None: absent), or
        None when the patch does not say it (a hunk that does not fit, a binary change
        without its data) or it would exceed `limit` bytes."""
        if self.new_path is None:
            return None
        if self.binary:
            whole = self.content()
            if whole is not None or self.delta is None or before is None:
                return whole
            data, _ = _literal_bytes(self.delta, 0)
            try:
                return apply_delta(before, zlib.decompressobj().decompress(data, limit), limit)
            except (zlib.error, ValueError):
                return None
        return apply_hunks(before or b"", self.hunks, limit)


def _unquote(text: str) -> str:
    """A path as git writes it, quoted C-style when it holds odd bytes.

    >>> _unquote('"a/caf\\\\303\\\\251 x"'), _unquote("a/plain")
    ('a/café x', 'a/plain')
    """
    if len(text) < 2 or not (text.startswith('"') and text.endswith('"')):
        return text
    out = bytearray()
    body = text[1:-1]
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "0123" and re.fullmatch(r"[0-7]{3}", body[i + 1 : i + 4]):
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out += _ESCAPES.get(nxt, nxt).encode()
            i += 2
            continue
        out += char.encode()
        i += 1
    return out.decode("utf-8", "replace")


def _strip(path: str) -> str | None:
    """A patch-side path without its `a/`/`b/` prefix; None for `/dev/null`."""
    path = _unquote(path.split("\t", 1)[0].rstrip("\r"))
    if path == "/dev/null":
        return None
    return path.split("/", 1)[1] if "/" in path else path


def _header_paths(rest: str) -> tuple[str | None, str | None]:
    """`a/X b/Y` of a `diff --git` line (quoted or not; X == Y when unquoted is ambiguous)."""
    if rest.startswith('"'):
        end = rest.find('" ', 1)
        while end != -1 and rest[end - 1] == "\\":
            end = rest.find('" ', end + 1)
        if end != -1:
            return _strip(rest[: end + 1]), _strip(rest[end + 2 :])
    if " b/" in rest:
        old, new = rest.rsplit(" b/", 1)
        return _strip(old), new
    left, _, right = rest.partition(" ")
    return _strip(left), _strip(right)


_B85 = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
"""git's base85 alphabet (RFC 1924's, as `base64.b85decode` reads it)."""
_B85_DIGITS = bytes(_B85.find(bytes([code])) % 256 for code in range(256))


def _b85(payload: bytes) -> bytes | None:
    """Whole groups of five base85 digits, decoded at once (twice as fast as line by line);
    None when a character or a group is not base85."""
    if len(payload) % 5 or payload.translate(None, _B85):
        return None
    digits = iter(payload.translate(_B85_DIGITS))
    words = [
        (((a * 85 + b) * 85 + c) * 85 + d) * 85 + e
        for a, b, c, d, e in zip(digits, digits, digits, digits, digits, strict=True)
    ]
    try:
        return struct.pack(f">{len(words)}I", *words)
    except struct.error:  # a group above 2**32 - 1
        return None


def _line_count(line: bytes) -> int:
    """The bytes a base85 line of a binary patch holds (its first character), or -1."""
    size = line[0]
    return size - 64 if 65 <= size <= 90 else size - 96 + 26 if 97 <= size <= 122 else -1


def _literal_bytes(lines: list[bytes], start: int) -> tuple[bytes, int]:
    """The compressed bytes of the base85 lines from `start`, up to the first that is not one;
    (bytes, index of that line)."""
    counts: list[int] = []
    i = start
    while i < len(lines) and lines[i] and (count := _line_count(lines[i])) > 0:
        counts.append(count)
        i += 1
    decoded = _b85(b"".join(line[1:] for line in lines[start:i]))
    if decoded is not None and len(decoded) == sum(-(-count // 4) * 4 for count in counts):
        parts, offset = [], 0
        for count in counts:
            parts.append(decoded[offset : offset + count])
            offset += -(-count // 4) * 4
        return b"".join(parts), i
    data = bytearray()  # a line that is not base85: what comes before it, line by line
    i = start
    while i < len(lines) and lines[i] and (count := _line_count(lines[i])) > 0:
        try:
            data += base64.b85decode(lines[i][1:])[:count]
        except ValueError:
            break
        i += 1
    return bytes(data), i


def _binary_literal(lines: list[bytes], start: int) -> tuple[bytes | None, int]:
    """Inflate the base85 lines of a `literal N` block starting at `start`; (content, index of
    the first line after the block)."""
    data, i = _literal_bytes(lines, start)
    try:
        inflated = zlib.decompressobj().decompress(data, MAX_BINARY)
    except zlib.error:
        return None, i
    return inflated, i


def _skip_block(lines: list[bytes], start: int) -> int:
    """The index of the first line after the base85 lines from `start`."""
    i = start
    while i < len(lines) and lines[i] and _line_count(lines[i]) > 0:
        i += 1
    return i


class _Reader:
    """One pass over the lines of a patch."""

    def __init__(self, data: bytes, *, literals: bool = True) -> None:
        self.literals = literals  # inflate binary files carried whole (else skip them)
        self.lines = data.split(b"\n")
        self.files: list[FileChange] = []
        self.current: FileChange | None = None
        self.fresh = False  # a `diff --git` header whose `---`/`+++` lines are still to come

    def start(self, change: FileChange, *, fresh: bool = False) -> FileChange:
        self.files.append(change)
        self.current = change
        self.fresh = fresh
        return change

    def hunk(self, i: int, old: int, new: int) -> int:
        """Read a hunk's lines after its `@@` line at `i`; the index after the hunk."""
        change = self.current
        assert change is not None
        run: list[bytes] = []
        found = _HUNK.match(self.lines[i])
        start = int(found.group(0).split(b" ")[1][1:].split(b",")[0]) if found else 0
        body: list[bytes] = []
        change.hunks.append((start, body))
        i += 1
        while i < len(self.lines) and (old > 0 or new > 0):
            line = self.lines[i]
            mark = line[:1]
            if mark in (b"+", b"-", b" ", b""):
                body.append(line or b" ")
            if mark == b"+":
                run.append(line[1:])
                new -= 1
            else:
                if run:
                    change.runs.append(tuple(run))
                    run = []
                if mark == b"-":
                    change.removed.append(line[1:])
                    old -= 1
                elif mark in (b" ", b""):
                    old -= 1
                    new -= 1
                elif mark != b"\\":
                    break  # not a hunk line: the hunk was shorter than it said
            i += 1
        if run:
            change.runs.append(tuple(run))
        while i < len(self.lines) and self.lines[i].startswith(b"\\"):
            i += 1  # "\ No newline at end of file"
        return i

    def read(self) -> list[FileChange]:
        lines = self.lines
        i = 0
        while i < len(lines):
            line = lines[i]
            text = line.decode("utf-8", "surrogateescape")
            if line.startswith(b"diff --git "):
                old, new = _header_paths(text[len("diff --git ") :].rstrip("\r"))
                self.start(FileChange(old_path=old, new_path=new), fresh=True)
            elif line.startswith(b"--- ") and i + 1 < len(lines) and lines[i + 1][:4] == b"+++ ":
                old = _strip(text[4:])
                new = _strip(lines[i + 1][4:].decode("utf-8", "surrogateescape"))
                change = self.current if self.fresh else None
                if change is None:
                    change = self.start(FileChange())
                change.old_path, change.new_path = old, new
                self.fresh = False
                i += 2
                continue
            elif (found := _HUNK.match(line)) is not None and self.current is not None:
                old_count = 1 if found.group(1) is None else int(found.group(1))
                new_count = 1 if found.group(2) is None else int(found.group(2))
                i = self.hunk(i, old_count, new_count)
                continue
            elif self.current is not None:
                self.extended(text)
                if line.startswith(b"literal ") and self.current.binary:
                    end = _skip_block(lines, i + 1)
                    change = self.current
                    wanted = (
                        change.literal is None and change.encoded is None and change.delta is None
                    )
                    if self.literals and wanted and change.new_path is not None:
                        change.encoded = lines[i + 1 : end]  # the new side's: inflated on use
                    i = end
                    continue
                if line.startswith(b"delta ") and self.current.binary:
                    end = _skip_block(lines, i + 1)
                    change = self.current
                    if self.literals and change.delta is None and change.literal is None:
                        change.delta = lines[i + 1 : end]
                    i = end
                    continue
            i += 1
        return self.files

    def extended(self, text: str) -> None:
        """An extended header line of the current file (modes, renames, binary)."""
        change = self.current
        assert change is not None
        words = text.rstrip("\r").split(" ")
        if text.startswith("new file mode "):
            change.old_path, change.new_mode = None, words[-1]
        elif text.startswith("deleted file mode "):
            change.new_path, change.old_mode = None, words[-1]
        elif text.startswith("old mode "):
            change.old_mode = words[-1]
        elif text.startswith("new mode "):
            change.new_mode = words[-1]
        elif text.startswith(("rename from ", "copy from ")):
            change.old_path = _unquote(text.split(" ", 2)[2])
        elif text.startswith(("rename to ", "copy to ")):
            change.new_path = _unquote(text.split(" ", 2)[2])
        elif text.startswith(("GIT binary patch", "Binary files ")):
            change.binary = True
        elif text.startswith("index ") and len(words) == 3 and change.old_mode is None:
            change.old_mode = change.new_mode = words[2]


def parse_diff(data: bytes) -> tuple[FileChange, ...]:
    """The files a git or unified diff touches, with what it does to each.

    >>> patch = (b"diff --git a/Makefile b/Makefile\\nindex 1..2 100644\\n--- a/Makefile\\n"
    ...          b"+++ b/Makefile\\n@@ -1,2 +1,2 @@\\n all:\\n-CFLAGS=-fsanitize=address\\n"
    ...          b"+CFLAGS=-O2\\n")
    >>> [(c.path, c.removed, c.added) for c in parse_diff(patch)]
    [('Makefile', [b'CFLAGS=-fsanitize=address'], (b'CFLAGS=-O2',))]
    """
    return tuple(c for c in _Reader(data).read() if c.path)


def diff_paths(data: bytes) -> tuple[str, ...]:
    """Every path a diff touches, in order, once each.

    >>> diff_paths(b"diff --git a/x_test.go b/x_test.go\\nnew file mode 100644\\n")
    ('x_test.go',)
    """
    changes = _Reader(data, literals=False).read()
    return tuple(dict.fromkeys(p for change in changes if change.path for p in change.paths))
