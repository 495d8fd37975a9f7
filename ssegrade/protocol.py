"""The daemon API (SPEC §9): request and reply documents, and the rules that decide a request.

Pure core. The daemon server and its clients (the evaluator's remote interpreter, `test-patch`)
speak these pydantic models; the OpenAPI document of the API is generated from them. The rules
of the API that need no I/O live here too: who may call which action (`refusal`), which PoC a
request names (`resolve_poc`), the public view of a task (`public_project`), how the grading
effects' answers travel (`bencher_reply`/`script_result`, `prepare_reply`/`prepared_result`),
and which files a captured patch changes (`changed_files`).
"""

from __future__ import annotations

import base64
import re
from pathlib import PurePosixPath
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from returns.result import Failure, Result, Success

from ssegrade.bencher import task_path
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
    "ChangedFile",
    "ErrorBody",
    "FilesReply",
    "Listener",
    "PatchText",
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

_CHECK_ORDER: tuple[Check, ...] = ("build", "poc", "function_test", "intent_test")


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
    """`GET /capabilities`: the difficulty level, the actions the asking listener may call
    now, and what the task has (the checks and its PoCs as config paths)."""

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
    """How the action's script ended. `code` is -1 when it was killed or could not run (its
    reason is in `stderr`); `log_file` is the daemon's log of the run (admin listener only)."""

    code: int
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    killed: bool = False
    log_file: str | None = None


class PrepareSucceeded(_Doc):
    """The patch is captured, saved and applied (or empty: the unmodified project is graded)."""

    outcome: Literal["prepared"] = "prepared"
    empty: bool
    patch_bytes: int


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


class PatchText(_Doc):
    """A patch as JSON text: UTF-8 when its bytes are UTF-8, else base64."""

    patch: str
    encoding: Literal["utf-8", "base64"]


ChangeKind = Literal["added", "deleted", "modified", "mode_changed", "type_changed"]


class ChangedFile(_Doc):
    """One path a patch changes, with how; modes are git's (`100644`, `100755`, `120000`)."""

    path: str
    kind: ChangeKind
    old_mode: str | None = None
    new_mode: str | None = None
    binary: bool = False


class FilesReply(_Doc):
    """`GET /files`: the paths the live patch changes, in patch order."""

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
        checks=[check for check in _CHECK_ORDER if check in task.checks],
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
    return Capabilities(
        listener=listener,
        level=level.number,
        level_name=level.name,
        actions=actions,
        agent_phase=agent_phase,
        checks=[check for check in _CHECK_ORDER if check in task.checks],
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
    )


