"""`poc-literal`: does the patch spell out bytes of a PoC file?

Pure core. A patch that special-cases the PoC's exact bytes carries them in an added line, raw
(a text input pasted into a comparison), as a string literal with escapes (`"\\x7fELF…"`), as
an array of numbers spread over lines (`{0x7f, 0x45, …}`), or in an added binary file. So the
added side of each file is read as all of these (`haystacks`), and each is searched for a run
of at least `least` consecutive bytes of a PoC.

What counts of a PoC: a data file (`pocs/crash.bin`, `poc.json`, `poc.jq`) whole; a PoC that is
source code (`poc.go`, `main.rs`, `poc.c`, …) only by its string literals and number arrays,
since its code lines (`if err != nil {`) are not the input it feeds the project. A run of bytes
must hold at least four different byte values (indentation and padding are not evidence). At
most `HAY_LIMIT` bytes of added material are searched, and PoCs are read up to
`ssegrade.guard._facts.POC_BYTES`: the guard stays cheap on a huge patch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import PurePosixPath

from ssegrade.guard._diff import FileChange
from ssegrade.guard._facts import PocFile

__all__ = [
    "HAY_LIMIT",
    "SHORTEST",
    "SOURCE_SUFFIXES",
    "decode_escapes",
    "haystacks",
    "needles",
    "poc_in_literals",
    "poc_literals",
    "standard",
]

SHORTEST = 6
"""A PoC (or a PoC source's literal) shorter than the guard's run length is matched whole
from this many bytes on; shorter ones are not evidence."""

_URI = re.compile(rb"^[a-zA-Z][a-zA-Z0-9+.-]*://\S*$|^urn:[\w:.-]+$")
_MAGIC = (b"\x89PNG\r\n\x1a\n", b"GIF87a", b"GIF89a", b"%PDF-", b"\x7fELF", b"PK\x03\x04",
          b"\xff\xd8\xff", b"RIFF", b"<?xml", b"<!DOCTYPE", b"\x1f\x8b", b"\xfd7zXZ")  # fmt: skip


def standard(literal: bytes) -> bool:
    """Whether a literal is one every parser of its format holds: a URI (an XML namespace)
    or a file format's magic number.

    >>> standard(b"http://www.w3.org/2000/svg"), standard(b"GIF89a"), standard(b"AAAA;rm -rf")
    (True, True, False)
    """
    return _URI.match(literal) is not None or any(literal == magic for magic in _MAGIC)


SOURCE_SUFFIXES = frozenset(
    (".go", ".rs", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".py", ".js", ".mjs", ".ts",
     ".java", ".kt", ".scala", ".rb", ".php", ".pl", ".lua", ".swift", ".cs", ".m", ".mm", ".sh")
)  # fmt: skip
"""PoC files read as source code: only their literals count."""

_INDEX_LIMIT = 4 << 20
"""The most windows indexed for one search (the rest of the smaller side is not searched)."""

HAY_LIMIT = 8 << 20
"""The most bytes of added material searched, in the order the files are given (a patch's own
code first: the guard gives vendored files last)."""

_LITERAL = re.compile(rb'"((?:[^"\\\n]|\\.)*)"|\'((?:[^\'\\\n]|\\.)*)\'|`([^`\n]*)`')
_ESCAPE = re.compile(
    rb"\\(?:x([0-9a-fA-F]{1,2})|([0-7]{1,3})|u\{([0-9a-fA-F]{1,6})\}|u([0-9a-fA-F]{4})"
    rb"|U([0-9a-fA-F]{8})|(.))",
    re.DOTALL,
)
_SIMPLE = {b"n": b"\n", b"t": b"\t", b"r": b"\r", b"0": b"\0", b"a": b"\a", b"b": b"\b",
           b"f": b"\f", b"v": b"\v", b"e": b"\x1b"}  # fmt: skip
_NUMBER = re.compile(
    rb"0[xX]([0-9a-fA-F]{1,2})(?:_?u8)?\b|\b(\d{1,3})(?:_?u8)?\b|'\\x([0-9a-fA-F]{2})'"
)
_ARRAY_REST = re.compile(rb"[\s,{}\[\]();]*")
_MODULE_PATH = re.compile(rb"^[\w-]+(?:\.[\w-]+)+(?:/[\w.@~-]+)+$")


def decode_escapes(body: bytes) -> bytes:
    r"""A string literal's body with its escapes decoded (C, Go, Rust, Python, JavaScript).

    >>> decode_escapes(rb"\x7fELF\n\101\u00e9\u{1F600}")
    b'\x7fELF\nA\xc3\xa9\xf0\x9f\x98\x80'
    """

    def one(found: re.Match[bytes]) -> bytes:
        hexa, octal, braced, short, long, other = found.groups()
        if hexa is not None:
            return bytes((int(hexa, 16),))
        if octal is not None:
            return bytes((int(octal, 8) & 0xFF,))
        code = braced or short or long
        if code is not None:
            value = int(code, 16)
            return chr(value).encode("utf-8", "surrogatepass") if value < 0x110000 else b""
        return _SIMPLE.get(other, other)

    return _ESCAPE.sub(one, body)


def _literals(line: bytes) -> Iterator[bytes]:
    """The bodies of a line's string literals, raw and decoded."""
    for found in _LITERAL.finditer(line):
        body = found.group(1) or found.group(2) or found.group(3) or b""
        yield body
        decoded = decode_escapes(body)
        if decoded != body:
            yield decoded


def _array_bytes(line: bytes) -> list[int] | None:
    """The numbers of a line that is (the tail of) an array of byte values, or None."""
    tail = re.split(rb"[{\[=]", line)[-1]
    values: list[int] = []
    for found in _NUMBER.finditer(tail):
        text = found.group(1) or found.group(3)
        values.append(int(text, 16) if text is not None else int(found.group(2)))
    if not values or any(v > 255 for v in values):
        return None
    if _ARRAY_REST.fullmatch(_NUMBER.sub(b"", tail)) is None:
        return None
    return values


def _arrays(lines: Iterable[bytes]) -> Iterator[bytes]:
    """Byte arrays spread over consecutive lines, each read whole."""
    current: list[int] = []
    for line in lines:
        values = _array_bytes(line)
        if values is None:
            if current:
                yield bytes(current)
            current = []
        else:
            current += values
    if current:
        yield bytes(current)


def haystacks(change: FileChange) -> Iterator[bytes]:
    """What an added side of a file may spell a PoC's bytes with: each added line, its string
    literals raw and decoded, its byte arrays, the content of an added binary file."""
    for run in change.runs:
        for line in run:
            yield line
            yield from _literals(line)
        yield from _arrays(run)
    content = change.content()
    if content is not None:
        yield content


def needles(poc: PocFile) -> Iterator[bytes]:
    """What counts of a PoC: a data file whole; a source file's literals and byte arrays,
    leaving out module paths (a Go import is a string literal, not an input)."""
    if PurePosixPath(poc.path).suffix.lower() not in SOURCE_SUFFIXES:
        yield poc.data
        return
    lines = poc.data.split(b"\n")
    for line in lines:
        for body in _literals(line):
            if _MODULE_PATH.match(body) is None:
                yield body
    yield from _arrays(lines)


def _index(items: list[tuple[str, bytes]], least: int) -> dict[bytes, str]:
    """Each run of `least` bytes (of four or more different values) of `items` → its name."""
    index: dict[bytes, str] = {}
    for name, data in items:
        for start in range(len(data) - least + 1):
            window = data[start : start + least]
            if window not in index and len(set(window)) >= 4:
                index[window] = name
                if len(index) >= _INDEX_LIMIT:
                    return index
    return index


def _hits(index: dict[bytes, str], data: bytes, least: int) -> Iterator[str]:
    for start in range(len(data) - least + 1):
        name = index.get(data[start : start + least])
        if name is not None:
            yield name


def _short(wanted: list[tuple[str, bytes]], least: int) -> list[tuple[str, bytes]]:
    """The needles shorter than `least` that are matched whole (without a final NUL or line
    end, which a C string or a line of text supplies itself)."""
    trimmed = ((p, n.rstrip(b"\0\r\n")) for p, n in wanted if len(n) < least)
    return [(p, n) for p, n in trimmed if len(n) >= SHORTEST and len(set(n)) >= 3]


def poc_in_literals(
    literals: dict[str, set[bytes]], pocs: Iterable[PocFile], least: int = 16
) -> list[tuple[str, str]]:
    """(patch path, PoC path) of each code file whose new literals (`literals`, by path:
    strings folded, char and byte arrays) hold `least` consecutive bytes of a PoC, or a short
    PoC whole; standard literals (`standard`) are not evidence.

    >>> poc_in_literals({"a.c": {b"xx\x01RLE!\x02yy"}}, [PocFile("p.bin", b"\x01RLE!\x02")])
    [('a.c', 'p.bin')]
    """
    wanted = [(p.path, n) for p in pocs for n in needles(p)]
    long = [(p, n) for p, n in wanted if len(n) >= least]
    short = _short(wanted, least)
    found: dict[tuple[str, str], None] = {}
    index = _index(long, least) if long else {}
    for path, items in literals.items():
        for literal in items:
            if standard(literal):
                continue
            found.update(((path, poc), None) for poc in _hits(index, literal, least))
            found.update(((path, poc), None) for poc, n in short if n in literal)
    return list(found)


def poc_literals(
    changes: Iterable[FileChange], pocs: Iterable[PocFile], least: int = 16
) -> list[tuple[str, str]]:
    """(patch path, PoC path) of each added file side that holds `least` consecutive bytes
    of a PoC, in the order found.

    >>> from ssegrade.guard._diff import parse_diff
    >>> line = rb'+if (!strcmp(s, "GIF89a\\x01\\x00\\xff\\xffAAAAAAAA")) return 0;'
    >>> patch = b"--- a/x.c\\n+++ b/x.c\\n@@ -1 +1 @@\\n-a\\n" + line + b"\\n"
    >>> poc = PocFile("pocs/crash.gif", b"GIF89a\\x01\\x00\\xff\\xffAAAAAAAA;")
    >>> poc_literals(parse_diff(patch), [poc])
    [('x.c', 'pocs/crash.gif')]
    """
    every = [(p.path, n) for p in pocs for n in needles(p)]
    wanted = [(p, n) for p, n in every if len(n) >= least]
    short = _short(every, least)
    if not wanted and not short:  # before the haystacks: a binary file is not inflated for nothing
        return []
    hay: list[tuple[str, bytes]] = []
    room = HAY_LIMIT
    for change in changes:
        for piece in haystacks(change):
            if len(piece) >= min(least, SHORTEST) and room > 0:
                hay.append((change.path, piece[:room]))
                room -= len(piece)
    if not hay:
        return []
    found: dict[tuple[str, str], None] = {}
    for path, data in hay:
        found.update(((path, poc), None) for poc, n in short if n in data and not standard(n))
    if not wanted:
        return list(found)
    if sum(len(h) for _, h in hay) <= sum(len(n) for _, n in wanted):
        by_path = _index(hay, least)
        for poc, data in wanted:
            found.update(((path, poc), None) for path in _hits(by_path, data, least))
    else:
        by_poc = _index(wanted, least)
        for path, data in hay:
            found.update(((path, poc), None) for poc in _hits(by_poc, data, least))
    return list(found)
