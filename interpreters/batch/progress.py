"""How a batch speaks while it runs: a live bar on a terminal, with one line above it for each
job that failed or errored (its verdict, run folder and why); else one line per finished job
(its verdict with the patch guard's flags, its run folder, how long it took, and
why it did not pass); quiet, only the last line.

Interpreter layer; everything goes to stderr, so stdout stays free for machine-readable output,
and every line is inert (`ssegrade.internal.text.inert_text`): a job's names cannot drive the
terminal.
The lines of each check of each grading come from the workers, and only when asked for
(`run_batch(checks=True)`, `batch -v`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Protocol

from rich.console import Console, RenderableType
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column
from rich.text import Text

from ssegrade.batch import Tally
from ssegrade.internal.text import inert_text

__all__ = ["LineProgress", "LiveProgress", "QuietProgress", "Reporter", "make_reporter"]


class Reporter(Protocol):
    """Receives a batch's events."""

    def begin(self, tally: Tally) -> None:
        """The batch starts: `tally.total` jobs."""

    def finished(self, tally: Tally, line: str, *, notable: bool = False) -> None:
        """One job finished (graded, cached or skipped); `line` describes it, `notable` when
        it is one an operator must see (it failed, errored or was not graded)."""

    def note(self, message: str) -> None:
        """A message for the operator."""

    def tick(self, tally: Tally) -> None:
        """Time passes (refresh elapsed time and ETA)."""

    def end(self, line: str) -> None:
        """The batch is over; `line` is its last line."""


@dataclass
class LineProgress:
    """One line per finished job on `stream`: `[done/total] <what>`."""

    console: Console

    def begin(self, tally: Tally) -> None:
        """Nothing to draw."""

    def finished(self, tally: Tally, line: str, *, notable: bool = False) -> None:
        """`[done/total] line`."""
        self.console.print(f"[{tally.done}/{tally.total}] {inert_text(line)}", markup=False)

    def note(self, message: str) -> None:
        """The message, inert."""
        self.console.print(inert_text(message), markup=False)

    def tick(self, tally: Tally) -> None:
        """Nothing to refresh."""

    def end(self, line: str) -> None:
        """The last line."""
        self.console.print(inert_text(line), markup=False)


@dataclass
class QuietProgress:
    """Only the last line."""

    console: Console

    def begin(self, tally: Tally) -> None:
        """Nothing to draw."""

    def finished(self, tally: Tally, line: str, *, notable: bool = False) -> None:
        """Nothing to say."""

    def note(self, message: str) -> None:
        """Nothing to say."""

    def tick(self, tally: Tally) -> None:
        """Nothing to refresh."""

    def end(self, line: str) -> None:
        """The last line."""
        self.console.print(inert_text(line), markup=False)


class _Bar(Progress):
    """The live bar on two lines, so that at 80 columns each reads whole: the bar, done/total,
    elapsed time and ETA; under it, the counts."""

    def get_renderables(self) -> Iterable[RenderableType]:
        """The bar's line, then the counts' line."""
        yield self.make_tasks_table(self.tasks)
        for task in self.tasks:
            yield Text(f"  {task.fields.get('counts', '')}", no_wrap=True, overflow="ellipsis")


def _whole(width: int) -> Column:
    return Column(no_wrap=True, min_width=width)


@dataclass
class LiveProgress:
    """A live bar: done/total, elapsed, ETA, and passed, failed, error, cached; a line above
    it for each notable job. Drawn by a console that wraps at words, never past the
    terminal's width (a line the terminal wraps itself would leave the bar drawn twice)."""

    console: Console
    _progress: Progress | None = None
    _task: TaskID | None = None
    _start: float = field(default_factory=time.monotonic)

    def begin(self, tally: Tally) -> None:
        """Draw the bar."""
        self._progress = _Bar(
            TextColumn("grading", table_column=_whole(7)),
            BarColumn(bar_width=None),
            MofNCompleteColumn(table_column=_whole(2 * len(str(tally.total)) + 1)),
            TimeElapsedColumn(table_column=_whole(7)),
            TextColumn("ETA", table_column=_whole(3)),
            TimeRemainingColumn(table_column=_whole(7)),
            console=self.console,
            transient=False,
            expand=True,
        )
        self._progress.start()
        self._task = self._progress.add_task(
            "batch", total=tally.total, completed=tally.done, counts=_counts(tally)
        )

    def finished(self, tally: Tally, line: str, *, notable: bool = False) -> None:
        """Advance the bar; a notable job's line above it."""
        if notable:
            self.note(line)
        self.tick(tally)

    def note(self, message: str) -> None:
        """Print above the bar, wrapped at words."""
        self.console.print(inert_text(message), markup=False, soft_wrap=False)

    def tick(self, tally: Tally) -> None:
        """Refresh the counts."""
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=tally.done, counts=_counts(tally))

    def end(self, line: str) -> None:
        """Stop the bar, print the last line (wrapped at words)."""
        if self._progress is not None:
            self._progress.stop()
        self.console.print(inert_text(line), markup=False, soft_wrap=False)


def _counts(tally: Tally) -> str:
    return (
        f"{tally.passed} passed, {tally.failed} failed, {tally.error} error, {tally.cached} cached"
    )


def make_reporter(stream: IO[str] | None = None, *, quiet: bool = False) -> Reporter:
    """Only the last line when `quiet`; else a live bar when `stream` (default stderr) is a
    terminal, one line per job when it is not."""
    console = Console(file=stream, stderr=stream is None, highlight=False, soft_wrap=True)
    if quiet:
        return QuietProgress(console)
    if console.is_terminal:
        return LiveProgress(Console(file=stream, stderr=stream is None, highlight=False))
    return LineProgress(console)
