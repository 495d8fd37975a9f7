"""The `result.json` document: models, the status rule, parsing and the JSON Schema.

Pure core: this module describes the grade; it never reads or writes a file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
)
from returns.result import Failure, Result, Success

from ssegrade.internal.errors import SsegradeError

Status = Literal["passed", "failed", "error"]
ErrorKind = Literal["timeout", "task", "infrastructure", "grader"]
"""Why a grading is `error` (SPEC §3): its time limit (`timeout`), a broken task (`task`), the
host, the engine or a lost worker (`infrastructure`), an exception in ssegrade (`grader`)."""

ERROR_KINDS: Final[tuple[ErrorKind, ...]] = ("timeout", "task", "infrastructure", "grader")

__all__ = [
    "ERROR_KINDS",
    "WITHOUT_LOG",
    "ErrorKind",
    "EvaluationResult",
    "PatchResult",
    "ResultError",
    "RuntimeResult",
    "Status",
    "error_kind_of",
    "parse_result",
    "patch_result_model",
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
    """Apply the status rule: `failed` when any check that ran failed, whether grading
    finished or not (a failed check is decisive), else `error` when nothing ran or grading
    did not finish, else `passed`.

    >>> status_of(build_success=True, pov_passed=1, pov_total=2,
    ...           func_test_success=None, intent_test_success=None)
    'failed'
    >>> status_of(build_success=None, pov_passed=None, pov_total=None,
    ...           func_test_success=None, intent_test_success=None)
    'error'
    >>> status_of(build_success=True, pov_passed=None, pov_total=None,
    ...           func_test_success=True, intent_test_success=None)
    'passed'
    >>> status_of(build_success=True, pov_passed=0, pov_total=1, func_test_success=None,
    ...           intent_test_success=None, unfinished=True)
    'failed'
    """
    failed = (
        build_success is False
        or (pov_total is not None and pov_passed != pov_total)
        or func_test_success is False
        or intent_test_success is False
    )
    if failed:
        return "failed"
    ran = (build_success, pov_total, func_test_success, intent_test_success)
    if unfinished or all(field is None for field in ran):
        return "error"
    return "passed"


def error_kind_of(status: object, error_msg: object, error_kind: object) -> ErrorKind | None:
    """The kind of an `error` grade (None for any other): the `runtime_result.error_kind` it
    carries, or, for a document written before kinds (or by another tool), what its
    `error_msg` says.

    >>> error_kind_of("error", "Exception: boom", "infrastructure")
    'infrastructure'
    >>> error_kind_of("error", "Timeout (60s)", None), error_kind_of("failed", "Build failed", None)
    ('timeout', None)
    >>> error_kind_of("error", "Exception: cannot start scripts/b.sh: no such file", None)
    'task'
    """
    if status != "error":
        return None
    for kind in ERROR_KINDS:
        if error_kind == kind:
            return kind
    message = error_msg if isinstance(error_msg, str) else ""
    if message.startswith("Timeout ("):
        return "timeout"
    if message.startswith("Exception: cannot start ") or message == "No check ran":
        return "task"
    if message.startswith("Interrupted ("):
        return "infrastructure"
    return "grader"


WITHOUT_LOG: Final[Mapping[str, object]] = MappingProxyType({"error_log": "unread"})
"""The validation context (`context=WITHOUT_LOG`) under which a `PatchResult` is read without
its `error_log`, which is then neither checked nor kept: for a reader of many documents that
needs the grade only.

