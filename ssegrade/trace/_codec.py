"""How a trace writes values: each effect's answer type, `Result` answers, bytes.

Pure core. The answer type of an effect is read from its `Effect[A]` base (`answer_type`), so a
new grading effect is part of the format as soon as it joins `GradingEffect`. `returns` results
are written `{"ok": value}` or `{"error": value}` (`wire_type`), bytes in base64
(`RECORD_CONFIG`, the configuration of every trace record). `check_answer` holds an
interpreter's answer to the same types.
"""

from __future__ import annotations

from typing import Annotated, Any, get_args

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler, create_model
from pydantic_core import CoreSchema, core_schema
from returns.result import Failure, Result, Success

from ssegrade.internal.effects import Effect

__all__ = ["RECORD_CONFIG", "answer_type", "check_answer", "wire_type"]

RECORD_CONFIG = ConfigDict(
    frozen=True,
    extra="forbid",
    ser_json_bytes="base64",
    val_json_bytes="base64",
    defer_build=True,
)
"""The configuration of every trace record: frozen, closed, bytes in base64."""


def answer_type(effect: type[Effect[Any]]) -> Any:
    """The answer type `A` an effect class declares by subclassing `Effect[A]`.

    >>> from ssegrade.internal.effects import Bench, Notify
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


def wire_type(answer: Any) -> Any:
    """The type pydantic reads and writes an answer of type `answer` with: a `Result` gains
    its `{"ok": …}` / `{"error": …}` form; any other type is itself."""
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
            answer=(wire_type(answer_type(effect)), ...),
        )
    return _ANSWERS[key]


def check_answer(effect: Effect[Any], answer: object) -> None:
    """Check an interpreter's answer against the type its effect declares, dataclass fields
    included; raises pydantic's `ValidationError` when it does not fit.

    >>> from ssegrade.internal.effects import Archive
    >>> check_answer(Archive(), Success(None))
    >>> check_answer(Archive(), None)
    Traceback (most recent call last):
    pydantic_core._pydantic_core.ValidationError: 1 validation error for Archive answer
    answer
      expected a Success or a Failure [type=result, input_value=None, input_type=NoneType]
    """
    _answer_model(type(effect)).model_validate({"answer": answer})
