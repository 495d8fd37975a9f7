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
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ssegrade.internal.result import PatchResult, Status, patch_result_model
from ssegrade.internal.task import Task

__all__ = [
    "LANGUAGES",
    "RunConfig",
    "start_time",
    "summary_problem",
    "task_document",
    "task_problems",
]

LANGUAGES = ("c", "go", "rust")
"""The languages SSEBench's task model accepts (one base image each)."""

_INFORMATIVE = (
    "type",
    "binary",
    "trigger_commit",
    "patch_commit",
    "reference",
    "originality",
)
"""Optional top-level keys SSEBench's task model knows, kept from the config as written
(`sanitizer`, which it knows too, is a field of ssegrade's task model)."""

_ID = re.compile(r"^[A-Za-z0-9]+(?:(?:[._]|__|-+)[A-Za-z0-9]+)*$")
_URL = re.compile(r"^https://\S+$")
_ABSOLUTE = re.compile(r"^/\S*$")


DEFAULT_TOOL_LAYER = "sandbox"
"""The tool layer `ssebench run` builds a sandbox run with when none is named."""
REFERENCE_AGENT = "reference"
"""SSEBench's agent that applies the task's known fix: its runs are reference runs."""


class RunConfig(BaseModel):
    """A run's settings, as SSEBench's run summary model holds them under `config`: who ran
    (`agent`, `model`, `reference_run`) and how (`mode`, `timeout`, `difficulty`,
    `tool_layer`, `egress`, `plugins`). A key a job does not give takes `ssebench run`'s
    default (`sandbox`, 3600 s, level 2, the `sandbox` tool layer in sandbox mode and none in
    sidecar mode, `restricted`, no plugins); a run of the `reference` agent is a reference run
    unless `reference_run` says otherwise.

    >>> RunConfig(agent="codex", model="gpt-5").model_dump()["tool_layer"]
    'sandbox'
    >>> print(RunConfig(agent="codex", model="gpt-5", mode="sidecar").tool_layer)
    None
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid", strict=True)

    agent: str
    model: str
    mode: Literal["sidecar", "sandbox"] = "sandbox"
    timeout: int = 3600
    difficulty: Annotated[int, Field(ge=0, le=4)] = 2
    tool_layer: str | None = None
    egress: Literal["restricted", "open"] = "restricted"
    reference_run: bool = False
    plugins: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _ssebench_defaults(cls, data: object) -> object:
        if not isinstance(data, dict):
            return data
        filled = dict(data)
        if filled.get("tool_layer") is None and filled.get("mode", "sandbox") == "sandbox":
            filled["tool_layer"] = DEFAULT_TOOL_LAYER
        if "reference_run" not in filled:
            filled["reference_run"] = filled.get("agent") == REFERENCE_AGENT
        return filled


def start_time(value: str | None) -> str | None:
    """A run's start time (ISO 8601) as SSEBench's runner writes it: in UTC, marked `Z`; a
    time given without an offset is UTC, as ssegrade's report reads it. SSEBench's report orders a
    group's runs by these times, and fails on a tree that mixes times with and without an
    offset (nor does it read an offset in seconds, which Python writes for some old zones).

    >>> start_time("2026-11-30T10:00:00"), start_time("2026-11-30 12:00:00+02:00")
    ('2026-11-30T10:00:00Z', '2026-11-30T10:00:00Z')
    >>> start_time("0001-01-01T00:00:00+05:00")  # no UTC time before year 1: as given
    '0001-01-01T00:00:00+05:00'
    """
    if value is None:
        return None
    moment = datetime.fromisoformat(value)
    try:
        utc = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except OverflowError:
        return moment.isoformat()
    return utc.replace(tzinfo=None).isoformat() + "Z"


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
    if task.sanitizer is not None:  # a key of ssegrade's task model too (the patch guard's)
        doc["sanitizer"] = task.sanitizer
    return doc


def _blank(value: object) -> bool:
    return not isinstance(value, str) or not value.strip()


def _named_paths(task: Task) -> list[tuple[str, str]]:
    """Every path in the task folder the config names, with its key."""
    scripts, files = task.scripts, task.files
    named = [
        (f"scripts.{key}", path)
        for key, path in (("build", scripts.build), ("run", scripts.run), ("test", scripts.test))
        if path is not None
    ]
    named += [
        (f"files.{key}", path)
        for key, path in (
            ("patch", files.patch),
            ("future_test", files.future_test),
            ("security_test", files.security_test),
            ("intent_test", files.intent_test),
        )
        if path is not None
    ]
    named += [(f"files.poc[{i}]", path) for i, path in enumerate(files.poc)]
    if task.task_description is not None:
        reports = task.task_description.crash_report
        named += [(f"task_description.crash_report[{i}]", path) for i, path in enumerate(reports)]
    return named


def task_problems(task: Task) -> tuple[str, ...]:
    """Why SSEBench's task model would refuse this task's config (none: it reads it).

    That model strips the spaces around every text before it checks it, and wants both the
    `scripts` and the `files` sections; one written empty (`files:` alone, null) reads here as
    an empty section, which it takes.

    >>> task_problems(Task.model_validate({"id": "t", "language": "python", "source": "../p"}))
    ... # doctest: +NORMALIZE_WHITESPACE
    ('no project', 'no repository', "language 'python' is not one of c, go, rust",
     "source '../p' is not an absolute path", 'no task description', 'no scripts',
     'no files')
    """
    extra = task.model_extra or {}
    found: list[str] = []
    if _blank(task.project):
        found.append("no project")
    repository = extra.get("repository")
    if repository is None:
        found.append("no repository")
    elif not isinstance(repository, str) or not _URL.match(repository.strip()):
        found.append(f"repository {repository!r} is not an https URL")
    if task.language not in LANGUAGES:
        language = "no language" if task.language is None else f"language {task.language!r}"
        found.append(f"{language} is not one of {', '.join(LANGUAGES)}")
    if task.source is None:
        found.append("no source")
    elif not _ABSOLUTE.match(task.source.strip()):
        found.append(f"source {task.source!r} is not an absolute path")
    described = task.task_description
    if described is None or not (
        (described.issue or "").strip()
        or described.crash_report
        or (described.bug_description or "").strip()
    ):
        found.append("no task description")
    found += [f"no {key}" for key in ("scripts", "files") if key not in task.model_fields_set]
    for key, path in _named_paths(task):
        if not path.strip() or path.strip().startswith("/"):
            found.append(f"{key} {path!r} is not a path in the task folder")
    for key in ("type", "binary", "trigger_commit", "patch_commit"):
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


_InTask = Annotated[str, Field(min_length=1, pattern=r"^[^/]")]
"""A path in the task folder, as SSEBench's task model takes one: not empty, not absolute."""


