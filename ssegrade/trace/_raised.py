"""The exceptions a trace records: thrown into the grading program in place of an answer.

Pure core. Each exception an interpreter may throw into the program has a record
(`TimeLimitRaised`, `InterruptRaised`, `NotStartedRaised`, any other `ErrorRaised` by class
name and message), a union discriminated by `exception`; `raised_of` makes the record and
`exception_of` the exception to throw again on replay.
"""

from __future__ import annotations

import builtins
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from ssegrade.internal.effects import ScriptNotStarted, TimeLimitReached
from ssegrade.internal.errors import SsegradeError
from ssegrade.internal.program import SignalArrived
from ssegrade.trace._codec import RECORD_CONFIG

__all__ = [
    "ErrorRaised",
    "InterruptRaised",
    "NotStartedRaised",
    "Raised",
    "RecordedError",
    "RecordedOSError",
    "TimeLimitRaised",
    "exception_of",
    "raised_of",
]


class RecordedError(SsegradeError):
    """An exception an interpreter raised in the recorded grading, raised again on replay;
    `type` names its class, the message is what the grading program saw."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(message)
        self.type = type_name


class RecordedOSError(RecordedError, OSError):
    """A recorded `OSError` (a full disk, a lost file system), raised again as one: the kind
    of `error` it gives (`infrastructure`) is the recorded run's."""


def _recorded(type_name: str, message: str) -> RecordedError:
    known = getattr(builtins, type_name, None)
    if isinstance(known, type) and issubclass(known, OSError):
        return RecordedOSError(type_name, message)
    return RecordedError(type_name, message)


class TimeLimitRaised(BaseModel):
    """`TimeLimitReached` was thrown into the program."""

    model_config = RECORD_CONFIG
    exception: Literal["TimeLimitReached"] = "TimeLimitReached"
    seconds: int


class InterruptRaised(BaseModel):
    """`SignalArrived` (a signal) was thrown into the program."""

    model_config = RECORD_CONFIG
    exception: Literal["SignalArrived"] = "SignalArrived"
    signal: str


class NotStartedRaised(BaseModel):
    """`ScriptNotStarted` (a broken task) was thrown into the program."""

    model_config = RECORD_CONFIG
    exception: Literal["ScriptNotStarted"] = "ScriptNotStarted"
    message: str
    log: str = ""


class ErrorRaised(BaseModel):
    """Any other exception was thrown into the program: its class name and message."""

    model_config = RECORD_CONFIG
    exception: Literal["Exception"] = "Exception"
    type: str
    message: str


Raised = Annotated[
    TimeLimitRaised | InterruptRaised | NotStartedRaised | ErrorRaised,
    Field(discriminator="exception"),
]


def raised_of(exc: Exception) -> Raised:
    """The record of an exception thrown into the program.

    >>> raised_of(TimeLimitReached(60))
    TimeLimitRaised(exception='TimeLimitReached', seconds=60)
    >>> raised_of(KeyError())
    ErrorRaised(exception='Exception', type='KeyError', message='KeyError')
    """
    if isinstance(exc, TimeLimitReached):
        return TimeLimitRaised(seconds=exc.seconds)
    if isinstance(exc, SignalArrived):
        return InterruptRaised(signal=exc.signal)
    if isinstance(exc, ScriptNotStarted):
        return NotStartedRaised(message=str(exc), log=exc.log)
    if isinstance(exc, RecordedError):
        return ErrorRaised(type=exc.type, message=str(exc))
    return ErrorRaised(type=type(exc).__name__, message=str(exc) or type(exc).__name__)


def exception_of(raised: Raised) -> Exception:
    """The exception to throw into the program again for a recorded one.

    >>> exception_of(raised_of(OSError("disk full")))
    RecordedOSError('disk full')
    >>> exception_of(raised_of(KeyError("k")))
    RecordedError("'k'")
    """
    match raised:
        case TimeLimitRaised(seconds=seconds):
            return TimeLimitReached(seconds)
        case InterruptRaised(signal=signal):
            return SignalArrived(signal)
        case NotStartedRaised(message=message, log=log):
            return ScriptNotStarted(message, log)
        case ErrorRaised(type=type_name, message=message):
            return _recorded(type_name, message)