>>> PatchResult.model_validate({"status": "failed", "error_log": 7}, context=WITHOUT_LOG)
PatchResult(status='failed', build_success=None, pov_passed=None, pov_total=None, \
func_test_success=None, intent_test_success=None, error_msg=None, error_log=None)
"""


class PatchResult(BaseModel):
    """The grade of one patch; fields in the order `result.json` writes them."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="allow")

    status: Status
    build_success: bool | None = None
    pov_passed: int | None = None
    pov_total: int | None = None
    func_test_success: bool | None = None
    intent_test_success: bool | None = None
    error_msg: str | None = None
    error_log: str | None = None

    @field_validator("error_log", mode="before")
    @classmethod
    def _unread_log(cls, value: object, info: ValidationInfo) -> object:
        context = info.context
        if isinstance(context, Mapping) and context.get("error_log") == "unread":
            return None
        return value

    @classmethod
    def lenient(
        cls, data: object, *, unfinished: bool = False, keep_log: bool = True
    ) -> PatchResult:
        """Read a `patch_result` another tool wrote (an older `result.json`, an SSEBench
        summary): as `model_validate`, but a missing or null `status` is derived from the
        checks with `status_of` (`unfinished`: grading is known not to have finished); with
        `keep_log=False`, as under `WITHOUT_LOG`.

        >>> PatchResult.lenient({"build_success": False, "status": None}).status
        'failed'
        >>> PatchResult.lenient({"pov_total": 1, "pov_passed": 1}, unfinished=True).status
        'error'
        """
        context = None if keep_log else WITHOUT_LOG
        if not isinstance(data, Mapping) or data.get("status") is not None:
            return cls.model_validate(data, context=context)
        checks = cls.model_validate({**data, "status": "error"}, context=context)
        status = status_of(
            build_success=checks.build_success,
            pov_passed=checks.pov_passed,
            pov_total=checks.pov_total,
            func_test_success=checks.func_test_success,
            intent_test_success=checks.intent_test_success,
            unfinished=unfinished,
        )
        return cls.model_validate({**data, "status": status}, context=context)


M = TypeVar("M", bound=BaseModel)


def patch_result_model(
    name: str,
    base: type[M],
    source: type[PatchResult],
    *,
    status: Any,
    field: Callable[[Any], Any] = lambda annotation: annotation,
    required: bool = False,
    doc: str | None = None,
) -> type[M]:
    """A model of the grade under another reader's rules (the daemon's wire, SSEBench's run
    summary), derived from the fields of `source` (`PatchResult`) rather than restating
    them: the same fields in the same order, `status` typed as `status` (default None),
    each other field's type as `field` maps it, required or defaulting to None; the config
    (extra keys, frozen) is `base`'s.

    >>> Loose = patch_result_model("Loose", BaseModel, PatchResult, status=str | None)
    >>> list(Loose.model_fields) == list(PatchResult.model_fields)
    True
    >>> Loose.model_validate({"status": "odd", "pov_total": 2}).pov_total
    2
    """
    fields: dict[str, Any] = {"status": (status, None)}
    for key, info in source.model_fields.items():
        if key != "status":
            fields[key] = (field(info.annotation), ... if required else None)
    return create_model(name, __base__=base, __doc__=doc, __module__=base.__module__, **fields)


class RuntimeResult(BaseModel):
    """How the agent and the evaluator ran; `error_kind` says why a grading is `error` (null
    for any other grade)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="allow")

    agent_duration: int = 0
    agent_timeout: bool = False
    evaluator_timeout: bool = False
    agent_exit_code: int | None = None
    error_kind: ErrorKind | None = None


class EvaluationResult(BaseModel):
    """The whole `result.json`. Extra top-level keys (e.g. `config`) are kept as they are."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="allow")

    patch_result: PatchResult
    runtime_result: RuntimeResult = RuntimeResult()

    def to_json(self) -> bytes:
        """Compact JSON in the fixed key order, extra keys after the known ones."""
        return self.model_dump_json().encode()


class ResultError(SsegradeError, ValueError):
    """A `result.json` that cannot be read: not JSON, or fields of the wrong type."""


def _unfinished(patch: dict[str, Any], runtime: dict[str, Any]) -> bool:
    message = patch.get("error_msg")
    crashed = isinstance(message, str) and (
        message.startswith("Exception:") or message.startswith("Timeout (")
    )
    return bool(runtime.get("evaluator_timeout")) or crashed


def parse_result(data: bytes | str) -> Result[EvaluationResult, ResultError]:
    """Read a `result.json` document; a missing `status` is derived with `status_of`
    (`PatchResult.lenient`; unfinished when the evaluator timed out or the error says that
    grading crashed or hit its time limit).

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
    if patch.get("status") is None:
        try:
            patch = PatchResult.lenient(patch, unfinished=_unfinished(patch, runtime))
        except ValidationError as exc:
            return Failure(ResultError(f"result.json: {_first_error(exc)}"))
    try:
        return Success(EvaluationResult.model_validate({**raw, "patch_result": patch}))
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