class _Stripped(BaseModel):
    """A section of SSEBench's task model: closed, text stripped before it is checked."""

    model_config = ConfigDict(defer_build=True, extra="forbid", str_strip_whitespace=True)


class _Described(_Stripped):
    issue: str | None = None
    crash_report: list[_InTask] | None = None
    bug_description: str | None = None

    @model_validator(mode="after")
    def _something_said(self) -> _Described:
        if not (self.issue or self.crash_report or self.bug_description):
            raise ValueError("no task description")
        return self


class _TaskScripts(_Stripped):
    build: _InTask | None = None
    run: _InTask | None = None
    test: _InTask | None = None


class _TaskFiles(_Stripped):
    patch: _InTask | None = None
    future_test: _InTask | None = None
    security_test: _InTask | None = None
    intent_test: _InTask | None = None
    poc: list[_InTask] | None = None


class _TaskConfig(_Stripped):
    """`task` as SSEBench's run summary holds it: its task model, whose `scripts` and `files`
    have no default and whose null fields (`crash_report`, `poc`) mean none."""

    id: Annotated[str, Field(pattern=_ID.pattern, max_length=128)]
    project: Annotated[str, Field(pattern=r"\S")]
    repository: Annotated[str, Field(pattern=_URL.pattern)]
    language: Literal["c", "go", "rust"]
    source: Annotated[str, Field(pattern=_ABSOLUTE.pattern)]
    task_description: _Described
    scripts: _TaskScripts
    files: _TaskFiles
    sanitizer: str | None = None
    type: str | None = None
    binary: str | None = None
    trigger_commit: str | None = None
    patch_commit: str | None = None
    reference: list[str] | None = None
    originality: Literal["public", "crafted"] | None = None


class _PluginOutcome(BaseModel):
    name: str
    hook: str
    status: str
    exit_code: int = 0
    duration_seconds: float = 0.0
    reason: str | None = None
    error: str | None = None


if TYPE_CHECKING:  # the fields are `PatchResult`'s, derived when the module loads
    _Grade = BaseModel
else:
    _Grade = patch_result_model("_Grade", BaseModel, PatchResult, status=Status | None)


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
    task: _TaskConfig
    config: _Settings
    patch_result: _Grade
    runtime_result: _Runtime
    spend: float
    run_id: str | None = None
    started_at: datetime | None = None
    plugin_results: list[_PluginOutcome] = Field(default_factory=list)


def summary_problem(data: bytes) -> str | None:
    """Why SSEBench's run summary model would refuse these `summary.json` bytes (None: it
    reads them): its run config, grade, runtime facts, spend and plugin outcomes, and its task
    config by SSEBench's task model (closed at every level, text stripped, null report and PoC
    lists meaning none).

    >>> summary_problem(b'{"task": {}, "config": {"agent": "a", "model": "m"}}')
    'task.id: Field required'
    """
    try:
        _Summary.model_validate_json(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in err["loc"])
        message = str(err["msg"]).removeprefix("Value error, ")
        return f"{where}: {message}" if where else message
    return None
