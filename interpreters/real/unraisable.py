"""Where an exception raised by a signal handler would be lost, and how to signal again.

Interpreter layer (processes). Python runs a signal handler between two bytecodes of whatever
runs; an exception it raises inside a hook around a fork (`os.register_at_fork`'s, e.g.
`logging`'s lock, called from C by `os.fork` or by `subprocess` with `preexec_fn`) or inside
a finalizer (`__del__`) is printed as `Exception ignored in: …` and never reaches the code it
was meant to stop. A handler that meets one of these asks for the signal again a moment later
instead (`interpreters.app.setup` does, for the grading's interrupts).
"""

from __future__ import annotations

import os
import threading
from types import FrameType

__all__ = ["signal_again", "unraisable_here"]

_AGAIN = 0.01
"""Seconds after which an interrupt that could not be raised where it arrived is signalled
again."""


def unraisable_here(frame: FrameType | None) -> bool:
    """Whether Python code runs where an exception is printed as `Exception ignored in: …` and
    never reaches the grading: a hook around a fork (`os.register_at_fork`'s, e.g. `logging`'s
    lock, called from C by `os.fork` or by `subprocess` with `preexec_fn`) or a finalizer
    (`__del__`). Any frame of the stack counts: the handler may run inside itself."""
    while frame is not None:
        if frame.f_globals.get("__name__") == "logging" or frame.f_code.co_name == "__del__":
            return True
        caller = frame.f_back
        if (
            caller is not None
            and caller.f_code.co_name == "_execute_child"
            and caller.f_globals.get("__name__") == "subprocess"
        ):
            return True
        frame = caller
    return False


def signal_again(signum: int) -> None:
    """Send `signum` to this process again in a moment (from a thread of its own)."""
    again = threading.Timer(_AGAIN, os.kill, (os.getpid(), signum))
    again.daemon = True
    again.start()
