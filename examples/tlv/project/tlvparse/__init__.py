"""tlvparse: read type-length-value record files (see README.md for the format)."""

from tlvparse.parser import (
    BLOB,
    GROUP,
    MAGIC,
    TEXT,
    UINT,
    Record,
    TLVError,
    encode,
    parse,
)

__all__ = ["BLOB", "GROUP", "MAGIC", "TEXT", "UINT", "Record", "TLVError", "encode", "parse"]
