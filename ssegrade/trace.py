"""Traces: the grading effects a grading went through and the answers they got, as JSON Lines.

Pure core. A trace is a header (the format version and the `GradeOptions`), one record per
step of the grading program (the effect, then the answer it got or the exception thrown into
the program in its place), and an end record (the document the grading returned). Every
record goes through one pydantic `TypeAdapter` over a union discriminated by `kind`; `Result`
answers are written `{"ok": value}` or `{"error": value}`, bytes in base64.

The answer type of each effect is read from its `Effect[A]` base (`answer_type`), so a new
grading effect is part of the format as soon as it joins `GradingEffect`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache, reduce
from operator import or_
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    create_model,
    model_serializer,
    model_validator,
)
from pydantic_core import CoreSchema, core_schema
from returns.result import Failure, Result, Success

from ssegrade.effects import Effect, GradingEffect, ScriptNotStarted, TimeLimitReached
from ssegrade.program import GradeOptions, GradingInterrupted
from ssegrade.result import EvaluationResult

__all__ = [
    "TRACE_FORMAT",
    "TRACE_VERSION",
    "ErrorRaised",
    "InterruptRaised",
    "NotStartedRaised",
    "Raised",
    "RecordedError",
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
    "verdict_changes",
]

TRACE_FORMAT: Final = "ssegrade-trace"
TRACE_VERSION: Final = 1

_RECORD_CONFIG = ConfigDict(
    frozen=True,
    extra="forbid",
    ser_json_bytes="base64",
    val_json_bytes="base64",
    defer_build=True,
)


# ---------------------------------------------------------------------------- answer types


def answer_type(effect: type[Effect[Any]]) -> Any:
    """The answer type `A` an effect class declares by subclassing `Effect[A]`.

    >>> from ssegrade.effects import Bench, Notify
    >>> answer_type(Bench).__name__, answer_type(Notify)
    ('ScriptResult', <class 'NoneType'>)
    """
    for klass in effect.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            if getattr(base, "__origin__", None) is Effect:
                return get_args(base)[0]
    raise TypeError(f"{effect.__name__} does not subclass Effect[A]")


def _tag_of(value: Any) -> str | None:
    if isinstance(value, dict):
        return "ok" if "ok" in value else "error" if "error" in value else None
    return None


def _instance_tag(value: Any) -> str | None:
    if isinstance(value, Success):
        return "ok"
    return "error" if isinstance(value, Failure) else None


def _wire_of(value: Result[Any, Any]) -> dict[str, Any]:
    if isinstance(value, Success):
        return {"ok": value.unwrap()}
    return {"error": value.failure()}


def _unwrapped(value: Any) -> Any:
    return value.unwrap()


def _failed(value: Any) -> Any:
    return value.failure()


def _ok(value: Any) -> Result[Any, Any]:
    return Success(value)


def _error(value: Any) -> Result[Any, Any]:
    return Failure(value)


def _from_wire(value: dict[str, Any]) -> Result[Any, Any]:
    return Success(value["ok"]) if "ok" in value else Failure(value["error"])


class _ResultOf:
    """Pydantic support for `returns` results: `{"ok": v}` / `{"error": e}` in JSON, a
    `Success` or `Failure` whose value is validated in Python."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        ok_type, error_type = get_args(source)
        ok, error = handler.generate_schema(ok_type), handler.generate_schema(error_type)
        field = core_schema.typed_dict_field
        wire = core_schema.tagged_union_schema(
            {
                "ok": core_schema.typed_dict_schema({"ok": field(ok)}, extra_behavior="forbid"),
                "error": core_schema.typed_dict_schema(
                    {"error": field(error)}, extra_behavior="forbid"
                ),
            },
            discriminator=_tag_of,
            custom_error_type="result",
            custom_error_message="expected {'ok': value} or {'error': value}",
        )
        instance = core_schema.tagged_union_schema(
            {
                "ok": core_schema.chain_schema(
                    [
                        core_schema.no_info_plain_validator_function(_unwrapped),
                        core_schema.no_info_after_validator_function(_ok, ok),
                    ]
                ),
                "error": core_schema.chain_schema(
                    [
                        core_schema.no_info_plain_validator_function(_failed),
                        core_schema.no_info_after_validator_function(_error, error),
                    ]
                ),
            },
            discriminator=_instance_tag,
            custom_error_type="result",
            custom_error_message="expected a Success or a Failure",
        )
        return core_schema.json_or_python_schema(
            json_schema=core_schema.no_info_after_validator_function(_from_wire, wire),
            python_schema=instance,
            serialization=core_schema.plain_serializer_function_ser_schema(
                _wire_of, return_schema=wire, when_used="unless-none"
            ),
        )


