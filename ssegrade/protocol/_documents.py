"""ssegrade's own daemon API (SPEC §9): what each request carries and each reply holds, under
`/ssegrade` (`PREFIX`).

Pure core. The daemon server and ssegrade's clients (the evaluator's remote interpreter,
`test-patch`) speak these pydantic models, and the OpenAPI document of the API is generated
from them. Replies start with the field names of SSEBench's daemon (`can_build`…, `diff`,
`code`/`stdout`/`stderr`) and add ssegrade's own; SSEBench's clients read the root routes
instead (`ssegrade.protocol._wire`), which carry the original's keys only. A bencher reply is
the `Bench` answer itself, `ssegrade.internal.effects.ScriptResult`: one model for one document.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ssegrade.internal.checks import Action, Check

__all__ = [
    "API_VERSION",
    "PREFIX",
    "AgentExitedReply",
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
]

API_VERSION = 1
"""Bumped when a reply loses a field or changes its meaning; added fields keep the version."""

PREFIX = "/ssegrade"
"""Where ssegrade's own API is served: a client that wants ssegrade's fields asks here (the
root routes are SSEBench's wire)."""

Listener = Literal["agent", "admin"]
"""Who is asking: an agent-facing listener (Unix socket or TCP) or the admin socket."""


class _Doc(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")


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
