"""What SSEBench's own tools require of the documents ssegrade writes for them.

Pure core. SSEBench's report reads a run's `summary.json` with its run summary model: `task`
is checked by its task model, which refuses any key it does not know (at every level) and
wants `project`, `repository` (an https URL), `language` (`c`, `go` or `rust`), an absolute
`source` and a task description; `config` is its run config, whose `mode`, `timeout` and
`difficulty` have no default. This module says what the run config holds (`RunConfig`, with
the defaults of `ssebench run`), gives the task config in the task model's keys only
(`task_document`), says why the task model would refuse a task (`task_problems`), and why the
run summary model would refuse a `summary.json` (`summary_problem`).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ssegrade.task import Task

__all__ = ["LANGUAGES", "RunConfig", "summary_problem", "task_document", "task_problems"]

LANGUAGES = ("c", "go", "rust")
"""The languages SSEBench's task model accepts (one base image each)."""

_INFORMATIVE = (
    "sanitizer",
    "type",
    "binary",
    "trigger_commit",
    "patch_commit",
    "reference",
    "originality",
)
"""Optional top-level keys SSEBench's task model knows, kept from the config as written."""

_URL = re.compile(r"^https://\S+$")
_ABSOLUTE = re.compile(r"^/\S*$")


class RunConfig(BaseModel):
    """A run's settings, as SSEBench's run summary model holds them under `config`: who ran
    (`agent`, `model`, `reference_run`) and how (`mode`, `timeout`, `difficulty`,
    `tool_layer`, `egress`, `plugins`). A key a job does not give takes `ssebench run`'s
    default (`sandbox`, 3600 s, level 2, no tool layer named, `restricted`, no plugins).

    >>> RunConfig(agent="codex", model="gpt-5").model_dump()["mode"]
    'sandbox'
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    agent: str
    model: str
    mode: Literal["sidecar", "sandbox"] = "sandbox"
    timeout: int = 3600
    difficulty: Annotated[int, Field(ge=0, le=4)] = 2
    tool_layer: str | None = None
    egress: Literal["restricted", "open"] = "restricted"
    reference_run: bool = False
    plugins: list[str] = Field(default_factory=list)


def task_document(task: Task) -> dict[str, Any]:
    """The task config in the keys of SSEBench's task model only (ssegrade keeps unknown
    top-level keys; that model refuses them): the main keys always, null when unset, and the
    informative ones it knows when the config has them.

    >>> doc = task_document(Task.model_validate({"id": "t", "private_note": "x", "type": "UAF"}))
    >>> sorted(doc)[:4], doc["type"], "private_note" in doc
    (['files', 'id', 'language', 'project'], 'UAF', False)
    """
    extra = task.model_extra or {}
    described = task.task_description
    doc: dict[str, Any] = {
        "id": task.id,
        "project": task.project,
        "repository": extra.get("repository"),
        "language": task.language,
        "source": task.source,
        "task_description": None
        if described is None
        else {
            "issue": described.issue,
            "crash_report": list(described.crash_report) or None,
            "bug_description": described.bug_description,
        },
        "scripts": task.scripts.model_dump(),
        "files": {
            "patch": task.files.patch,
            "future_test": task.files.future_test,
            "security_test": task.files.security_test,
            "intent_test": task.files.intent_test,
            "poc": list(task.files.poc),
        },
    }
    doc.update((key, extra[key]) for key in _INFORMATIVE if key in extra)
    return doc


def _blank(value: object) -> bool:
    return not isinstance(value, str) or not value.strip()


def task_problems(task: Task) -> tuple[str, ...]:
    """Why SSEBench's task model would refuse this task's config (none: it reads it).

    >>> task_problems(Task.model_validate({"id": "t", "language": "python", "source": "../p"}))
    ... # doctest: +NORMALIZE_WHITESPACE
    ('no project', 'no repository', "language 'python' is not one of c, go, rust",
     "source '../p' is not an absolute path", 'no task description')
    """
    extra = task.model_extra or {}
    found: list[str] = []
    if _blank(task.project):
        found.append("no project")
    repository = extra.get("repository")
    if repository is None:
        found.append("no repository")
    elif not isinstance(repository, str) or not _URL.match(repository):
        found.append(f"repository {repository!r} is not an https URL")
    if task.language not in LANGUAGES:
        language = "no language" if task.language is None else f"language {task.language!r}"
        found.append(f"{language} is not one of {', '.join(LANGUAGES)}")
    if task.source is None:
        found.append("no source")
    elif not _ABSOLUTE.match(task.source):
        found.append(f"source {task.source!r} is not an absolute path")
    described = task.task_description
    if described is None or not (
        (described.issue or "").strip()
        or described.crash_report
        or (described.bug_description or "").strip()
    ):
        found.append("no task description")
    elif any(path.startswith("/") for path in described.crash_report):
        found.append("a crash report path is absolute")
    for key in ("sanitizer", "type", "binary", "trigger_commit", "patch_commit"):
        if extra.get(key) is not None and not isinstance(extra[key], str):
            found.append(f"{key} is not a string")
    reference = extra.get("reference")
    if reference is not None and not (
        isinstance(reference, list) and all(isinstance(r, str) for r in reference)
    ):
        found.append("reference is not a list of strings")
    if extra.get("originality") not in (None, "public", "crafted"):
        found.append("originality is not public or crafted")
    unknown = sorted(set(extra) - {"repository", *_INFORMATIVE})
    if unknown:
        found.append(f"unknown keys: {', '.join(unknown)}")
    return tuple(found)


class _Grade(BaseModel):
    status: Literal["passed", "failed", "error"] | None = None
    build_success: bool | None = None
    pov_passed: int | None = None
    pov_total: int | None = None
    func_test_success: bool | None = None
    intent_test_success: bool | None = None
    error_msg: str | None = None
    error_log: str | None = None


class _Runtime(BaseModel):
    agent_duration: int
    agent_timeout: bool
    evaluator_timeout: bool


class _Settings(BaseModel):
    agent: str
    model: str
    mode: Literal["sidecar", "sandbox"]
    timeout: int
    difficulty: Annotated[int, Field(ge=0, le=4)]
    tool_layer: str | None = None
    egress: Literal["restricted", "open"] = "restricted"
    reference_run: bool = False
    plugins: list[str] = Field(default_factory=list)


class _Summary(BaseModel):
    task: dict[str, Any]
    config: _Settings
    patch_result: _Grade
    runtime_result: _Runtime
    spend: float
    run_id: str | None = None
    started_at: datetime | None = None
    plugin_results: list[Any] = Field(default_factory=list)


def summary_problem(data: bytes) -> str | None:
    """Why SSEBench's run summary model would refuse these `summary.json` bytes (None: it
    reads them): its run config, grade, runtime facts and spend, and its task config as
    `task_problems` says.

    >>> summary_problem(b'{"task": {}, "config": {"agent": "a", "model": "m"}}')
    'config.mode: Field required'
    """
    try:
        summary = _Summary.model_validate_json(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in err["loc"])
        return f"{where}: {err['msg']}" if where else str(err["msg"])
    try:
        task = Task.model_validate(summary.task)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in err["loc"])
        return f"task.{where}: {err['msg']}"
    problems = task_problems(task)
    return f"task: {problems[0]}" if problems else None