def _pydantic(answer: Any) -> Any:
    if getattr(answer, "__origin__", None) is Result:
        return Annotated[answer, _ResultOf()]
    return answer


_ANSWERS: dict[str, type[BaseModel]] = {}


def _answer_model(effect: type[Effect[Any]]) -> type[BaseModel]:
    key = f"{effect.__module__}.{effect.__qualname__}"
    if key not in _ANSWERS:
        _ANSWERS[key] = create_model(
            f"{effect.__name__} answer",
            __config__=ConfigDict(strict=True, revalidate_instances="always"),
            answer=(_pydantic(answer_type(effect)), ...),
        )
    return _ANSWERS[key]


def check_answer(effect: Effect[Any], answer: object) -> None:
    """Check an interpreter's answer against the type its effect declares, dataclass fields
    included; raises pydantic's `ValidationError` when it does not fit.

    >>> from ssegrade.effects import Archive
    >>> check_answer(Archive(), Success(None))
    >>> check_answer(Archive(), None)
    Traceback (most recent call last):
    pydantic_core._pydantic_core.ValidationError: 1 validation error for Archive answer
    answer
      expected a Success or a Failure [type=result, input_value=None, input_type=NoneType]
    """
    _answer_model(type(effect)).model_validate({"answer": answer})


# ---------------------------------------------------------------------------- exceptions


