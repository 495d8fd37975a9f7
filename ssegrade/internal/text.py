"""Text that came from a task, an agent or a script, made inert before a terminal or a log
line shows it.

Pure. A PoC file named `poc\\x1b[2K\\rpassed` must not erase the line `failed: PoC failed`
and print `passed` in its place, nor a name carrying a right-to-left override reorder what
follows it. `inert_text` writes every control character as a visible escape: C0 (line breaks
and tabs included: one line stays one line), DEL, C1, the Unicode format controls (bidi
embeddings, overrides and isolates, zero-width joiners, the byte order mark), the line and
paragraph separators, and lone surrogates (a file name that is not UTF-8). Everything else,
non-ASCII letters included, is kept as it is.

A CSV cell is another concern: `interpreters.report.render.inert` keeps a spreadsheet from
running it as a formula.
"""

from __future__ import annotations

import unicodedata

__all__ = ["inert_text"]

_CONTROL = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _escape(char: str) -> str:
    if unicodedata.category(char) not in _CONTROL:
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert_text(text: str) -> str:
    """`text` with every control character written as an escape (`\\x1b`, `\\u202e`), so
    that it moves no cursor, colours nothing and reorders nothing; printable text is kept.
    Applying it twice changes nothing more.

    >>> print(inert_text("pocs/poc\\x1b[2K\\rpassed"))
    pocs/poc\\x1b[2K\\x0dpassed
    >>> print(inert_text("évil\\u202etxt.exe\\nline\\x07\\x9b"))
    évil\\u202etxt.exe\\x0aline\\x07\\x9b
    >>> inert_text("shell-001/openai/gpt-5/r1 (0.4 s)")
    'shell-001/openai/gpt-5/r1 (0.4 s)'
    """
    if text.isprintable():
        return text
    return "".join(map(_escape, text))
