"""The bytes a literal of a syntax tree spells: a string's (prefix and quotes off, escapes
decoded unless raw) and a char or number literal's byte in an array.

Pure core, under `ssegrade.guard._code`, which folds adjacent literals and arrays with these.
"""

from __future__ import annotations

import re

from ssegrade.guard._literal import decode_escapes
from ssegrade.guard._syntax import Node, text

__all__ = ["ITEMS", "STRINGS", "byte_value", "string_bytes"]

_QUOTES = (b'"""', b"'''", b'"', b"'", b"`")
_PREFIX = re.compile(r"^(?:[bBrRuUfF]{0,2}|L|u8|u|U)(?=[\"'`])")


def string_bytes(node: Node) -> bytes:
    """A string or char literal's bytes: prefix and quotes off, escapes decoded unless raw
    (Python's `r"…"`, Go's backquotes, Rust's `r#"…"#`)."""
    raw = bytes(node.text or b"")
    found = _PREFIX.match(raw.decode("latin-1"))
    prefix, body = raw[: found.end() if found else 0], raw[found.end() if found else 0 :]
    verbatim = b"r" in prefix.lower() or body[:1] == b"`" or node.type == "raw_string_literal"
    if node.type == "raw_string_literal":
        body = body.lstrip(b"r#").rstrip(b"#")
    for quote in _QUOTES:
        if body.startswith(quote) and body.endswith(quote) and len(body) >= 2 * len(quote):
            body = body[len(quote) : -len(quote)]
            break
    return body if verbatim else decode_escapes(body)


STRINGS = {"string_literal", "interpreted_string_literal", "raw_string_literal", "string"}
ITEMS = {"char_literal", "number_literal", "int_literal", "rune_literal", "integer_literal"}


def byte_value(node: Node) -> int | None:
    """The byte a char or number literal of an array spells, or None (not a byte)."""
    if node.type in ("char_literal", "rune_literal"):
        value = string_bytes(node)
        return value[0] if len(value) == 1 else None
    word = text(node).rstrip("uUlL").removesuffix("_u8").removesuffix("u8")
    try:
        number = int(word, 0)
    except ValueError:
        return None
    return number if 0 <= number <= 255 else None