class RecordedError(Exception):
    """An exception an interpreter raised in the recorded grading, raised again on replay;
    `type` names its class, the message is what the grading program saw."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(message)
        self.type = type_name


class TimeLimitRaised(BaseModel):
    """`TimeLimitReached` was thrown into the program."""

    model_config = _RECORD_CONFIG
    exception: Literal["TimeLimitReached"] = "TimeLimitReached"
    seconds: int


class InterruptRaised(BaseModel):
    """`GradingInterrupted` (a signal) was thrown into the program."""

    model_config = _RECORD_CONFIG
    exception: Literal["GradingInterrupted"] = "GradingInterrupted"
    signal: str


class NotStartedRaised(BaseModel):
    """`ScriptNotStarted` (a broken task) was thrown into the program."""

    model_config = _RECORD_CONFIG
    exception: Literal["ScriptNotStarted"] = "ScriptNotStarted"
    message: str
    log: str = ""


class ErrorRaised(BaseModel):
    """Any other exception was thrown into the program: its class name and message."""

    model_config = _RECORD_CONFIG
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
    if isinstance(exc, GradingInterrupted):
        return InterruptRaised(signal=exc.signal)
    if isinstance(exc, ScriptNotStarted):
        return NotStartedRaised(message=str(exc), log=exc.log)
    if isinstance(exc, RecordedError):
        return ErrorRaised(type=exc.type, message=str(exc))
    return ErrorRaised(type=type(exc).__name__, message=str(exc) or type(exc).__name__)


def exception_of(raised: Raised) -> Exception:
    """The exception to throw into the program again for a recorded one.

    >>> exception_of(raised_of(OSError("disk full")))
    RecordedError('disk full')
    """
    match raised:
        case TimeLimitRaised(seconds=seconds):
            return TimeLimitReached(seconds)
        case InterruptRaised(signal=signal):
            return GradingInterrupted(signal)
        case NotStartedRaised(message=message, log=log):
            return ScriptNotStarted(message, log)
        case ErrorRaised(type=type_name, message=message):
            return RecordedError(type_name, message)


# ---------------------------------------------------------------------------- records


class TraceHeader(BaseModel):
    """First record: the format, its version and what the grading program was given."""

    model_config = _RECORD_CONFIG
    kind: Literal["header"] = "header"
    format: Literal["ssegrade-trace"] = TRACE_FORMAT
    version: int = TRACE_VERSION
    options: GradeOptions


_STEP_ORDER = ("step", "kind", "effect", "answer", "raised")


class _StepRecord(BaseModel):
    """One step: the effect and either its `answer` or what was `raised` in its place."""

    model_config = _RECORD_CONFIG
    step: int = Field(ge=0)
    raised: Raised | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_outcome(cls, data: Any) -> Any:
        if isinstance(data, dict) and ("answer" in data) == (data.get("raised") is not None):
            raise ValueError("a step holds either an answer or a raised exception")
        return data

    @model_serializer(mode="wrap")
    def _outcome_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        dumped.pop("answer" if self.raised is not None else "raised", None)
        return {key: dumped[key] for key in _STEP_ORDER if key in dumped}


class TraceEnd(BaseModel):
    """Last record: the number of steps and the document the grading returned, or what
    escaped the grading program."""

    model_config = _RECORD_CONFIG
    kind: Literal["end"] = "end"
    steps: int = Field(ge=0)
    result: EvaluationResult | None = None
    raised: Raised | None = None

    @model_validator(mode="after")
    def _one_outcome(self) -> TraceEnd:
        if (self.result is None) == (self.raised is None):
            raise ValueError("the end holds either the result or the exception that escaped")
        return self


def _step_model(effect: type[Effect[Any]]) -> type[_StepRecord]:
    model: type[_StepRecord] = create_model(
        f"{effect.__name__}Step",
        __base__=_StepRecord,
        __doc__=f"A `{effect.__name__}` step.",
        kind=(Literal[effect.__name__], ...),  # type: ignore[arg-type]
        effect=(effect, ...),
        answer=(_pydantic(answer_type(effect)), None),
    )
    return model


@dataclass(frozen=True, slots=True)
class _Format:
    steps: dict[type[Effect[Any]], type[_StepRecord]]
    records: TypeAdapter[Any]


@cache
def _format() -> _Format:
    """The step models and the one adapter every record is written and read with; built on
    first use, so that importing the core stays quick."""
    effects: tuple[type[Effect[Any]], ...] = get_args(GradingEffect)
    steps = {effect: _step_model(effect) for effect in effects}
    union: Any = reduce(or_, (TraceHeader, *steps.values(), TraceEnd))
    return _Format(steps, TypeAdapter(Annotated[union, Field(discriminator="kind")]))


# ---------------------------------------------------------------------------- traces


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
    return _format().records.dump_json(record) + b"\n"


def dump_trace(trace: Trace) -> bytes:
    """The trace as JSON Lines: header, one record per step, end."""
    lines = [_line(TraceHeader(options=trace.options))]
    for index, step in enumerate(trace.steps):
        model = _format().steps[type(step.effect)]
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
            yield number, _format().records.validate_json(line)
        except ValidationError as exc:
            broken = exc.errors()[0]["type"] == "json_invalid"
            detail = "not JSON (the trace is truncated or damaged)" if broken else _first_error(exc)
            raise _Bad(f"trace line {number}: {detail}") from None


class _Bad(Exception):
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


# ---------------------------------------------------------------------------- verdicts


def _crash(value: object) -> bool:
    return isinstance(value, str) and value.startswith("Exception:")


def verdict_changes(recorded: EvaluationResult, replayed: EvaluationResult) -> tuple[str, ...]:
    """The fields of `result.json` that differ, as `name: old → new`. The `error_log` of an
    `Exception:` error is a traceback, which names code lines, and is not compared.

    >>> from ssegrade.result import PatchResult
    >>> old = EvaluationResult(patch_result=PatchResult(status="passed", pov_passed=2))
    >>> new = EvaluationResult(patch_result=PatchResult(status="failed", pov_passed=1))
    >>> verdict_changes(old, new)
    ("patch_result.status: 'passed' → 'failed'", 'patch_result.pov_passed: 2 → 1')
    """
    changes: list[str] = []
    pairs: list[tuple[str, Callable[[EvaluationResult], BaseModel]]] = [
        ("patch_result", lambda r: r.patch_result),
        ("runtime_result", lambda r: r.runtime_result),
    ]
    for section, part in pairs:
        old, new = part(recorded).model_dump(), part(replayed).model_dump()
        crashed = _crash(old.get("error_msg")) and _crash(new.get("error_msg"))
        for name in dict.fromkeys([*old, *new]):
            if name == "error_log" and crashed:
                continue
            if old.get(name) != new.get(name):
                changes.append(f"{section}.{name}: {old.get(name)!r} → {new.get(name)!r}")
    old_extra, new_extra = recorded.model_extra or {}, replayed.model_extra or {}
    for name in dict.fromkeys([*old_extra, *new_extra]):
        if old_extra.get(name) != new_extra.get(name):
            changes.append(f"{name}: {old_extra.get(name)!r} → {new_extra.get(name)!r}")
    return tuple(changes)
