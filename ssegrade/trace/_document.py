"""A whole trace: its steps and ending, written as JSON Lines and read back with its checks.

Pure core. `dump_trace` writes the header, one record per step and the end record, each through
the one adapter of `ssegrade.trace._records`; `parse_trace` reads them back and checks the order
(one header first, steps numbered from 0, an end record last that counts them), naming the line
of a damaged, truncated or reordered trace.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from returns.result import Failure, Result, Success

from ssegrade.internal.effects import GradingEffect
from ssegrade.internal.errors import SsegradeError
from ssegrade.internal.program import GradeOptions
from ssegrade.internal.result import EvaluationResult
from ssegrade.trace._raised import Raised
from ssegrade.trace._records import TRACE_FORMAT, TRACE_VERSION, TraceEnd, TraceHeader, formats

__all__ = ["Trace", "TraceError", "TraceStep", "dump_trace", "parse_trace"]


@dataclass(frozen=True, slots=True)
class TraceStep:
    """One step: the effect asked, and the answer given or the exception thrown instead."""

    effect: GradingEffect
    answer: object = None
    raised: Raised | None = None


@dataclass(frozen=True, slots=True)
class Trace:
    """A whole grading: its options, its steps, and the document it returned (`result`) or
    what escaped it (`raised`)."""

    options: GradeOptions
    steps: tuple[TraceStep, ...]
    result: EvaluationResult | None = None
    raised: Raised | None = None


@dataclass(frozen=True, slots=True)
class TraceError:
    """A trace that cannot be read; `message` is one line naming the record."""

    message: str


def _line(record: BaseModel) -> bytes:
    return formats().records.dump_json(record) + b"\n"


def dump_trace(trace: Trace) -> bytes:
    """The trace as JSON Lines: header, one record per step, end."""
    lines = [_line(TraceHeader(options=trace.options))]
    for index, step in enumerate(trace.steps):
        model = formats().steps[type(step.effect)]
        fields: dict[str, Any] = {"kind": type(step.effect).__name__, "step": index}
        fields["effect"] = step.effect
        if step.raised is None:
            fields["answer"] = step.answer
        else:
            fields["raised"] = step.raised
        lines.append(_line(model.model_validate(fields)))
    end = TraceEnd(steps=len(trace.steps), result=trace.result, raised=trace.raised)
    lines.append(_line(end))
    return b"".join(lines)


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(part) for part in err["loc"])
    return f"{where}: {err['msg']}" if where else str(err["msg"])


def _header(number: int, line: bytes) -> TraceHeader | TraceError:
    where = f"trace line {number}"
    try:
        raw = json.loads(line)
    except ValueError:
        return TraceError(f"{where}: not JSON (the trace is damaged)")
    if not isinstance(raw, dict) or raw.get("format") != TRACE_FORMAT:
        return TraceError(f"{where}: not an ssegrade trace (no {TRACE_FORMAT} header)")
    if raw.get("version") != TRACE_VERSION:
        return TraceError(
            f"{where}: trace format version {raw.get('version')!r}; "
            f"this ssegrade reads version {TRACE_VERSION}"
        )
    try:
        return TraceHeader.model_validate_json(line)
    except ValidationError as exc:
        return TraceError(f"{where}: {_first_error(exc)}")


def _records(lines: Iterable[tuple[int, bytes]]) -> Iterable[tuple[int, Any]]:
    for number, line in lines:
        try:
            yield number, formats().records.validate_json(line)
        except ValidationError as exc:
            broken = exc.errors()[0]["type"] == "json_invalid"
            detail = "not JSON (the trace is truncated or damaged)" if broken else _first_error(exc)
            raise _Bad(f"trace line {number}: {detail}") from None


class _Bad(SsegradeError):
    pass


def parse_trace(data: bytes) -> Result[Trace, TraceError]:
    """Read a trace written by `dump_trace`; a damaged, truncated or reordered one is a
    `TraceError` naming the line.

    >>> parse_trace(b"").failure().message
    'trace: empty'
    >>> parse_trace(b'{"format": "ssegrade-trace", "version": 9}').failure().message
    'trace line 1: trace format version 9; this ssegrade reads version 1'
    """
    numbered = [(n, line) for n, line in enumerate(data.split(b"\n"), 1) if line.strip()]
    if not numbered:
        return Failure(TraceError("trace: empty"))
    header = _header(*numbered[0])
    if isinstance(header, TraceError):
        return Failure(header)
    steps: list[TraceStep] = []
    try:
        for number, record in _records(numbered[1:]):
            if isinstance(record, TraceEnd):
                if number != numbered[-1][0]:
                    raise _Bad(f"trace line {number + 1}: records after the end record")
                if record.steps != len(steps):
                    raise _Bad(
                        f"trace line {number}: the end record counts {record.steps} steps, "
                        f"the trace holds {len(steps)}"
                    )
                return Success(Trace(header.options, tuple(steps), record.result, record.raised))
            if isinstance(record, TraceHeader):
                raise _Bad(f"trace line {number}: a second header")
            if record.step != len(steps):
                raise _Bad(f"trace line {number}: step {len(steps)} expected, found {record.step}")
            answer = None if record.raised is not None else record.answer
            steps.append(TraceStep(record.effect, answer, record.raised))
    except _Bad as bad:
        return Failure(TraceError(str(bad)))
    last = numbered[-1][0]
    return Failure(TraceError(f"trace: truncated after line {last} (no end record)"))
