"""Plain text tables that fit a given width: the layout of the terminal report, by hand.

Interpreter layer, output side, no I/O. A table is columns of cells, each cell one or more
lines; `table` pads them into lines no longer than the width asked. When the cells are too wide
the widest columns narrow first and their cells wrap at spaces (a word longer than its column
folds), so nothing is cut, whatever the width. A row may have a head: lines of its own above
its cells, across the whole width (a long label, say), and the cells are then indented.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "Column",
    "Inert",
    "Row",
    "Writer",
    "fits",
    "fold",
    "minutes",
    "money",
    "p_value",
    "percent",
    "table",
    "wrap",
]

_CONTROLS = {
    code: "\N{REPLACEMENT CHARACTER}"
    for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))
    if chr(code) != "\n"
}
_CONTROLS[ord("\t")] = " "

GAP = "  "
INDENT = "  "
NARROWEST = 4


@dataclass(frozen=True, slots=True)
class Column:
    """A column: its title (lines split at `\\n`) and whether its cells align right."""

    title: str
    right: bool = False


@dataclass(frozen=True, slots=True)
class Row:
    """A row: its cells (lines split at `\\n`) and the head printed above them, if any."""

    cells: Sequence[str]
    head: str = ""


def fold(word: str, width: int) -> list[str]:
    """`word` cut every `width` characters.

    >>> fold("abcdefg", 3)
    ['abc', 'def', 'g']
    """
    return [word[i : i + width] for i in range(0, len(word), width)] or [""]


def wrap(text: str, width: int) -> list[str]:
    """`text` broken into lines of at most `width` characters, at spaces where it can, folding
    a word longer than a line; line breaks in `text` are kept, and so is the indentation of
    each of its lines, on every line it makes.

    >>> wrap("PoC failed: /ssebench/pocs/poc1", 12)
    ['PoC failed:', '/ssebench/po', 'cs/poc1']
    >>> wrap("  t/m/a/r1: Timeout", 12)
    ['  t/m/a/r1:', '  Timeout']
    """
    lines: list[str] = []
    for paragraph in text.split("\n"):
        body = paragraph.lstrip(" ")
        indent = paragraph[: len(paragraph) - len(body)]
        room = max(1, width - len(indent))
        line = ""
        for word in body.split(" "):
            if not word:
                continue
            if line and len(line) + 1 + len(word) <= room:
                line += " " + word
                continue
            if line:
                lines.append(indent + line)
            pieces = fold(word, room)
            lines += [indent + piece for piece in pieces[:-1]]
            line = pieces[-1]
        lines.append(indent + line if line else "")
    return lines


def _widths(columns: Sequence[Column], rows: Sequence[Row], width: int) -> list[int]:
    natural = [max((len(line) for line in c.title.split("\n")), default=0) for c in columns]
    for row in rows:
        for i, cell in enumerate(row.cells):
            natural[i] = max(natural[i], *(len(line) for line in cell.split("\n")))
    room = width - len(GAP) * (len(columns) - 1)
    if any(row.head for row in rows):
        room -= len(INDENT)
    widths = list(natural)
    for narrowest in (NARROWEST, 1):  # down to a few characters, then to one if need be
        while sum(widths) > room and max(widths) > narrowest:
            widest = max(range(len(widths)), key=lambda i: widths[i])
            widths[widest] -= 1
    return widths


def _line(cells: Sequence[str], columns: Sequence[Column], widths: Sequence[int]) -> str:
    out = []
    for text, column, w in zip(cells, columns, widths, strict=True):
        out.append(text.rjust(w) if column.right else text.ljust(w))
    return GAP.join(out).rstrip()


def _block(
    cells: Sequence[str], columns: Sequence[Column], widths: Sequence[int], indent: str
) -> list[str]:
    wrapped = [wrap(cell, w) for cell, w in zip(cells, widths, strict=True)]
    height = max(len(lines) for lines in wrapped)
    return [
        (indent + _line([c[i] if i < len(c) else "" for c in wrapped], columns, widths)).rstrip()
        for i in range(height)
    ]


def fits(columns: Sequence[Column], rows: Sequence[Row], width: int) -> bool:
    """Whether the table fits `width` without wrapping a cell."""
    natural = [max(len(line) for line in c.title.split("\n")) for c in columns]
    for row in rows:
        for i, cell in enumerate(row.cells):
            natural[i] = max(natural[i], *(len(line) for line in cell.split("\n")))
    indent = len(INDENT) if any(row.head for row in rows) else 0
    return indent + sum(natural) + len(GAP) * (len(columns) - 1) <= width


def table(columns: Sequence[Column], rows: Sequence[Row], width: int) -> list[str]:
    """The lines of a table of `rows` under the titles of `columns`, none longer than `width`
    (as long as it leaves each column a character): titles, a rule, then each row (its head
    first, wrapped across the width)."""
    widths = _widths(columns, rows, width)
    stacked = any(row.head for row in rows)
    indent = INDENT if stacked else ""
    lines = _block([c.title for c in columns], columns, widths, indent)
    lines.append("─" * min(width, len(indent) + sum(widths) + len(GAP) * (len(widths) - 1)))
    for row in rows:
        if row.head:
            lines += wrap(row.head, width)
        lines += _block(row.cells, columns, widths, indent)
    return lines


class Writer(Protocol):
    """Where text goes: a file, or `Inert` in front of one."""

    def write(self, text: str, /) -> int:
        """Write `text`."""
        ...


class Inert:
    """Writes text with every control character but the line break shown as `�` (a tab as a
    space): names and messages that came from run folders cannot move a terminal's cursor,
    change its colours or its title. One character for one: the layout stays."""

    def __init__(self, out: Writer) -> None:
        self.out = out

    def write(self, text: str) -> int:
        """Write `text`, inert."""
        return self.out.write(text.translate(_CONTROLS))


# ---------------------------------------------------------------------------- values


def percent(value: float | None) -> str:
    """A share as a whole percentage (`n/a` when there is none)."""
    return "n/a" if value is None else f"{100 * value:.0f}%"


def money(value: float | None) -> str:
    """A spend with two decimals (`—` when unknown)."""
    return "—" if value is None else f"{value:.2f}"


def minutes(value: float | None) -> str:
    """Minutes with one decimal (`—` when unknown)."""
    return "—" if value is None else f"{value:.1f}"


def p_value(value: float) -> str:
    """A p-value: three significant digits, in scientific notation below 0.001."""
    return f"{value:.3g}" if value >= 0.001 else f"{value:.1e}"
