"""Where a report goes, and how it is written while its runs are still being read.

Interpreter layer, output side. The report is folded one task at a time
(`ssegrade.report.Fold`): each task's part goes to a format's `Sink` as soon as it is read,
and the rows, known only at the end, go to `Sink.finish`. A format that prints the rows first
writes what it made of the parts into `Spool`s (temporary files, read back once), so memory
stays flat however many runs the report holds; nothing reaches the output before `finish`, so
an error found at the end (an unknown `--compare` row) leaves no half-written output.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Protocol, TextIO

from interpreters.report.io import RunFiles
from ssegrade.internal.errors import SsegradeError
from ssegrade.report import Comparison, Report, TaskPart, parts_of

__all__ = [
    "MIN_WIDTH",
    "Ending",
    "Reasons",
    "Sink",
    "Spool",
    "WriteFailed",
    "emit",
    "text_width",
    "write_report",
]

MIN_WIDTH = 40
"""The narrowest text report: a narrower `COLUMNS` is taken as this."""


class WriteFailed(SsegradeError):
    """The output cannot be written; the message is one line."""


@dataclass(frozen=True)
class Ending:
    """What a format needs once every task was read: the report's rows and counts (its
    per-run tuples are empty: the parts had them), the comparisons shown together (the one
    asked first, Holm-adjusted over them), and the one asked with `--compare`."""

    report: Report
    comparisons: Sequence[Comparison] = ()
    asked: Comparison | None = None


class Sink(Protocol):
    """A format: takes each task's part as it is read, writes everything at the end."""

    def add(self, part: TaskPart, files: RunFiles) -> None:
        """Take one task's part (`files`: what each of its run folders holds, if asked)."""

    def finish(self, ending: Ending, out: TextIO) -> None:
        """Write the whole output on `out`."""

    def close(self) -> None:
        """Drop what is still spooled (after `finish`, or when the report fails)."""


@dataclass
class Spool:
    """Text kept in an anonymous temporary file until it is copied out once."""

    _file: IO[str] | None = field(default=None, repr=False)

    def file(self) -> IO[str]:
        """The file to write into (made on first use)."""
        if self._file is None:
            # Closed by `copy_to`, `lines` or `close`: no `with` spans those calls.
            self._file = tempfile.TemporaryFile("w+", encoding="utf-8", newline="")  # noqa: SIM115
        return self._file

    def write(self, text: str) -> None:
        """Add text."""
        self.file().write(text)

    def lines(self) -> Iterator[str]:
        """The lines written, each with its line end; then the file is closed."""
        if self._file is None:
            return
        self._file.seek(0)
        try:
            yield from self._file
        finally:
            self.close()

    def copy_to(self, out: TextIO) -> None:
        """Write everything written on `out`, then close the file."""
        if self._file is None:
            return
        self._file.seek(0)
        shutil.copyfileobj(self._file, out, 1 << 20)
        self.close()

    def close(self) -> None:
        """Drop the text (the file had no name; closing removes it)."""
        if self._file is not None:
            self._file.close()
            self._file = None


class Reasons:
    """Why the kept runs that did not pass failed: how many runs had each first failure
    (`error_msg`), at most `limit` distinct messages counted (any further one is `other`)."""

    def __init__(self, limit: int = 10_000) -> None:
        self.counts: Counter[str] = Counter()
        self.other = 0
        self.runs = 0
        self._limit = limit

    def add(self, part: TaskPart) -> None:
        """Count the runs of one task that did not pass."""
        counts = self.counts
        for run in part.runs:
            if run.status == "passed":
                continue
            self.runs += 1
            message = run.error_msg or "(no message)"
            if message in counts or len(counts) < self._limit:
                counts[message] += 1
            else:
                self.other += 1

    def top(self, n: int) -> tuple[list[tuple[str, int]], int]:
        """The `n` most frequent messages with their counts, and how many runs had another."""
        top = self.counts.most_common(n)
        return top, self.runs - sum(count for _, count in top)


def text_width(output: str | None, environ: dict[str, str] | None = None) -> int:
    """The width of a text report: `COLUMNS` when it is a number, else the terminal's when
    the report goes to one, else 80; never below `MIN_WIDTH`."""
    env = os.environ if environ is None else environ
    width = 80
    given = env.get("COLUMNS", "").strip()
    if given.isdigit() and int(given) > 0:
        width = int(given)
    elif output in (None, "-") and sys.stdout.isatty():
        try:
            width = os.get_terminal_size(sys.stdout.fileno()).columns or 80
        except OSError:
            width = 80
    return max(MIN_WIDTH, width)


def _quiet_pipe() -> None:
    """The reader went away (`| head`): stop quietly, as command line tools do."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(1)


def emit(write: Callable[[TextIO], object], output: str | None) -> None:
    """Run `write` on stdout (`output` None or `-`) or on the file `output`. Raises
    `WriteFailed` when the file cannot be written."""
    if output is None or output == "-":
        try:
            write(sys.stdout)
            sys.stdout.flush()
        except BrokenPipeError:
            _quiet_pipe()
        return
    try:
        with open(output, "w", encoding="utf-8", newline="") as out:
            write(out)
    except OSError as exc:
        raise WriteFailed(f"{output}: cannot write ({exc.strerror or exc})") from None


def write_report(
    sink: Sink, report: Report, ending: Ending | None = None, files: RunFiles | None = None
) -> str:
    """A whole `report` through `sink`, as text (`ending` defaults to the report alone,
    `files` to no run folder's files known)."""
    try:
        for part in parts_of(report):
            sink.add(part, files or {})
        out = io.StringIO()
        sink.finish(ending or Ending(report), out)
        return out.getvalue()
    finally:
        sink.close()
