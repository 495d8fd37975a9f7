"""The records of a trace file and the one pydantic `TypeAdapter` every record goes through.

Pure core. A trace is a `TraceHeader` (the format, its version, the `GradeOptions`), one step
record per effect the grading program asked for (the effect, then its `answer` or what was
`raised` in its place), and a `TraceEnd` (the document the grading returned, or what escaped
it). The step record of each grading effect is made from the effect class and its answer type,
and all of them form one union discriminated by `kind` (`formats`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, reduce
from operator import or_
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import (
    BaseModel,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    create_model,
    model_serializer,
    model_validator,
)

from ssegrade.internal.effects import Effect, GradingEffect
from ssegrade.internal.program import GradeOptions
from ssegrade.internal.result import EvaluationResult
from ssegrade.trace._codec import RECORD_CONFIG, answer_type, wire_type
from ssegrade.trace._raised import Raised

__all__ = [
    "TRACE_FORMAT",
    "TRACE_VERSION",
    "Formats",
    "StepRecord",
    "TraceEnd",
    "TraceHeader",
    "formats",
]

TRACE_FORMAT: Final = "ssegrade-trace"
TRACE_VERSION: Final = 1


class TraceHeader(BaseModel):
    """First record: the format, its version and what the grading program was given."""

    model_config = RECORD_CONFIG
    kind: Literal["header"] = "header"
    format: Literal["ssegrade-trace"] = TRACE_FORMAT
    version: int = TRACE_VERSION
    options: GradeOptions

    @model_validator(mode="before")
    @classmethod
    def _no_timeout(cls, data: Any) -> Any:
        """A trace written while `GradeOptions` carried the time limit (it now lives in the
        `Deadline` alone, and a `TimeLimitReached` step says it) reads all the same."""
        options = data.get("options") if isinstance(data, dict) else None
        if isinstance(options, dict) and "timeout" in options:
            data = {**data, "options": {k: v for k, v in options.items() if k != "timeout"}}
        return data


_STEP_ORDER = ("step", "kind", "effect", "answer", "raised")


class StepRecord(BaseModel):
    """One step: the effect and either its `answer` or what was `raised` in its place (the
    base of each effect's step record, which adds `kind`, `effect` and `answer`)."""

    model_config = RECORD_CONFIG
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

    model_config = RECORD_CONFIG
    kind: Literal["end"] = "end"
    steps: int = Field(ge=0)
    result: EvaluationResult | None = None
    raised: Raised | None = None

    @model_validator(mode="after")
    def _one_outcome(self) -> TraceEnd:
        if (self.result is None) == (self.raised is None):
            raise ValueError("the end holds either the result or the exception that escaped")
        return self


def _step_model(effect: type[Effect[Any]]) -> type[StepRecord]:
    model: type[StepRecord] = create_model(
        f"{effect.__name__}Step",
        __base__=StepRecord,
        __doc__=f"A `{effect.__name__}` step.",
        kind=(Literal[effect.__name__], ...),  # type: ignore[arg-type]
        effect=(effect, ...),
        answer=(wire_type(answer_type(effect)), None),
    )
    return model


@dataclass(frozen=True, slots=True)
class Formats:
    """The step record of each grading effect, and the adapter over every record."""

    steps: dict[type[Effect[Any]], type[StepRecord]]
    records: TypeAdapter[Any]


@cache
def formats() -> Formats:
    """The step models and the one adapter every record is written and read with; built on
    first use, so that importing the core stays quick."""
    effects: tuple[type[Effect[Any]], ...] = get_args(GradingEffect)
    steps = {effect: _step_model(effect) for effect in effects}
    union: Any = reduce(or_, (TraceHeader, *steps.values(), TraceEnd))
    return Formats(steps, TypeAdapter(Annotated[union, Field(discriminator="kind")]))
