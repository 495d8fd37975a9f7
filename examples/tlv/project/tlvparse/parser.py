"""Parse TLV record files.

The reader works on one buffer without copying it: a group's children are read through a
`Reader` limited to the group's bytes, like the C tool this module was ported from.
"""

from __future__ import annotations

from dataclasses import dataclass

MAGIC = b"TLV\x01"

TEXT = 0x01
UINT = 0x02
BLOB = 0x03
GROUP = 0x10

HEADER_SIZE = 3  # type (1 byte) + length (2 bytes, big endian)


class TLVError(ValueError):
    """The input is not a well-formed TLV file."""


Value = str | int | bytes | tuple["Record", ...]


@dataclass(frozen=True)
class Record:
    type: int
    offset: int  # where the record's header starts in the input
    value: Value


class Reader:
    """A cursor over `data[pos:end]`."""

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end

    def remaining(self) -> int:
        return self.end - self.pos

    def u8(self) -> int:
        value = self.data[self.pos]
        self.pos += 1
        return value

    def u16(self) -> int:
        high = self.u8()
        return (high << 8) | self.u8()

    def take(self, count: int) -> bytes:
        chunk = self.data[self.pos : self.pos + count]
        self.pos += count
        return chunk

    def sub(self, count: int) -> Reader:
        """A reader over the next `count` bytes; this one moves past them."""
        child = Reader(self.data, self.pos, self.pos + count)
        self.pos += count
        return child


def parse(data: bytes) -> tuple[Record, ...]:
    """Parse a whole file: the magic, then records up to the end."""
    if not data.startswith(MAGIC):
        raise TLVError("not a TLV file (bad magic)")
    return _records(Reader(data, len(MAGIC)))


def _records(reader: Reader) -> tuple[Record, ...]:
    records = []
    while reader.remaining() > 0:
        if reader.remaining() < HEADER_SIZE:
            raise TLVError(f"offset {reader.pos}: truncated record header")
        offset = reader.pos
        kind = reader.u8()
        length = reader.u16()
        records.append(Record(kind, offset, _value(reader, kind, length, offset)))
    return tuple(records)


def _value(reader: Reader, kind: int, length: int, offset: int) -> Value:
    if kind == TEXT:
        try:
            return reader.take(length).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TLVError(f"offset {offset}: text is not UTF-8") from exc
    if kind == UINT:
        if not 1 <= length <= 8:
            raise TLVError(f"offset {offset}: integer of {length} bytes")
        value = 0
        for _ in range(length):
            value = (value << 8) | reader.u8()
        return value
    if kind == GROUP:
        return _records(reader.sub(length))
    return reader.take(length)  # BLOB, and types this version does not know


def encode(kind: int, value: bytes) -> bytes:
    """One record: header and value (`value` is already encoded, e.g. nested records)."""
    if len(value) > 0xFFFF:
        raise TLVError(f"value of {len(value)} bytes does not fit a record")
    return bytes([kind]) + len(value).to_bytes(2, "big") + value
