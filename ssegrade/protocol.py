"""The daemon protocol (SPEC §9): request and reply documents, and the rules that decide a request.

Pure core. The daemon server and its clients (the evaluator's remote interpreter, `test-patch`)
speak these pydantic models; the OpenAPI document of the API is generated from them. Replies keep
the field names of SSEBench's original daemon (`can_build`…, `diff`, `code`/`stdout`/`stderr`),
with ssegrade's own fields beside them. The rules of the API that need no I/O live here too: who
may call which action (`refusal`), which PoC a request names (`resolve_poc`), the public view of
a task (`public_project`), how the grading effects' answers travel
(`bencher_reply`/`script_result`, `prepare_reply`/`prepared_result`), and how git's list of the
changed files reads (`changed_files`).
"""

from __future__ import annotations

import base64
from pathlib import PurePosixPath
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from returns.result import Failure, Result, Success

from ssegrade.bencher import task_path
from ssegrade.checks import grading_order
from ssegrade.difficulty import ACTIONS, Level, allowed
from ssegrade.effects import (
    Action,
    ApplyError,
    CaptureError,
    Prepared,
    PrepareError,
    ScriptResult,
)
from ssegrade.task import Check, Task

__all__ = [
    "AGENT_PHASE_OVER",
    "API_VERSION",
    "AgentExitedReply",
    "BencherReply",
    "BencherRequest",
    "Capabilities",
    "ChangeKind",
    "ChangeStatus",
    "ChangedFile",
    "DiffText",
    "ErrorBody",
    "FilesReply",
    "Listener",
    "PrepareApplyFailed",
    "PrepareCaptureFailed",
    "PrepareReply",
    "PrepareSucceeded",
    "ProjectScripts",
    "ProjectView",
    "VersionReply",
    "bencher_reply",
    "capabilities",
    "changed_files",
    "decode_patch",
    "encode_patch",
    "prepare_reply",
    "prepared_result",
    "public_project",
    "refusal",
    "resolve_poc",
    "script_result",
]

API_VERSION = 1
"""Bumped when a reply loses a field or changes its meaning; added fields keep the version."""

Listener = Literal["agent", "admin"]
"""Who is asking: an agent-facing listener (Unix socket or TCP) or the admin socket."""

AGENT_PHASE_OVER = "the agent phase is over: the agent-facing tools are closed"


def _in_order(checks: frozenset[Check]) -> list[Check]:
    return [check.name for check in grading_order() if check.name in checks]