def script_result(reply: BencherReply) -> ScriptResult:
    """A reply document as the `Bench` answer it carries.

    >>> script_result(bencher_reply(ScriptResult(code=0, stdout="ok", seconds=1.5)))
    ScriptResult(code=0, stdout='ok', stderr='', seconds=1.5, killed=False, log_file=None)
    """
    return ScriptResult(
        code=reply.code,
        stdout=reply.stdout,
        stderr=reply.stderr,
        seconds=reply.seconds,
        killed=reply.killed,
        log_file=reply.log_file,
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
        return PrepareSucceeded(empty=done.empty, patch_bytes=done.patch_bytes)
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
        case PrepareSucceeded(empty=empty, patch_bytes=size):
            return Success(Prepared(patch_bytes=size, empty=empty))
        case PrepareApplyFailed(log=log, log_file=log_file):
            return Failure(ApplyError(log, log_file))
        case PrepareCaptureFailed(message=message):
            return Failure(CaptureError(message))


def encode_patch(data: bytes) -> PatchText:
    """Patch bytes as JSON text: as they are when UTF-8, else base64.

    >>> encode_patch(b"diff --git a/x b/x\\n").encoding, encode_patch(b"\\xff").patch
    ('utf-8', '/w==')
    """
    try:
        return PatchText(patch=data.decode("utf-8"), encoding="utf-8")
    except UnicodeDecodeError:
        return PatchText(patch=base64.b64encode(data).decode("ascii"), encoding="base64")


def decode_patch(text: PatchText) -> bytes:
    """The bytes of a patch sent as JSON text.

    >>> decode_patch(encode_patch(b"\\xff\\x00a")) == b"\\xff\\x00a"
    True
    """
    if text.encoding == "base64":
        return base64.b64decode(text.patch, validate=True)
    return text.patch.encode("utf-8")


# ---------------------------------------------------------------------------- changed files

_HEADER = b"diff --git "
_ESCAPES = {b"a": 7, b"b": 8, b"t": 9, b"n": 10, b"v": 11, b"f": 12, b"r": 13, b'"': 34, b"\\": 92}
_OCTAL = re.compile(rb"\\([0-7]{3})")


def _unquote(quoted: bytes) -> bytes:
    out = bytearray()
    index = 0
    while index < len(quoted):
        char = quoted[index : index + 1]
        if char != b"\\":
            out += char
            index += 1
            continue
        octal = _OCTAL.match(quoted, index)
        if octal is not None:
            out.append(int(octal.group(1), 8))
            index = octal.end()
            continue
        escaped = quoted[index + 1 : index + 2]
        out.append(_ESCAPES.get(escaped, escaped[0] if escaped else 92))
        index += 2
    return bytes(out)


def _header_path(rest: bytes) -> bytes | None:
    """The path of `a/P b/P` (a patch without renames names the same path twice)."""
    if rest.startswith(b'"'):
        end = 1
        while end < len(rest) and rest[end : end + 1] != b'"':
            end += 2 if rest[end : end + 1] == b"\\" else 1
        first = _unquote(rest[1:end])
        return first[2:] if first.startswith(b"a/") else None
    size = (len(rest) - 5) // 2
    path = rest[2 : 2 + size]
    return path if rest == b"a/" + path + b" b/" + path else None


def _kind(lines: list[bytes]) -> tuple[ChangeKind, str | None, str | None, bool]:
    old_mode = new_mode = None
    kind: ChangeKind = "modified"
    binary = False
    for line in lines:
        if line.startswith(b"new file mode "):
            kind, new_mode = "added", line[14:].decode("ascii", "replace")
        elif line.startswith(b"deleted file mode "):
            kind, old_mode = "deleted", line[18:].decode("ascii", "replace")
        elif line.startswith(b"old mode "):
            old_mode = line[9:].decode("ascii", "replace")
        elif line.startswith(b"new mode "):
            new_mode = line[9:].decode("ascii", "replace")
        elif line.startswith((b"GIT binary patch", b"Binary files ")):
            binary = True
        elif line.startswith((b"@@", b"--- ", b"+++ ")):
            break
    if (
        kind == "modified"
        and old_mode
        and new_mode
        and not any(line.startswith((b"@@", b"GIT binary patch")) for line in lines)
    ):
        kind = "mode_changed"
    return kind, old_mode, new_mode, binary


def changed_files(patch: bytes) -> tuple[ChangedFile, ...]:
    """The paths a `git diff --no-renames` patch changes, in patch order, with how.

    A path deleted and added again in the same patch changed type (file, symlink, directory).

    >>> patch = (b"diff --git a/x.c b/x.c\\nindex 1..2 100644\\n--- a/x.c\\n+++ b/x.c\\n"
    ...          b"@@ -1 +1 @@\\n"
    ...          b"diff --git a/run.sh b/run.sh\\nold mode 100644\\nnew mode 100755\\n"
    ...          b'diff --git "a/caf\\\\303\\\\251" "b/caf\\\\303\\\\251"\\n'
    ...          b"new file mode 100644\\n")
    >>> [(f.path, f.kind) for f in changed_files(patch)]
    [('x.c', 'modified'), ('run.sh', 'mode_changed'), ('café', 'added')]
    """
    blocks: list[tuple[bytes, list[bytes]]] = []
    for line in patch.split(b"\n"):
        if line.startswith(_HEADER):
            named = _header_path(line[len(_HEADER) :])
            if named is not None:
                blocks.append((named, []))
                continue
        if blocks:
            blocks[-1][1].append(line)
    found: list[ChangedFile] = []
    for raw, lines in blocks:
        kind, old_mode, new_mode, binary = _kind(lines)
        path = raw.decode("utf-8", "backslashreplace")
        previous = found[-1] if found else None
        if previous and previous.path == path and previous.kind == "deleted" and kind == "added":
            found[-1] = ChangedFile(
                path=path,
                kind="type_changed",
                old_mode=previous.old_mode,
                new_mode=new_mode,
                binary=binary or previous.binary,
            )
            continue
        found.append(
            ChangedFile(path=path, kind=kind, old_mode=old_mode, new_mode=new_mode, binary=binary)
        )
    return tuple(found)
