"""One run's `summary.json` (or `result.json`) bytes → a small run record.

Pure core: `parse_run` takes bytes and the run folder's place below the results folder; finding
and reading the files is `interpreters.report.io`'s job. The record keeps only what selection,
aggregation and export need, never the document (a summary can carry a long error log).

The shapes read (SPEC §11, facts of the SSEBench runner):

- `summary.json`: `task` is the task config (`id`, `scripts`, `files` tell which checks the task
  has); `config` is the **run config** (`agent`, `model`, `reference_run`, and others such as
  `mode`, `timeout`, `difficulty`, which are ignored); `patch_result`, `runtime_result`, `spend`,
  `run_id`, `started_at`; `ssegrade batch` adds `digest`, `spend_recorded` (false: the
  job gave no spend, the 0.0 written is unknown) and, for a reused result, `cached_from`.
- `result.json`: `patch_result`, `runtime_result` and, once the SSEBench runner has rewritten it,
  `config`, the same run config.

The task, model and agent a document names must be its folder's; a bare grade in
`<task>/<empty|reference>/<n>/` is a run of `ssegrade verify`: both are left out (SPEC §16).

`patch_result` is read as `ssegrade.internal.result.PatchResult`, without its `error_log`
(`WITHOUT_LOG`); a document that does not read so, such as one without a `status`, is read
again with `PatchResult.lenient`, which decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Generic, NamedTuple, TypeVar

from pydantic import TypeAdapter, ValidationError, ValidatorFunctionWrapHandler, WrapValidator
from returns.result import Failure, Result, Success
from typing_extensions import TypedDict

from ssegrade.internal.result import WITHOUT_LOG, PatchResult
from ssegrade.internal.ssebench import summary_problem
from ssegrade.internal.task import Check, checks_of
from ssegrade.report._flags import guard_flags, guard_listed
from ssegrade.report._paths import relative_message

__all__ = [
    "CONTROLS",
    "ReadError",
    "RunFolder",
    "RunRecord",
    "parse_run",
    "poc_passed",
]


# --------------------------------------------------------------------------- document shape
# TypedDicts validate straight from JSON bytes into plain dicts: several times faster than
# models, and keys not named here (task descriptions, the run config's other keys) are skipped
# by the parser. The grade itself is the `result.json` model's.


class _Scripts(TypedDict, total=False):
    build: str | None
    run: str | None
    test: str | None


class _Files(TypedDict, total=False):
    poc: list[str] | None
    future_test: str | None


class _Task(TypedDict, total=False):
    id: str | None
    scripts: _Scripts | None
    files: _Files | None


class _RunConfig(TypedDict, total=False):
    agent: str | None
    model: str | None
    reference_run: bool | None


class _Runtime(TypedDict, total=False):
    agent_duration: float | None
    error_kind: object  # informative: a value of another type is read as no kind


_Grade = TypeVar("_Grade")


class _Summary(TypedDict, Generic[_Grade], total=False):
    task: _Task | None
    config: _RunConfig | None
    agent: str | None
    model: str | None
    reference_run: bool | None
    patch_result: _Grade
    runtime_result: _Runtime | None
    spend: float | None
    spend_recorded: bool | None
    started_at: datetime | None
    cached_from: str | None
    guard: object
    containment: object  # informative: a value of another type is no mode, not a bad run
    attempts: object  # informative: a value of another type is one attempt


def _leniently(data: object, handler: ValidatorFunctionWrapHandler) -> PatchResult:
    if isinstance(data, dict):
        return PatchResult.lenient(data, keep_log=False)
    result: PatchResult = handler(data)  # not an object: the model's own error
    return result


# Nearly every document reads with the first adapter, at the speed of plain models; one it
# refuses is read again by the second, whose answer (a record or the error) is the one given.
_SUMMARY: TypeAdapter[_Summary[PatchResult]] = TypeAdapter(_Summary[PatchResult])
_LENIENT: TypeAdapter[_Summary[PatchResult]] = TypeAdapter(
    _Summary[Annotated[PatchResult, WrapValidator(_leniently)]]
)


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class RunFolder:
    """Where a run was found: `<task>/<model…>/<agent>/<run-id>` below the results folder."""

    task: str
    model: str
    agent: str
    run_id: str

    @staticmethod
    def from_parts(parts: Sequence[str]) -> RunFolder | None:
        """The run named by the path parts below the results folder; None when too short.

        >>> RunFolder.from_parts(["t", "openai", "gpt-5", "codex", "r1"])
        RunFolder(task='t', model='openai/gpt-5', agent='codex', run_id='r1')
        >>> RunFolder.from_parts(["t", "codex", "r1"]) is None
        True
        """
        if len(parts) < 4:
            return None
        return RunFolder(parts[0], "/".join(parts[1:-2]), parts[-2], parts[-1])

    @property
    def path(self) -> str:
        """The folder below the results folder, `/`-separated.

        >>> RunFolder("t", "openai/gpt-5", "codex", "r1").path
        't/openai/gpt-5/codex/r1'
        """
        return f"{self.task}/{self.model}/{self.agent}/{self.run_id}"


@dataclass(frozen=True, slots=True)
class ReadError:
    """Why one run document could not be used; `message` is one line. `left_out` names a
    rule that leaves a readable run out (`folder`, `verification`): counted, not warned of."""

    message: str
    left_out: str | None = None


class RunRecord(NamedTuple):
    """One run as the report sees it (a named tuple: immutable and cheap to make, as a
    report may read 100,000 of them).

    `patch` is the run's grade, without its `error_log`. `checks` is the set of checks the run's
    task has, when the run carries the task config;
    None when it is unknown (then the report infers it from the runs of the same task).
    `agent_seconds` is the agent's run time (`runtime_result.agent_duration`), None when unknown.
    `folder` is the run folder below the results folder; `cached_from` the run folder whose
    grade a batch reused for this run; `status_given` whether the grade said its status (else
    it was derived); `containment` the mode its scripts ran in (`full`, `weak`), None when its
    summary does not say. `flags` are the kinds of flag the patch guard raised that count
    against the run (empty: none), None when the run carries no guard record; `listed` the
    kinds it raised only as touches that change nothing a check runs (listed, not counted).
    `error_kind` is `runtime_result.error_kind` as
    written (None: not said; `ssegrade.internal.result.error_kind_of` reads it with the grade).
    `attempts` is how many attempts a batch made of its grade (1 when its summary does not
    say).
    """

    task: str
    model: str
    agent: str
    run_id: str
    patch: PatchResult
    started_at: datetime | None = None
    reference: bool = False
    spend: float | None = None
    agent_seconds: float | None = None
    checks: frozenset[Check] | None = None
    folder: str = ""
    cached_from: str | None = None
    status_given: bool = True
    flags: tuple[str, ...] | None = None
    containment: str | None = None
    error_kind: object = None
    listed: tuple[str, ...] = ()
    attempts: int = 1


def poc_passed(patch: PatchResult) -> bool:
    """Whether the PoC check passed: every PoC ran and passed (a PoC check that did not run
    has not passed).

    >>> poc_passed(PatchResult(status="passed", pov_passed=2, pov_total=2))
    True
    >>> poc_passed(PatchResult(status="failed", build_success=False))
    False
    """
    total = patch.pov_total
    return total is not None and total > 0 and patch.pov_passed == total


_INTERNED: dict[frozenset[Check], frozenset[Check]] = {}


def _task_checks(task: _Task) -> frozenset[Check]:
    scripts = task.get("scripts") or {}
    files = task.get("files") or {}
    found = checks_of(
        build=scripts.get("build"),
        run=scripts.get("run"),
        test=scripts.get("test"),
        pocs=tuple(files.get("poc") or ()),
        future_test=files.get("future_test"),
    )
    # At most 16 distinct sets: every record of the same shape shares one object.
    return _INTERNED.setdefault(found, found)


def _files(task: _Task | None) -> list[str | None]:
    """The files a task config names, relative to its folder."""
    scripts = (task or {}).get("scripts") or {}
    files = (task or {}).get("files") or {}
    return [*scripts.values(), *(files.get("poc") or ()), files.get("future_test")]


CONTROLS = ("empty", "reference")
"""The controls of `ssegrade verify`, whose runs are `<task id>/<control>/<n>/`."""


def _misplaced(doc: _Summary[PatchResult], folder: RunFolder) -> str | None:
    """Why the document is not the run its folder says (None: it is)."""
    run = doc.get("config") or {}
    task = doc.get("task") or {}
    said = (
        ("task", task.get("id"), folder.task),
        ("model", run.get("model") or doc.get("model"), folder.model),
        ("agent", run.get("agent") or doc.get("agent"), folder.agent),
    )
    for what, named, place in said:
        if named is not None and named != place:
            return f"its {what} is {named!r}, not its folder's {place!r}"
    return None


def parse_run(
    data: bytes, folder: RunFolder, *, ssebench: bool = False
) -> Result[RunRecord, ReadError]:
    """Read one run's `summary.json` or `result.json` bytes into a record.

    Task id, model and agent are the folder's; a document that names others (task config
    `id`, run config `model` and `agent`) is not the run its folder says, and is left out, as
    is a bare grade (no task, no run config) in `<task>/<empty|reference>/<n>/`, a run of
    `ssegrade verify` (both: `left_out`). The run id is the folder's name. A missing `status`
    is derived with the status rule (`PatchResult.lenient`); a missing time zone on
    `started_at` means UTC. With `ssebench`, a summary SSEBench's run summary model would
    refuse is not a run (`ssegrade.internal.ssebench.summary_problem`).

    >>> folder = RunFolder("t", "openai/gpt-5", "a", "r1")
    >>> doc = b'{"config": {"model": "openai/gpt-5", "mode": "sandbox", "timeout": 3600},'
    >>> doc += b' "patch_result": {"build_success": false}}'
    >>> rec = parse_run(doc, folder).unwrap()
    >>> rec.model, rec.agent, rec.patch.status, rec.folder, rec.status_given
    ('openai/gpt-5', 'a', 'failed', 't/openai/gpt-5/a/r1', False)
    >>> parse_run(doc, RunFolder("t", "m", "a", "r1")).failure().left_out
    'folder'
    >>> parse_run(b'{"patch_result": {"status": "passed"}}', RunFolder("x", "t", "empty", "1"))
    <Failure: ReadError(message='a run of ssegrade verify', left_out='verification')>
    >>> parse_run(b'{"patch_result": 3}', folder).failure().message
    'patch_result: Input should be an object'
    """
    given = True
    try:
        doc = _SUMMARY.validate_json(data, context=WITHOUT_LOG)
    except ValidationError:
        try:
            doc = _LENIENT.validate_json(data, context=WITHOUT_LOG)
        except ValidationError as exc:
            return Failure(ReadError(_first_error(exc)))
        given = False
    patch = doc.get("patch_result")
    if patch is None:
        return Failure(ReadError("patch_result: Field required"))
    misplaced = _misplaced(doc, folder)
    if misplaced is not None:
        return Failure(ReadError(misplaced, left_out="folder"))
    run = doc.get("config") or {}
    task = doc.get("task")
    if task is None and not run and folder.agent in CONTROLS and folder.run_id.isdigit():
        return Failure(ReadError("a run of ssegrade verify", left_out="verification"))
    if ssebench:
        problem = summary_problem(data)
        if problem is not None:
            return Failure(ReadError(f"not a run summary SSEBench's report reads ({problem})"))
    started = doc.get("started_at")
    if started is not None and started.tzinfo is None:
        started = started.replace(tzinfo=UTC)
    reference = run.get("reference_run")
    if reference is None:
        reference = doc.get("reference_run")
    runtime = doc.get("runtime_result") or {}
    message = patch.error_msg
    if message and "/" in message:
        patch = patch.model_copy(update={"error_msg": relative_message(message, _files(task))})
    return Success(
        RunRecord(
            task=folder.task,
            model=folder.model,
            agent=folder.agent,
            run_id=folder.run_id,
            patch=patch,
            started_at=started,
            reference=bool(reference),
            spend=None if doc.get("spend_recorded") is False else doc.get("spend"),
            agent_seconds=runtime.get("agent_duration"),
            checks=_task_checks(task) if task is not None else None,
            folder=folder.path,
            cached_from=doc.get("cached_from"),
            status_given=given,
            flags=guard_flags(doc.get("guard")),
            listed=guard_listed(doc.get("guard")),
            containment=mode if (mode := doc.get("containment")).__class__ is str else None,
            error_kind=runtime.get("error_kind"),
            attempts=_attempts(doc.get("attempts")),
        )
    )


def _attempts(said: object) -> int:
    """The attempts a summary says its grade took (1 when it says none, or not a count)."""
    return said if isinstance(said, int) and not isinstance(said, bool) and said > 1 else 1


def _first_error(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in err["loc"])
    message = str(err["msg"]).splitlines()[0] if err["msg"] else "invalid"
    return f"{where}: {message}" if where else message
