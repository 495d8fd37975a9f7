"""SSEBench's daemon wire (SPEC §9): the documents its SDK, MCP server, evaluator and entrypoint
exchange with the task daemon, key for key.

Pure core. SSEBench's Python SDK builds its reply dataclasses with `Class(**data)` (or dacite),
so a reply carrying one key more than the original daemon sends breaks every client; these
models hold exactly the original's keys (`extra="forbid"`). ssegrade's own, richer documents
are in `ssegrade.protocol._documents`, served under `/ssegrade`.

The functions here build the replies from what the daemon knows (the task, file texts the
interpreter read, the grade's bytes); `ssegrade.protocol._calls` reads the tool calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError

from ssegrade.internal.answers import ScriptResult
from ssegrade.internal.bencher import task_path
from ssegrade.internal.result import PatchResult, patch_result_model
from ssegrade.internal.task import Task
from ssegrade.protocol._documents import ChangedFile

__all__ = [
    "I64_MAX",
    "I64_MIN",
    "WireCapabilities",
    "WireChangedFile",
    "WireDialog",
    "WireDiff",
    "WireFiles",
    "WireMetadata",
    "WirePatchResult",
    "WireResult",
    "WireRuntimeResult",
    "WireScriptResult",
    "WireSuccess",
    "WireTaskDescription",
    "WireVersion",
    "dialog_entries",
    "wire_capabilities",
    "wire_files",
    "wire_metadata",
    "wire_result",
    "wire_script",
]


class _Doc(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")


class WireVersion(_Doc):
    """`GET /version`."""

    version: str


class WireTaskDescription(_Doc):
    """What the agent is told: the issue, the report files' contents, the bug's description."""

    issue: str | None
    crash_report: list[str] | None
    bug_description: str | None


class WireMetadata(_Doc):
    """`GET /project`: the task, with its report files and build and test scripts as text;
    `source` is the agent's tree and `poc` the PoCs' absolute paths (to pass to `run_poc`)."""

    id: str
    project: str
    language: str
    source: str
    task_description: WireTaskDescription
    poc: list[str]
    build_script: str | None
    test_script: str | None


class WireCapabilities(_Doc):
    """`GET /capabilities`: which checks the task has."""

    can_build: bool
    can_run_poc: bool
    poc_count: int
    has_function_test: bool
    has_intent_test: bool


class WireScriptResult(_Doc):
    """A tool's answer: the exit code and the output."""

    code: int
    stdout: str
    stderr: str


class WireDiff(_Doc):
    """`GET /diff`, `GET /final_diff`, `GET /reference/patch`."""

    diff: str


class WireChangedFile(_Doc):
    """One changed path of `GET /files`."""

    path: str
    status: Literal["added", "deleted", "modified"]
    additions: int
    deletions: int


class WireFiles(_Doc):
    """`GET /files`."""

    files: list[WireChangedFile]


if TYPE_CHECKING:  # the fields are `PatchResult`'s, derived when the module loads
    WirePatchResult = _Doc
else:
    WirePatchResult = patch_result_model(
        "WirePatchResult",
        _Doc,
        PatchResult,
        status=str | None,
        required=True,
        doc="The grade inside `GET /result`; `status` is left out when the grade has none.",
    )


class WireRuntimeResult(_Doc):
    """The run's facts inside `GET /result`."""

    agent_duration: int
    agent_timeout: bool
    evaluator_timeout: bool


class WireResult(_Doc):
    """`GET /result`: `{"available": false}` until a readable grade exists."""

    available: bool
    patch_result: WirePatchResult | None = None
    runtime_result: WireRuntimeResult | None = None


class WireSuccess(_Doc):
    """`POST /prepare_grading`, `POST /admin/agent_exited`."""

    success: Literal[True] = True


class WireDialog(_Doc):
    """`GET /agent/dialog`: the dialog entries the agent side wrote."""

    entries: list[dict[str, Any]]


# --------------------------------------------------------------------------- replies


