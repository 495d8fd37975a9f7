"""What the Python API of grading raises when it cannot do what it was asked.

Application layer. Plain exceptions, each with a one-line message: the commands alone turn
them into an exit status (`interpreters.cli.main`: `InputError` 2, `NotWritten` 1,
`Interrupted` 128 + the signal's number); an embedder catches them as it likes.
"""

from __future__ import annotations

import signal

from ssegrade.internal.errors import SsegradeError

__all__ = ["InputError", "Interrupted", "NotWritten"]


class InputError(SsegradeError, ValueError):
    """Input grading cannot work with (a rejected task, a missing tree, repo or patch, a
    results folder that cannot be used); the message is one line."""


class NotWritten(SsegradeError):
    """An output could not be written (`result.json` after a failure, the trace file)."""


class Interrupted(SsegradeError):
    """SIGTERM or SIGINT arrived while grading; `result.json` is written. The command exits
    with `exit_code` (128 + the signal's number)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}; result.json written")
        self.exit_code = 128 + signum
