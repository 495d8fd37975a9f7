"""SSEBench's own document models, rebuilt for the tests from their field lists and rules.

What SSEBench's report and dataset tools require (read from its sources, written here anew):
the task model refuses unknown keys at every level and wants `project`, an https
`repository`, a `language` of `c`, `go` or `rust`, an absolute `source` and a task
description with at least one of its fields set; the run config wants `mode`, `timeout` and
`difficulty` (no defaults); the run summary wants `task`, `config`, `patch_result`,
`runtime_result` (three facts), a numeric `spend` and plugin outcomes (objects with a
`name`, a `hook` and a `status`). The report reads a run only when its
summary reads so.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

TASK_ID = r"^[A-Za-z0-9]+(?:(?:[._]|__|-+)[A-Za-z0-9]+)*$"

TASK_FIELDS = {
    "id",
    "project",
    "repository",
    "language",
    "source",
    "task_description",
    "scripts",
    "files",
    "sanitizer",
    "type",
    "binary",
    "trigger_commit",
    "patch_commit",
    "reference",
    "originality",
}
RUN_CONFIG_FIELDS = {
    "agent",
    "model",
    "mode",
    "timeout",
    "difficulty",
    "tool_layer",
    "egress",
    "reference_run",
    "plugins",
}

InTask = Annotated[str, Field(min_length=1, pattern=r"^[^/]")]
Text = Annotated[str, Field(pattern=r"\S")]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class TaskDescription(_Closed):
    issue: str | None = None
    crash_report: list[InTask] | None = None
    bug_description: str | None = None

    @model_validator(mode="after")
    def _something_said(self) -> Self:
        if not (self.issue or self.crash_report or self.bug_description):
            raise ValueError("the task description is empty")
        return self


class Scripts(_Closed):
    build: InTask | None = None
    run: InTask | None = None
    test: InTask | None = None


class Files(_Closed):
    patch: InTask | None = None
    future_test: InTask | None = None
    security_test: InTask | None = None
    intent_test: InTask | None = None
    poc: list[InTask] | None = None


class TaskModel(_Closed):
    """SSEBench's task model (its `config.yaml`, and `task` in a run summary)."""

    id: Annotated[str, Field(pattern=TASK_ID, max_length=128)]
    project: Text
    repository: Annotated[str, Field(pattern=r"^https://\S+$")]
    language: Literal["c", "go", "rust"]
    source: Annotated[str, Field(pattern=r"^/\S*$")]
    task_description: TaskDescription
    scripts: Scripts
    files: Files
    sanitizer: str | None = None
    type: str | None = None
    binary: str | None = None
    trigger_commit: str | None = None
    patch_commit: str | None = None
    reference: list[str] | None = None
    originality: Literal["public", "crafted"] | None = None


class RunConfig(BaseModel):
    """SSEBench's run config (`config` in a run summary)."""

    agent: str
    model: str
    mode: Literal["sidecar", "sandbox"]
    timeout: int
    difficulty: Annotated[int, Field(ge=0, le=4)]
    tool_layer: str | None = None
    egress: Literal["restricted", "open"] = "restricted"
    reference_run: bool = False
    plugins: list[str] = []


class PatchResult(BaseModel):
    status: Literal["passed", "failed", "error"] | None = None
    build_success: bool | None = None
    pov_passed: int | None = None
    pov_total: int | None = None
    func_test_success: bool | None = None
    intent_test_success: bool | None = None
    error_msg: str | None = None
    error_log: str | None = None


class RuntimeResult(BaseModel):
    agent_duration: int
    agent_timeout: bool
    evaluator_timeout: bool


class PluginOutcome(BaseModel):
    """How one plugin of a run ended (`plugin_results` in a run summary)."""

    name: str
    hook: str
    status: str
    exit_code: int = 0
    duration_seconds: float = 0.0
    reason: str | None = None
    error: str | None = None


class RunSummary(BaseModel):
    """SSEBench's run summary (`summary.json`), as its report reads it."""

    task: TaskModel
    config: RunConfig
    patch_result: PatchResult
    runtime_result: RuntimeResult
    spend: float
    run_id: str | None = None
    started_at: datetime | None = None
    plugin_results: list[PluginOutcome] = []
