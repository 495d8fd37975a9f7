"""How ssegrade speaks while it works: progress lines and notes, as `logging` records.

Interpreter layer. Every module logs under the `interpreters` logger (by its own name): a note
or a warning at WARNING, a progress line (a check that began or ended, a job finished, a
request served) at INFO; a record marked `running` (`RUNNING`) is a check that began. Nothing
is shown unless a handler is attached: the commands attach `StderrHandler` with `speaking`,
an embedder attaches its own (or none: ssegrade then stays silent). Notes also go to the
run's `logs/notes.log`, which the results writer keeps. stdout is never written here: it
carries only the verdict or the report. Every line shown is inert
(`ssegrade.internal.text.inert_text`):
a name a task, an agent or a script chose cannot drive the operator's terminal.
"""

from __future__ import annotations

import copy
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from ssegrade.internal.text import inert_text

__all__ = [
    "LOGGER",
    "RUNNING",
    "Display",
    "StderrHandler",
    "console",
    "level_of",
    "running",
    "speaking",
]

LOGGER = "interpreters"
"""The logger every module of the interpreters logs under."""

RUNNING = "running"
"""The attribute of a record that says a check began (shown live until the next line)."""

logging.getLogger(LOGGER).addHandler(logging.NullHandler())  # silent unless asked
_SHOWN: list[StderrHandler] = []


def running() -> dict[str, object]:
    """The `extra` of a record saying that a check began."""
    return {RUNNING: True}


def level_of(*, quiet: bool = False, verbose: bool = False) -> int:
    """The level a command's `-q`/`-v` ask for: ERROR (quiet), DEBUG (verbose), else INFO."""
    return logging.ERROR if quiet else logging.DEBUG if verbose else logging.INFO


class Display(Protocol):
    """A live display of the check that is running (the command line's `CheckProgress`)."""

    def started(self, message: str) -> None:
        """Show `message`, a check that began, until the next line."""

    def close(self) -> None:
        """End the display, if any is shown."""


class StderrHandler(logging.Handler):
    """One line per record on stderr (as it is when the record comes, so that a live display
    drawn there keeps it above itself). With `progress`, a check that began shows a live
    elapsed time on a terminal until the next line."""

    def __init__(self, progress: Display | None = None, prefix: str = "") -> None:
        super().__init__()
        self.progress = progress
        self.prefix(prefix)

    def prefix(self, text: str) -> None:
        """Start each line with `text` from now on."""
        self.setFormatter(logging.Formatter(inert_text(text).replace("%", "%%") + "%(message)s"))

    def show(self, level: int) -> None:
        """Show the records of `level` and above from now on."""
        self.setLevel(level)
        logger = logging.getLogger(LOGGER)
        logger.setLevel(min(h.level for h in _SHOWN) if self in _SHOWN else level)

    def format(self, record: logging.LogRecord) -> str:
        """The record's line, its message inert (`inert_text`): one line, no control."""
        shown = copy.copy(record)
        shown.msg, shown.args = inert_text(record.getMessage()), None
        return super().format(shown)

    def emit(self, record: logging.LogRecord) -> None:
        """Write the record's line (ending the live display of a running check first)."""
        try:
            line = self.format(record)
            if self.progress is not None and getattr(record, RUNNING, False):
                self.progress.started(line)
                return
            self.settle()
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - logging's own rule: a handler never raises
            self.handleError(record)

    def settle(self) -> None:
        """End a live display, if any (before the verdict is printed, say)."""
        if self.progress is not None:
            self.progress.close()

    def close(self) -> None:
        """End a live display, if any; the handler is done."""
        self.settle()
        super().close()


@contextmanager
def speaking(
    level: int = logging.INFO, *, prefix: str = "", display: Display | None = None
) -> Iterator[StderrHandler]:
    """Show the records of `level` and above on stderr while the block runs (each line after
    `prefix`; with `display`, a check that began is shown there, live, until the next line)."""
    logger = logging.getLogger(LOGGER)
    handler = StderrHandler(display, prefix)
    previous = logger.level
    _SHOWN.append(handler)
    handler.show(level)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        _SHOWN.remove(handler)
        logger.setLevel(previous)
        handler.close()


def console() -> StderrHandler | None:
    """The handler `speaking` attached last, still attached (None: none is)."""
    return _SHOWN[-1] if _SHOWN else None
