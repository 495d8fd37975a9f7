"""Source code as syntax trees for the guard: the language of a path, its parse, and C's own
simple macros expanded.

Pure core: parsing bytes in memory, no I/O. The parsers are tree-sitter's (the `guard` extra);
they are imported on first use, so the core imports without them: `available()` says whether
they are there, and the guard reads paths alone (with a note) when they are not.

`parse` blanks NUL bytes first (a NUL in a comment makes git call a file binary; the code
around it is still code). `expand_c` blanks comments and expands the file's own `#define`s,
object-like and function-like with `#` and `##`, keeping every line where it was, so a
token-pasted name (`J(__as, an_default_options)`) is read as the name it builds.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import PurePosixPath
from typing import Any

__all__ = ["LANGUAGES", "Node", "available", "expand_c", "language_of", "nodes", "parse", "text"]

LANGUAGES = {
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".go": "go",
    ".rs": "rust",
    ".py": "python",
    ".pyw": "python",
}
"""The suffixes whose files the guard reads as code, and their language."""

Node = Any
"""A tree-sitter node (the package may be absent, so it is not named in types)."""

_MAX_EXPANDED = 8 << 20
_PASSES = 8
_TOKEN = re.compile(
    rb'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|[A-Za-z_]\w*|\#\#|\#|\s+|.', re.DOTALL
)


def language_of(path: str) -> str | None:
    """The language the guard reads `path` as, by its suffix; None: not read as code.

    >>> language_of("src/a.C"), language_of("x/main.go"), language_of("README")
    ('c', 'go', None)
    """
    return LANGUAGES.get(PurePosixPath(path).suffix.lower())


_GRAMMARS = {language: f"tree_sitter_{language}" for language in sorted(set(LANGUAGES.values()))}
"""Each language's grammar module (the `guard` extra)."""


@cache
def _parser(language: str) -> Any:
    """The parser of `language`, made once per process, on first use: a grading loads the
    grammars of the languages its patch changes, no other."""
    import tree_sitter  # noqa: PLC0415 - the `guard` extra, imported on first use

    grammar = importlib.import_module(_GRAMMARS[language])
    return tree_sitter.Parser(tree_sitter.Language(grammar.language()))


@cache
def available() -> bool:
    """Whether the parsers (the `guard` extra) are installed: tree-sitter and every grammar
    found, none loaded (`_parser` loads each when a file of its language is read)."""
    try:
        return all(importlib.util.find_spec(name) for name in ("tree_sitter", *_GRAMMARS.values()))
    except (ImportError, ValueError):
        return False


def parse(language: str, data: bytes) -> Node:
    """The root node of `data` parsed as `language` (NUL bytes read as spaces)."""
    return _parser(language).parse(data.replace(b"\0", b" ")).root_node


def nodes(root: Node, prune: Callable[[Node], bool] | None = None) -> Iterator[Node]:
    """Every node under `root`, depth first, in source order (no recursion); a node `prune`
    holds true of is left out with everything under it."""
    stack = [root]
    while stack:
        node = stack.pop()
        if prune is not None and prune(node):
            continue
        yield node
        stack.extend(reversed(node.children))


def text(node: Node) -> str:
    """A node's source text."""
    return bytes(node.text or b"").decode("utf-8", "replace")


def _blank(data: bytearray, node: Node) -> None:
    for i in range(node.start_byte, node.end_byte):
        if data[i] not in (0x0A, 0x0D):
            data[i] = 0x20


def _macros(root: Node) -> dict[bytes, tuple[list[bytes] | None, bytes]]:
    """The file's `#define`s: name → (parameters or None, body)."""
    found: dict[bytes, tuple[list[bytes] | None, bytes]] = {}
    for node in nodes(root):
        if node.type not in ("preproc_def", "preproc_function_def"):
            continue
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None:
            continue
        body = b"" if value is None else bytes(value.text).replace(b"\\\n", b" ").strip()
        params = node.child_by_field_name("parameters")
        names = None
        if params is not None:
            names = [bytes(p.text) for p in params.named_children]
        found[bytes(name.text)] = (names, body)
    return found


def _closing(tokens: list[bytes]) -> dict[int, int]:
    """Each `(` token's index → the index of the `)` that closes it (unclosed ones left out)."""
    pairs: dict[int, int] = {}
    open_: list[int] = []
    for index, token in enumerate(tokens):
        if token == b"(":
            open_.append(index)
        elif token == b")" and open_:
            pairs[open_.pop()] = index
    return pairs


def _arguments(
    tokens: list[bytes], start: int, closing: dict[int, int]
) -> tuple[list[bytes], int] | None:
    """The arguments of a call whose `(` is at `start` or after blanks; (args, index after)."""
    i = start
    while i < len(tokens) and tokens[i].isspace():
        i += 1
    end = closing.get(i)
    if end is None:
        return None
    depth, current, args = 0, bytearray(), []
    for token in tokens[i + 1 : end]:
        if token == b"(":
            depth += 1
        elif token == b")":
            depth -= 1
        elif token == b"," and depth == 0:
            args.append(bytes(current).strip())
            current = bytearray()
            continue
        current += token
    args.append(bytes(current).strip())
    return args, end + 1


def _substitute(params: list[bytes], args: list[bytes], body: bytes) -> bytes:
    values = dict(zip(params, args, strict=False))
    tokens = _TOKEN.findall(body)
    out: list[bytes] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == b"#" and i + 1 < len(tokens) and tokens[i + 1] in values:
            out.append(b'"' + values[tokens[i + 1]].replace(b'"', b'\\"') + b'"')
            i += 2
            continue
        out.append(values.get(token, token))
        i += 1
    return re.sub(rb"\s*##\s*", b"", b"".join(out))


def _expand_once(
    data: bytes, macros: dict[bytes, tuple[list[bytes] | None, bytes]]
) -> bytes | None:
    """One pass of expansion; None when it would grow past `_MAX_EXPANDED` bytes."""
    tokens = _TOKEN.findall(data)
    closing = _closing(tokens)
    out: list[bytes] = []
    size = 0
    i = 0
    while i < len(tokens):
        if size > _MAX_EXPANDED:
            return None
        size += len(out[-1]) if out else 0
        token = tokens[i]
        macro = macros.get(token)
        if macro is None:
            out.append(token)
            i += 1
            continue
        params, body = macro
        if params is None:
            out.append(body)
            i += 1
            continue
        call = _arguments(tokens, i + 1, closing)
        if call is None:
            out.append(token)
            i += 1
            continue
        args, end = call
        lines = sum(t.count(b"\n") for t in tokens[i:end])
        out.append(_substitute(params, args, body).replace(b"\n", b" ") + b"\n" * lines)
        i = end
    return b"".join(out)


def expand_c(language: str, data: bytes) -> bytes:
    """`data` (C or C++) without its comments and with its own `#define`s expanded in the
    code, every line kept in place; `data` itself when it defines no macro."""
    root = parse(language, data)
    blanked = bytearray(data.replace(b"\0", b" "))
    for node in nodes(root):
        if node.type == "comment":
            _blank(blanked, node)
    macros = _macros(root)
    if not macros:
        return bytes(blanked)
    for node in nodes(root):
        if node.type in ("preproc_def", "preproc_function_def"):
            _blank(blanked, node)
    expanded = bytes(blanked)
    for _ in range(_PASSES):
        again = _expand_once(expanded, macros)
        if again is None or again == expanded:
            break
        expanded = again
    return expanded