def wire_metadata(task: Task, folder: str, source: str, texts: Mapping[str, str]) -> WireMetadata:
    """The `GET /project` reply: `texts` maps a config path (report file, build or test script)
    to its content as read (a file that cannot be read is the empty text).

    >>> task = Task(id="t", scripts={"build": "b.sh"}, files={"poc": ["pocs/a"]})
    >>> meta = wire_metadata(task, "/ssebench", "/src/p", {"b.sh": "make"})
    >>> meta.poc, meta.build_script, meta.test_script, meta.project
    (['/ssebench/pocs/a'], 'make', None, '')
    """
    described = task.task_description
    reports = list(described.crash_report) if described is not None else []
    scripts = task.scripts
    return WireMetadata(
        id=task.id,
        project=task.project or "",
        language=task.language or "",
        source=source,
        task_description=WireTaskDescription(
            issue=described.issue if described is not None else None,
            crash_report=[texts.get(path, "") for path in reports] if reports else None,
            bug_description=described.bug_description if described is not None else None,
        ),
        poc=[task_path(folder, poc) for poc in task.files.poc],
        build_script=None if scripts.build is None else texts.get(scripts.build, ""),
        test_script=None if scripts.test is None else texts.get(scripts.test, ""),
    )


def wire_capabilities(task: Task) -> WireCapabilities:
    """The `GET /capabilities` reply.

    >>> wire_capabilities(Task(id="t", scripts={"test": "t.sh"})).has_function_test
    True
    """
    checks = task.checks
    return WireCapabilities(
        can_build="build" in checks,
        can_run_poc="poc" in checks,
        poc_count=len(task.files.poc),
        has_function_test="function_test" in checks,
        has_intent_test="intent_test" in checks,
    )


def wire_script(result: ScriptResult) -> WireScriptResult:
    """A script's result on the wire: its code and output only."""
    return WireScriptResult(code=result.code, stdout=result.stdout, stderr=result.stderr)


def wire_files(files: Sequence[ChangedFile]) -> WireFiles:
    """The `GET /files` reply from ssegrade's changed files."""
    return WireFiles(
        files=[
            WireChangedFile(
                path=f.path, status=f.status, additions=f.additions, deletions=f.deletions
            )
            for f in files
        ]
    )


_I32 = Annotated[StrictInt, Field(ge=-(2**31), le=2**31 - 1)]
"""The original's 32-bit integers: a grade's counts and duration outside them do not read."""
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
"""The bounds of the original's 64-bit integers: a dialog line's `seq` and `since`."""


class _Read(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="ignore")


def _original_type(annotation: Any) -> Any:
    """A grade field's type as the original reads it: strict booleans, 32-bit integers."""
    if annotation == bool | None:
        return StrictBool | None
    if annotation == int | None:
        return _I32 | None
    return annotation


if TYPE_CHECKING:
    _StoredPatch = _Read
else:
    _StoredPatch = patch_result_model(
        "_StoredPatch", _Read, PatchResult, status=str | None, field=_original_type
    )


class _StoredRuntime(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="ignore")

    agent_duration: _I32
    agent_timeout: StrictBool
    evaluator_timeout: StrictBool


class _Stored(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="ignore")

    patch_result: _StoredPatch
    runtime_result: _StoredRuntime


def wire_result(data: bytes | None) -> dict[str, Any]:
    """The `GET /result` reply from `result.json`'s bytes (None: no file): unavailable when
    there is none, it is blank or it does not read as a grade; `status` only when it has one.

    >>> wire_result(None)
    {'available': False}
    >>> doc = b'{"patch_result": {"build_success": true}, "runtime_result":'
    >>> doc += b' {"agent_duration": 3, "agent_timeout": false, "evaluator_timeout": false}}'
    >>> sorted(wire_result(doc)["patch_result"])[:3]
    ['build_success', 'error_log', 'error_msg']
    """
    if data is None or not data.strip():
        return {"available": False}
    try:
        stored = _Stored.model_validate_json(data)
    except ValidationError:
        return {"available": False}
    patch = WirePatchResult(**stored.patch_result.model_dump()).model_dump()
    runtime = WireRuntimeResult(**stored.runtime_result.model_dump())
    status = patch.pop("status")
    graded = {} if status is None else {"status": status}
    return {
        "available": True,
        "patch_result": graded | patch,
        "runtime_result": runtime.model_dump(),
    }


def dialog_entries(text: str, since: int) -> list[dict[str, Any]]:
    """The dialog entries of a JSON Lines text whose integer `seq` is above `since`; lines
    that are not JSON objects with an integer `seq` (one that fits 64 bits) are skipped.

    >>> dialog_entries('{"seq": 1}\\nnot json\\n{"seq": 2, "x": 1}\\n{"y": 3}\\n', 1)
    [{'seq': 2, 'x': 1}]
    """
    entries: list[dict[str, Any]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        seq = entry.get("seq") if isinstance(entry, dict) else None
        if isinstance(seq, int) and not isinstance(seq, bool) and since < seq <= I64_MAX:
            entries.append(entry)
    return entries
