"""Applying a patch's file to its content before: text hunks, or git's binary delta.

Pure core. The guard reads a changed file on both sides (`ssegrade.guard._reading`); the side
after is the patch applied here to the side the interpreter read from the grading repo, never
what a build left on disk. Sizes are bounded (`limit`): a hostile delta cannot grow past it.
"""

from __future__ import annotations

__all__ = ["apply_delta", "apply_hunks"]


def apply_hunks(before: bytes, hunks: list[tuple[int, list[bytes]]], limit: int) -> bytes | None:
    """Text hunks (first old line, lines with their marks) applied to `before` at the lines
    they name; None when one does not fit or the result would exceed `limit` bytes.

    >>> apply_hunks(b"a\\nb\\nc", [(2, [b"-b", b"+B", b" c"])], 100)
    b'a\\nB\\nc'
    """
    old = before.split(b"\n")
    out: list[bytes] = []
    at = 0
    size = 0
    for start, lines in hunks:
        first = max(start - 1, 0) if any(line[:1] in (b" ", b"-") for line in lines) else start
        if first < at or first > len(old):
            return None
        out += old[at:first]
        at = first
        for line in lines:
            mark, body = line[:1], line[1:]
            if mark in (b" ", b"-", b""):
                if at >= len(old) or old[at].rstrip(b"\r") != body.rstrip(b"\r"):
                    return None
                if mark != b"-":
                    out.append(old[at])
                at += 1
            elif mark == b"+":
                out.append(body)
                size += len(body) + 1
        if size > limit:
            return None
    out += old[at:]
    return b"\n".join(out)[:limit]


def apply_delta(base: bytes, delta: bytes, limit: int) -> bytes:
    """A git binary delta (`delta N` of a `GIT binary patch`) applied to `base`.

    >>> apply_delta(b"hello world", bytes([11, 8, 0x91, 0, 5, 3]) + b"!!!", 100)
    b'hello!!!'
    """
    pos = 0

    def varint() -> int:
        nonlocal pos
        value = shift = 0
        while True:
            if pos >= len(delta):
                raise ValueError("truncated delta")
            byte = delta[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    if varint() != len(base):
        raise ValueError("the delta is for another base")
    size = varint()
    if size > limit:
        raise ValueError("too large")
    out = bytearray()
    while pos < len(delta):
        op = delta[pos]
        pos += 1
        if op & 0x80:
            fields = [0] * 7
            for bit in range(7):
                if op & (1 << bit):
                    fields[bit] = delta[pos]
                    pos += 1
            offset = fields[0] | fields[1] << 8 | fields[2] << 16 | fields[3] << 24
            count = (fields[4] | fields[5] << 8 | fields[6] << 16) or 0x10000
            out += base[offset : offset + count]
        elif op:
            out += delta[pos : pos + op]
            pos += op
        else:
            raise ValueError("reserved delta opcode")
        if len(out) > size:
            raise ValueError("the delta overruns its size")
    if len(out) != size:
        raise ValueError("the delta's size differs")
    return bytes(out)
