"""The `result.json` document: models, the status rule, parsing and the JSON Schema.

Pure core: this module describes the grade; it never reads or writes a file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from returns.result import Failure, Result, Success

Status = Literal["passed", "failed", "error"]

__all__ = [
    "EvaluationResult",
    "Lenient",
    "PatchResult",
    "ResultError",
    "RuntimeResult",
    "Status",
    "parse_result",
    "result_schema",
    "status_of",
]


def status_of(
    *,
    build_success: bool | None,
    pov_passed: int | None,
    pov_total: int | None,
    func_test_success: bool | None,
    intent_test_success: bool | None,
    unfinished: bool = False,
) -> Status:
    """Apply the status rule: `error` when nothing ran or grading did not finish, else
    `failed` when any check that ran failed, else `passed`.

    >>> status_of(build_success=True, pov_passed=1, pov_total=2,
    ...           func_test_success=None, intent_test_success=None)
    'failed'
    >>> status_of(build_success=None, pov_passed=None, pov_total=None,
    ...           func_test_success=None, intent_test_success=None)
    'error'
    >>> status_of(build_success=True, pov_passed=None, pov_total=None,
    ...           func_test_success=True, intent_test_success=None)
    'passed'
    """
    ran = (build_success, pov_total, func_test_success, intent_test_success)
    if unfinished or all(field is None for field in ran):
        return "error"
    failed = (
        build_success is False
        or (pov_total is not None and pov_passed != pov_total)
        or func_test_success is False
        or intent_test_success is False
    )
    return "failed" if failed else "passed"


@dataclass(frozen=True, slots=True)
class Lenient:
    """The validation context under which `PatchResult` reads a `patch_result` other tools
    wrote (older `result.json` files, SSEBench summaries): pass it as `context=` to any
    validation that reaches a `PatchResult`.

    A missing or null `status` is derived from the checks with `status_of`, `unfinished`
    saying whether grading is known not to have finished. With `keep_log=False` the
    `error_log` is neither checked nor kept, for a reader of many documents that needs the
    grade only. Extra keys are kept and null checks read as not run, lenient or not.

    >>> PatchResult.model_validate({"build_success": False}, context=Lenient()).status
    'failed'
    >>> PatchResult.model_validate({"pov_total": 1}, context=Lenient(unfinished=True)).status
    'error'
    >>> PatchResult.model_validate({"error_log": 7}, context=Lenient(keep_log=False)).error_log
    """

    unfinished: bool = False
    keep_log: bool = True


class PatchResult(BaseModel):
    """The grade of one patch; fields in the order `result.json` writes them."""

    model_config = ConfigDict(frozen=True, extra="allow")

    status: Status
    build_success: bool | None = None
    pov_passed: int | None = None
    pov_total: int | None = None
    func_test_success: bool | None = None
    intent_test_success: bool | None = None
    error_msg: str | None = None
    error_log: str | None = None

    @model_validator(mode="wrap")
    @classmethod
    def _lenient(
        cls, data: Any, handler: ModelWrapValidatorHandler[PatchResult], info: ValidationInfo
    ) -> PatchResult:
        lenient = info.context
        if not isinstance(lenient, Lenient) or not isinstance(data, dict):
            return handler(data)
        if not lenient.keep_log and "error_log" in data:
            data = {key: value for key, value in data.items() if key != "error_log"}
        if data.get("status") is not None:
            return handler(data)
        checks = handler({**data, "status": "error"})
        status = status_of(
            build_success=checks.build_success,
            pov_passed=checks.pov_passed,
            pov_total=checks.pov_total,
            func_test_success=checks.func_test_success,
            intent_test_success=checks.intent_test_success,
            unfinished=lenient.unfinished,
        )
        return handler({**data, "status": status})


class RuntimeResult(BaseModel):
    """How the agent and the evaluator ran."""

    model_config = ConfigDict(frozen=True, extra="allow")

    agent_duration: int = 0
    agent_timeout: bool = False
    evaluator_timeout: bool = False
    agent_exit_code: int | None = None


class EvaluationResult(BaseModel):
    """The whole `result.json`. Extra top-level keys (e.g. `config`) are kept as they are."""

    model_config = ConfigDict(frozen=True, extra="allow")

    patch_result: PatchResult
    runtime_result: RuntimeResult = RuntimeResult()

    def to_json(self) -> bytes:
        """Compact JSON in the fixed key order, extra keys after the known ones."""
        return self.model_dump_json().encode()


class ResultError(ValueError):
    """A `result.json` that cannot be read: not JSON, or fields of the wrong type."""


def _unfinished(patch: dict[str, Any], runtime: dict[str, Any]) -> bool:
    message = patch.get("error_msg")
    crashed = isinstance(message, str) and (
        message.startswith("Exception:") or message.startswith("Timeout (")
    )
    return bool(runtime.get("evaluator_timeout")) or crashed


def parse_result(data: bytes | str) -> Result[EvaluationResult, ResultError]:
    """Read a `result.json` document; a missing `status` is derived with `status_of` (read
    under `Lenient`, unfinished when the evaluator timed out or the error says it crashed).

    >>> doc = b'{"patch_result":{"build_success":false},"config":{"id":"t"}}'
    >>> r = parse_result(doc).unwrap()
    >>> r.patch_result.status, r.model_extra
    ('failed', {'config': {'id': 't'}})
    >>> parse_result(b'[1]').failure()
    ResultError('result.json: expected a JSON object')
    """
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        return Failure(ResultError(f"result.json: not JSON ({exc})"))
    if not isinstance(raw, dict):
        return Failure(ResultError("result.json: expected a JSON object"))
    patch = raw.get("patch_result")
    if not isinstance(patch, dict):
        return Failure(ResultError("result.json: patch_result: expected an object"))
    runtime = raw.get("runtime_result")
    runtime = runtime if isinstance(runtime, dict) else {}
    lenient = Lenient(unfinished=_unfinished(patch, runtime))
    try:
        return Success(EvaluationResult.model_validate(raw, context=lenient))
    except ValidationError as exc:
        return Failure(ResultError(f"result.json: {_first_error(exc)}"))


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(part) for part in err["loc"])
    return f"{where}: {err['msg']}"


def result_schema() -> dict[str, Any]:
    """The JSON Schema of `result.json`, generated from the models."""
    schema = EvaluationResult.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "ssegrade result.json"
    return schema
