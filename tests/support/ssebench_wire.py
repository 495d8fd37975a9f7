"""The shapes SSEBench's own clients read from its daemon's wire, key for key.

The field lists are written from SSEBench's Python SDK (`sse.metadata.Metadata`,
`TaskDescription`, `Capabilities`, `sse.helper.ScriptResult`, built with `Class(**data)` or
dacite) and from its daemon's reply types (`/version`, `/diff`, `/files`, `/result`,
`/prepare_grading`, `/admin/agent_exited`, `/agent/dialog`, the error body); the SDK's
dataclasses are rebuilt here from those field lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

VERSION = {"version"}
METADATA = {
    "id",
    "project",
    "language",
    "source",
    "task_description",
    "poc",
    "build_script",
    "test_script",
}
TASK_DESCRIPTION = {"issue", "crash_report", "bug_description"}
CAPABILITIES = {"can_build", "can_run_poc", "poc_count", "has_function_test", "has_intent_test"}
SCRIPT_RESULT = {"code", "stdout", "stderr"}
DIFF = {"diff"}
FILES = {"files"}
CHANGED_FILE = {"path", "status", "additions", "deletions"}
RESULT_UNAVAILABLE = {"available"}
RESULT = {"available", "patch_result", "runtime_result"}
PATCH_RESULT = {
    "status",
    "build_success",
    "pov_passed",
    "pov_total",
    "func_test_success",
    "intent_test_success",
    "error_msg",
    "error_log",
}
RUNTIME_RESULT = {"agent_duration", "agent_timeout", "evaluator_timeout"}
SUCCESS = {"success"}
ERROR = {"error"}
DIALOG = {"entries"}

ACCESS = {
    ("GET", "/version"): "any",
    ("GET", "/project"): "any",
    ("GET", "/capabilities"): "any",
    ("POST", "/tool/bencher"): "any",
    ("GET", "/diff"): "any",
    ("GET", "/files"): "any",
    ("GET", "/agent/dialog"): "any",
    ("GET", "/result"): "any",
    ("POST", "/prepare_grading"): "admin",
    ("GET", "/final_diff"): "any",
    ("POST", "/admin/agent_exited"): "admin",
    ("GET", "/reference/patch"): "after-agent",
}
"""Who each route of SSEBench's daemon contract serves (its `x-access`): `any` every
listener; `admin` the admin socket only (403 on the agent-facing ones); `after-agent` the admin
socket, and the agent-facing listeners once `POST /admin/agent_exited` ended the agent phase
(403 before)."""
REFERENCE_LOCKED = "reference patch is unavailable while the agent is running"
"""The contract's 403 text for the reference fix asked on an agent-facing listener too early."""


@dataclass
class TaskDescription:
    """The SDK's `TaskDescription`, rebuilt from `TASK_DESCRIPTION`."""

    issue: str | None
    crash_report: list[str] | None
    bug_description: str | None


@dataclass
class Metadata:
    """The SDK's `Metadata`, rebuilt from `METADATA`."""

    id: str
    project: str
    language: str
    source: Path
    task_description: TaskDescription
    poc: list[Path]
    build_script: str | None = None
    test_script: str | None = None


@dataclass
class Capabilities:
    """The SDK's `Capabilities`, rebuilt from `CAPABILITIES`; built with `Capabilities(**data)`."""

    can_build: bool
    can_run_poc: bool
    poc_count: int
    has_function_test: bool
    has_intent_test: bool


@dataclass
class ScriptResult:
    """The SDK's `ScriptResult`, rebuilt from `SCRIPT_RESULT`; built with `ScriptResult(**data)`."""

    code: int
    stdout: str
    stderr: str
