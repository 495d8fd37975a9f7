"""Traces: the grading effects a grading went through and the answers they got, as JSON Lines.

Pure core. A trace is a header (the format version and the `GradeOptions`), one record per
step of the grading program (the effect, then the answer it got or the exception thrown into
the program in its place), and an end record (the document the grading returned). One concept
per module:

- `ssegrade.trace._codec`: each effect's answer type, `Result` answers as `{"ok": value}` or
  `{"error": value}`, bytes in base64; `check_answer`;
- `ssegrade.trace._raised`: the records of exceptions thrown into the program;
- `ssegrade.trace._records`: the header, step and end records, and the one pydantic
  `TypeAdapter` over their union, discriminated by `kind`;
- `ssegrade.trace._document`: `Trace`, `dump_trace` and `parse_trace` with its checks;
- `ssegrade.trace._changes`: `verdict_changes`, what a replay changed in the document;
- `ssegrade.trace._replay`: `replay`, the grading program against the recorded answers, with
  the current rules (`Replay`, the interpreter; `Diverged` when the program asks otherwise).
"""

from ssegrade.trace._changes import verdict_changes
from ssegrade.trace._codec import answer_type, check_answer
from ssegrade.trace._document import Trace, TraceError, TraceStep, dump_trace, parse_trace
from ssegrade.trace._raised import (
    ErrorRaised,
    InterruptRaised,
    NotStartedRaised,
    Raised,
    RecordedError,
    TimeLimitRaised,
    exception_of,
    raised_of,
)
from ssegrade.trace._records import TRACE_FORMAT, TRACE_VERSION
from ssegrade.trace._records import TraceEnd as TraceEnd
from ssegrade.trace._records import TraceHeader as TraceHeader
from ssegrade.trace._replay import Diverged, Replay, Replayed, replay

__all__ = [
    "TRACE_FORMAT",
    "TRACE_VERSION",
    "Diverged",
    "ErrorRaised",
    "InterruptRaised",
    "NotStartedRaised",
    "Raised",
    "RecordedError",
    "Replay",
    "Replayed",
    "TimeLimitRaised",
    "Trace",
    "TraceError",
    "TraceStep",
    "answer_type",
    "check_answer",
    "dump_trace",
    "exception_of",
    "parse_trace",
    "raised_of",
    "replay",
    "verdict_changes",
]
