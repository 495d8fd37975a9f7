"""How a batch speaks while it runs: a live bar on a terminal, else one line per finished job
(its verdict, its run folder, how long it took); quiet, only the last line.

Interpreter layer; everything goes to stderr, so stdout stays free for machine-readable output,
and every line is inert (`ssegrade.text.inert_text`): a job's names cannot drive the terminal.
The lines of each check of each grading come from the workers, and only when asked for
(`run_batch(checks=True)`, `batch -v`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import IO, Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ssegrade.batch import Tally
from ssegrade.text import inert_text

__all__ = ["LineProgress", "LiveProgress", "QuietProgress", "Reporter", "make_reporter"]


class Reporter(Protocol):
    """Receives a batch's events."""

    def begin(self, tally: Tally) -> None:
        """The batch starts: `tally.total` jobs."""

    def finished(self, tally: Tally, line: str) -> None:
        """One job finished (graded, cached or skipped); `line` describes it."""

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

    def finished(self, tally: Tally, line: str) -> None:
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

    def finished(self, tally: Tally, line: str) -> None:
        """Nothing to say."""

    def note(self, message: str) -> None:
        """Nothing to say."""

    def tick(self, tally: Tally) -> None:
        """Nothing to refresh."""

    def end(self, line: str) -> None:
        """The last line."""
        self.console.print(inert_text(line), markup=False)


@dataclass
class LiveProgress:
    """A live bar: done/total, passed, failed, error, cached, elapsed, ETA."""

    console: Console
    _progress: Progress | None = None
    _task: TaskID | None = None
    _start: float = field(default_factory=time.monotonic)

    def begin(self, tally: Tally) -> None:
        """Draw the bar."""
        self._progress = Progress(
            TextColumn("grading"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(
            "batch", total=tally.total, completed=tally.done, counts=_counts(tally)
        )

    def finished(self, tally: Tally, line: str) -> None:
        """Advance the bar."""
        self.tick(tally)

    def note(self, message: str) -> None:
        """Print above the bar."""
        self.console.print(inert_text(message), markup=False)

    def tick(self, tally: Tally) -> None:
        """Refresh the counts."""
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=tally.done, counts=_counts(tally))

    def end(self, line: str) -> None:
        """Stop the bar, print the last line."""
        if self._progress is not None:
            self._progress.stop()
        self.console.print(inert_text(line), markup=False)


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
    return LiveProgress(console) if console.is_terminal else LineProgress(console)
