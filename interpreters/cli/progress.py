"""Progress lines of a grading on stderr: one when a check starts, one when it ends.

Interpreter layer, the display behind `interpreters.real.logs.StderrHandler`. On a terminal, a
check that is running shows a live elapsed time (a 30-minute build is never silent), replaced
by its final line when it ends; elsewhere (a log file, CI) each start and end is one plain
line. Every line is inert (`ssegrade.internal.text.inert_text`). Rich is loaded with the first line
shown: a command that says nothing (`--help`, `--version`) never pays for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ssegrade.internal.text import inert_text

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

__all__ = ["CheckProgress"]


@dataclass(slots=True)
class CheckProgress:
    """`say` prints a line; `started` shows a check running until the next line."""

    _console: Console | None = None
    _live: Progress | None = None

    @property
    def console(self) -> Console:
        """The console on stderr, made on first use."""
        if self._console is None:
            from rich.console import Console  # noqa: PLC0415 - rich only once a line is shown

            self._console = Console(stderr=True, highlight=False)
        return self._console

    def _stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def say(self, message: str) -> None:
        """Print one line (ending the live display of a running check, if any)."""
        self._stop()
        # On a terminal, wrapped at words (a terminal wraps a long line mid-word).
        self.console.print(
            inert_text(message), markup=False, soft_wrap=not self.console.is_terminal
        )

    def started(self, message: str) -> None:
        """A check began: a live elapsed time on a terminal, else one line."""
        self._stop()
        message = inert_text(message)
        if not self.console.is_terminal:
            self.console.print(message, markup=False, soft_wrap=True)
            return
        from rich.progress import (  # noqa: PLC0415 - see `console`
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        live = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}", markup=False),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        live.add_task(message, total=None)
        live.start()
        self._live = live

    def close(self) -> None:
        """End the live display (at the end of grading, or on an interrupt)."""
        self._stop()
