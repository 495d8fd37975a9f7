"""The per-task lines of the text report: one line per task, written directly.

Interpreter layer, output side. A report may hold 25,000 tasks: their lines are formatted here
with plain string formats, never through a table layout. Each gives the task, its kept runs
each share as `percent passed/of` (only `passed/of` where that would not fit the width; the
intervals are in the other formats; the task's runs are the pass share's `of`); a task name
too long for its column takes a line of its own. Up to `TASK_LIMIT` tasks are kept in memory;
with `--tasks`, every task's numbers go through a spool and are formatted at the end, once the
widest count is known.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from interpreters.report.output import Spool
from interpreters.report.text import Writer, wrap
from ssegrade.internal.checks import grading_order
from ssegrade.report import TaskRow

__all__ = ["SHARES", "TASK_LIMIT", "TaskLines"]

TASK_LIMIT = 40
"""The per-task lines are printed up to this many tasks, unless `--tasks` asks for all."""

SHARES = (("passed", "Passed"), *((check.label, check.short_title) for check in grading_order()))
"""The shares of a row as the text titles them (short titles: 80 columns)."""


def _pct(value: float) -> str:
    return f"{100 * value:.0f}%"


class TaskLines:
    """The per-task lines (see the module's docstring): `add` each task's row, then
    `lines`."""

    def __init__(self, spool: bool) -> None:
        self.rows: list[tuple[str, list[tuple[int, int]]]] = []
        self.spool = Spool() if spool else None
        self.tasks = 0
        self.name = 4
        self.count = 1

    def add(self, row: TaskRow) -> None:
        """Take one task's row."""
        shares = [(getattr(row, key).passed, getattr(row, key).of) for key, _ in SHARES]
        self.tasks += 1
        self.name = max(self.name, len(row.task))
        self.count = max(self.count, len(str(row.runs)))
        if self.spool is not None:
            self.spool.write(json.dumps([row.task, shares]) + "\n")
        elif len(self.rows) <= TASK_LIMIT:
            self.rows.append((row.task, shares))

    def lines(self, width: int, out: Writer) -> None:
        """Write the titles, a rule, and each task's line, none longer than `width` (but
        for counts of more digits than a line can hold)."""
        numbers, text, name = _layout(self.count, self.name, width)
        titles = numbers.format(*(title for _, title in SHARES))
        head = f"{'Task':<{name}}  {titles}" if name else f"Task\n  {titles}"
        rule = "─" * min(width, max(len(line) for line in head.split("\n")))
        out.write(f"{head.rstrip()}\n{rule}\n")
        rows = (
            (json.loads(line) for line in self.spool.lines())
            if self.spool is not None
            else iter(self.rows)
        )
        for task, shares in rows:
            values = numbers.format(*(text(p, of) for p, of in shares)).rstrip()
            if name and len(task) <= name:
                out.write(f"{task:<{name}}  {values}\n")
            else:
                out.write("\n".join(wrap(task, width)) + f"\n{'':<{name}}  {values}\n")


_SMALLEST_NAME = 10
"""Narrower than this, task names take lines of their own above their numbers."""


def _layout(digits: int, longest: int, width: int) -> tuple[str, Callable[[int, int], str], int]:
    """How the numbers of a line read for counts of `digits` digits (`percent passed/of`, or
    `passed/of` only where that does not fit `width`), and the width of the task's column
    (0: each task's name on a line of its own)."""
    options = []
    for value, text in ((5 + 2 * digits + 1, _with_pct), (2 * digits + 1, _counts)):
        cells = [max(len(title), value) for _, title in SHARES]
        numbers = "  ".join(f"{{:<{cell}}}" for cell in cells)
        options.append((numbers, text, sum(cells) + 2 * (len(cells) - 1)))
    for numbers, text, used in options:
        room = width - used - 2
        if room >= min(longest, _SMALLEST_NAME):
            return numbers, text, min(longest, room)
    for numbers, text, used in options:
        if used + 2 <= width:
            return numbers, text, 0
    return options[-1][0], options[-1][1], 0


def _with_pct(passed: int, of: int) -> str:
    return "n/a" if of == 0 else f"{_pct(passed / of)} {passed}/{of}"


def _counts(passed: int, of: int) -> str:
    return "n/a" if of == 0 else f"{passed}/{of}"