class _Doc(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# ---------------------------------------------------------------------------- documents


class ErrorBody(_Doc):
    """Every error reply: one line saying what was refused and why."""

    error: str


class VersionReply(_Doc):
    """`GET /version`."""

    name: Literal["ssegrade"] = "ssegrade"
    version: str
    api: int = API_VERSION


class ProjectScripts(_Doc):
    """The task's scripts, as config paths."""

    build: str | None = None
    run: str | None = None
    test: str | None = None


class ProjectView(_Doc):
    """`GET /project`: the public view of `config.yaml`. It never carries the reference patch
    nor the hidden tests (neither their path nor their content), nor keys it does not know."""

    id: str
    project: str | None = None
    language: str | None = None
    checks: list[Check]
    scripts: ProjectScripts
    pocs: list[str]
    issue: str | None = None
    bug_description: str | None = None
    crash_report: list[str] = Field(default_factory=list)


class Capabilities(_Doc):
    """`GET /capabilities`: what the task has, in the original daemon's fields (`can_build`: a
    build script; `can_run_poc`: a run script and PoCs; `poc_count`; `has_function_test`: a test
    script; `has_intent_test`: a test script and hidden tests), then ssegrade's: the difficulty
    level, the actions the asking listener may call now, the checks and the PoCs' config paths.
    The level can still withhold a check the task has."""

    can_build: bool
    can_run_poc: bool
    poc_count: int
    has_function_test: bool
    has_intent_test: bool
    listener: Listener
    level: int
    level_name: str
    actions: list[Action]
    agent_phase: bool
    checks: list[Check]
    pocs: list[str]


class BencherRequest(_Doc):
    """`POST /tool/bencher?action=…` body. `grading` selects the grading session (admin only);
    `poc` names the PoC of `run_poc` (config path, or absolute path in the task folder);
    `limit` is the most seconds the caller allows the script (the daemon's own limit applies
    when it is smaller or absent)."""

    grading: bool = False
    poc: str | None = None
    limit: Annotated[float, Field(gt=0)] | None = None


class BencherReply(_Doc):
    """How the action's script ended: the original daemon's `code`, `stdout`, `stderr`, then
    ssegrade's fields. `code` is -1 when it was killed or could not run (its reason is in
    `stderr`); `not_started` says why a task script could not be started at all (a broken
    task, not a failed check); `log_file` is the daemon's log of the run (admin listener
    only)."""

    code: int
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    killed: bool = False
    log_file: str | None = None
    not_started: str | None = None


class PrepareSucceeded(_Doc):
    """The patch is captured, saved and applied (or empty: the unmodified project is graded);
    `left_out` names the paths the capture left out, `log_file` the capture's log."""

    outcome: Literal["prepared"] = "prepared"
    empty: bool
    patch_bytes: int
    left_out: list[str] = Field(default_factory=list)
    log_file: str | None = None


class PrepareApplyFailed(_Doc):
    """The captured patch does not apply to the grading repo; `log` is git's message."""

    outcome: Literal["apply_failed"] = "apply_failed"
    log: str
    log_file: str | None = None


class PrepareCaptureFailed(_Doc):
    """The patch could not be captured, or its fidelity proof failed."""

    outcome: Literal["capture_failed"] = "capture_failed"
    message: str


PrepareReply = Annotated[
    PrepareSucceeded | PrepareApplyFailed | PrepareCaptureFailed, Field(discriminator="outcome")
]
"""`POST /prepare_grading`: one of three outcomes, told apart by `outcome`."""


class AgentExitedReply(_Doc):
    """`POST /admin/agent_exited`: the agent phase is over (agent-facing tools are closed)."""

    agent_phase: Literal[False] = False


class DiffText(_Doc):
    """A patch as JSON (`GET /diff`, `/final_diff`, `/reference/patch`): `diff` is its text, as
    the original daemon sends it; a patch whose bytes are not all UTF-8 has them replaced by
    U+FFFD there, and its exact bytes in `base64` (null otherwise)."""

    diff: str
    base64: str | None = None


ChangeKind = Literal["added", "deleted", "modified", "mode_changed", "type_changed"]
ChangeStatus = Literal["added", "deleted", "modified"]


class ChangedFile(_Doc):
    """One path a patch changes: the original daemon's `status`, `additions` and `deletions`
    (0 for a binary file), and ssegrade's `kind`, modes (git's: `100644`, `100755`, `120000`;
    null for a side that has none) and `binary`."""

    path: str
    status: ChangeStatus
    additions: int = 0
    deletions: int = 0
    kind: ChangeKind
    old_mode: str | None = None
    new_mode: str | None = None
    binary: bool = False


class FilesReply(_Doc):
    """`GET /files`: the paths the live patch changes, in git's order (by path)."""

    files: list[ChangedFile]


# ---------------------------------------------------------------------------- rules


def refusal(
    level: Level, listener: Listener, agent_phase: bool, action: Action, grading: bool
) -> str | None:
    """Why a bencher call is forbidden (403, SPEC §9); None when it may run.

    The admin listener may always call every action, on either session. An agent-facing
    listener may call only during the agent phase, never on the grading session, and only the
    actions its difficulty level allows.

    >>> from ssegrade.difficulty import LEVELS
    >>> refusal(LEVELS[4], "admin", False, "build", True) is None
    True
    >>> refusal(LEVELS[2], "agent", True, "run_poc", False)
    'run_poc is not available at difficulty level 2 (NO_FUTURE_TEST)'
    >>> refusal(LEVELS[0], "agent", False, "build", False)
    'the agent phase is over: the agent-facing tools are closed'
    """
    if listener == "admin":
        return None
    if not agent_phase:
        return AGENT_PHASE_OVER
    if grading:
        return "grading runs only through the admin socket"
    if not allowed(level, action):
        return f"{action} is not available at difficulty level {level.number} ({level.name})"
    return None


def resolve_poc(
    task: Task, folder: str, action: Action, poc: str | None
) -> Result[str | None, str]:
    """The config path of the PoC a bencher request names, or why the request is bad (400).

    `run_poc` needs a PoC the task names, given as its config path or as its absolute path in
    the task folder; a path with `..` is refused outright. Other actions take no PoC.

    >>> task = Task(id="t", scripts={"run": "run.sh"}, files={"poc": ["pocs/a.bin"]})
    >>> resolve_poc(task, "/ssebench", "run_poc", "/ssebench/pocs/a.bin").unwrap()
    'pocs/a.bin'
    >>> resolve_poc(task, "/ssebench", "run_poc", "./pocs/a.bin").unwrap()
    'pocs/a.bin'
    >>> resolve_poc(task, "/ssebench", "run_poc", "pocs/../pocs/a.bin").failure()
    "poc 'pocs/../pocs/a.bin' must not contain '..'"
    >>> resolve_poc(task, "/ssebench", "run_poc", "pocs/b.bin").failure()
    "the task names no PoC 'pocs/b.bin'; its PoCs are: pocs/a.bin"
    """
    if action != "run_poc":
        if poc is not None:
            return Failure(f"poc is only for run_poc, not {action}")
        return Success(None)
    if not poc:
        return Failure("run_poc needs a poc: one of the task's PoC paths")
    if "\x00" in poc:
        return Failure("poc must not contain NUL")
    wanted = PurePosixPath(poc)
    if ".." in wanted.parts:
        return Failure(f"poc {poc!r} must not contain '..'")
    for configured in task.files.poc:
        if wanted in (PurePosixPath(configured), PurePosixPath(task_path(folder, configured))):
            return Success(configured)
    names = ", ".join(task.files.poc) or "none"
    return Failure(f"the task names no PoC {poc!r}; its PoCs are: {names}")


def public_project(task: Task) -> ProjectView:
    """The public view of a task: what `GET /project` may show anyone.

    >>> view = public_project(Task(id="t", files={"patch": "fix.diff", "future_test": "f.diff"}))
    >>> "fix.diff" in view.model_dump_json() or "f.diff" in view.model_dump_json()
    False
    """
    described = task.task_description
    return ProjectView(
        id=task.id,
        project=task.project,
        language=task.language,
        checks=_in_order(task.checks),
        scripts=ProjectScripts(
            build=task.scripts.build, run=task.scripts.run, test=task.scripts.test
        ),
        pocs=list(task.files.poc),
        issue=described.issue if described else None,
        bug_description=described.bug_description if described else None,
        crash_report=list(described.crash_report) if described else [],
    )


def capabilities(task: Task, level: Level, listener: Listener, agent_phase: bool) -> Capabilities:
    """What the asking listener may do now, and what the task has.

    >>> from ssegrade.difficulty import LEVELS
    >>> task = Task(id="t", scripts={"build": "b.sh", "test": "t.sh"})
    >>> capabilities(task, LEVELS[3], "agent", True).actions
    ['build']
    >>> capabilities(task, LEVELS[3], "agent", False).actions
    []
    >>> capabilities(task, LEVELS[4], "admin", False).actions
    ['build', 'run_poc', 'function_test', 'intent_test']
    """
    actions = [
        action
        for action in ACTIONS
        if refusal(level, listener, agent_phase, action, grading=False) is None
    ]
    checks = task.checks
    return Capabilities(
        can_build="build" in checks,
        can_run_poc="poc" in checks,
        poc_count=len(task.files.poc),
        has_function_test="function_test" in checks,
        has_intent_test="intent_test" in checks,
        listener=listener,
        level=level.number,
        level_name=level.name,
        actions=actions,
        agent_phase=agent_phase,
        checks=_in_order(checks),
        pocs=list(task.files.poc),
    )


# ---------------------------------------------------------------------------- answers


def bencher_reply(result: ScriptResult, *, show_log_file: bool = True) -> BencherReply:
    """A `Bench` answer as a reply document.

    >>> bencher_reply(ScriptResult(code=1, stderr="boom", log_file="/r/logs/x.log"),
    ...               show_log_file=False).log_file is None
    True
    """
    return BencherReply(
        code=result.code,
        stdout=result.stdout,
        stderr=result.stderr,
        seconds=result.seconds,
        killed=result.killed,
        log_file=result.log_file if show_log_file else None,
        not_started=result.not_started,
    )


def script_result(reply: BencherReply) -> ScriptResult:
    """A reply document as the `Bench` answer it carries.

    >>> done = ScriptResult(code=-1, stderr="no such file", not_started="cannot start b.sh")
    >>> script_result(bencher_reply(done)) == done
    True
    """
    return ScriptResult(
        code=reply.code,
        stdout=reply.stdout,
        stderr=reply.stderr,
        seconds=reply.seconds,
        killed=reply.killed,
        log_file=reply.log_file,
        not_started=reply.not_started,
    )


def prepare_reply(
    prepared: Result[Prepared, PrepareError],
) -> PrepareSucceeded | PrepareApplyFailed | PrepareCaptureFailed:
    """A `PrepareGrading` answer as a reply document.

    >>> prepare_reply(Success(Prepared(patch_bytes=10, empty=False))).outcome
    'prepared'
    >>> prepare_reply(Failure(CaptureError("unreadable"))).message
    'unreadable'
    """
    if isinstance(prepared, Success):
        done = prepared.unwrap()
        return PrepareSucceeded(
            empty=done.empty,
            patch_bytes=done.patch_bytes,
            left_out=list(done.left_out),
            log_file=done.log_file,
        )
    error = prepared.failure()
    if isinstance(error, ApplyError):
        return PrepareApplyFailed(log=error.log, log_file=error.log_file)
    return PrepareCaptureFailed(message=error.message)


def prepared_result(
    reply: PrepareSucceeded | PrepareApplyFailed | PrepareCaptureFailed,
) -> Result[Prepared, PrepareError]:
    """A reply document as the `PrepareGrading` answer it carries.

    >>> prepared_result(prepare_reply(Failure(ApplyError("does not apply", "a.log"))))
    <Failure: ApplyError(log='does not apply', log_file='a.log')>
    """
    match reply:
        case PrepareSucceeded(empty=empty, patch_bytes=size, left_out=left, log_file=log):
            return Success(Prepared(size, empty, left_out=tuple(left), log_file=log))
        case PrepareApplyFailed(log=log, log_file=log_file):
            return Failure(ApplyError(log, log_file))
        case PrepareCaptureFailed(message=message):
            return Failure(CaptureError(message))


def encode_patch(data: bytes) -> DiffText:
    """Patch bytes as JSON: the text, and the exact bytes in base64 when they are not UTF-8.

    >>> encode_patch(b"diff --git a/x b/x\\n")
    DiffText(diff='diff --git a/x b/x\\n', base64=None)
    >>> encode_patch(b"\\xff")
    DiffText(diff='\ufffd', base64='/w==')
    """
    try:
        return DiffText(diff=data.decode("utf-8"))
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
        return DiffText(diff=text, base64=base64.b64encode(data).decode("ascii"))


def decode_patch(text: DiffText) -> bytes:
    """The bytes of a patch sent as JSON.

    >>> decode_patch(encode_patch(b"\\xff\\x00a")) == b"\\xff\\x00a"
    True
    """
    if text.base64 is not None:
        return base64.b64decode(text.base64, validate=True)
    return text.diff.encode("utf-8")


# ---------------------------------------------------------------------------- changed files

_NO_MODE = "000000"
_KINDS: dict[str, ChangeKind] = {"A": "added", "D": "deleted", "M": "modified", "T": "type_changed"}


def _raw_entries(fields: list[bytes]) -> tuple[list[tuple[bytes, bytes]], list[bytes]]:
    """Split `--raw` entries (a header and a path each) from the `--numstat` ones after them."""
    raw: list[tuple[bytes, bytes]] = []
    index = 0
    while index < len(fields) and fields[index].startswith(b":"):
        if index + 1 >= len(fields):
            raise ValueError("a raw entry without its path")
        raw.append((fields[index], fields[index + 1]))
        index += 2
    return raw, fields[index:]


def _changed_file(header: bytes, path: bytes, numstat: bytes | None) -> ChangedFile:
    old_mode, new_mode, old_oid, new_oid, letter = header[1:].decode("ascii").split(" ")
    kind = _KINDS.get(letter[:1])
    if kind is None:
        raise ValueError(f"unexpected change {letter!r}")
    if kind == "modified" and old_oid == new_oid and old_mode != new_mode:
        kind = "mode_changed"
    added = deleted = b"0"
    binary = False
    if numstat is not None:
        added, deleted, counted = numstat.split(b"\t", 2)
        if counted != path:
            raise ValueError("the line counts do not follow the raw entries")
        binary = added == b"-" and deleted == b"-"
    return ChangedFile(
        path=path.decode("utf-8", "backslashreplace"),
        status="added" if kind == "added" else "deleted" if kind == "deleted" else "modified",
        additions=0 if binary else int(added),
        deletions=0 if binary else int(deleted),
        kind=kind,
        old_mode=None if old_mode == _NO_MODE else old_mode,
        new_mode=None if new_mode == _NO_MODE else new_mode,
        binary=binary,
    )


def changed_files(listing: bytes) -> Result[tuple[ChangedFile, ...], str]:
    """The files of `git diff-tree -r -z --raw --numstat --no-renames`, with how they changed.

    Paths come NUL-terminated, so any name reads back as it is (a name that is not UTF-8
    shows its odd bytes as backslash escapes). A mode change alone is `mode_changed`; a file
    that became a symlink (or the other way) is `type_changed`, with `status` `modified`.

    >>> listing = (b":100644 100755 " + b"1" * 40 + b" " + b"1" * 40 + b" M\\0run.sh\\0"
    ...            b":000000 100644 " + b"0" * 40 + b" " + b"2" * 40 + b" A\\0a \\"b\\"\\nc\\0"
    ...            b"0\\t0\\trun.sh\\0" b"3\\t0\\ta \\"b\\"\\nc\\0")
    >>> [(f.path, f.kind, f.status, f.additions) for f in changed_files(listing).unwrap()]
    [('run.sh', 'mode_changed', 'modified', 0), ('a "b"\\nc', 'added', 'added', 3)]
    >>> changed_files(b":100644 100644 x").failure()
    'unreadable list of changed files: a raw entry without its path'
    """
    fields = listing.split(b"\0")
    if fields and not fields[-1]:
        fields.pop()
    try:
        raw, numstat = _raw_entries(fields)
        if numstat and len(numstat) != len(raw):
            raise ValueError("the line counts do not match the raw entries")
        counts: list[bytes | None] = list(numstat) if numstat else [None] * len(raw)
        found = tuple(
            _changed_file(header, path, count)
            for (header, path), count in zip(raw, counts, strict=True)
        )
    except (ValueError, UnicodeDecodeError) as exc:
        return Failure(f"unreadable list of changed files: {exc}")
    return Success(found)
