"""The jobs of a batch: job lines, run folders, the digest, summaries and the tally.

Pure core: `parse_jobs` reads the bytes of a JSON Lines jobs file and names every bad line by
its number; the other functions say where a run goes, what identifies a grading, what its
`summary.json` holds and what the last progress line says. Reading task folders, hashing files
and running the gradings is `interpreters.batch`'s job (SPEC §14).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ssegrade.batch._image_paths import IMAGE_TASK, image_job_problem
from ssegrade.guard import GuardReport
from ssegrade.internal.result import EvaluationResult, PatchResult, RuntimeResult, Status
from ssegrade.internal.ssebench import RunConfig, start_time, task_document
from ssegrade.internal.task import Task

__all__ = [
    "JOB_KEYS",
    "Job",
    "JobProblem",
    "Tally",
    "cached_result",
    "describe_invalid",
    "duplicate_problems",
    "job_digest",
    "nested_problems",
    "parse_jobs",
    "run_parts",
    "summary_document",
]


def _folder_name(value: str, what: str) -> str:
    if not value or value in (".", "..") or "/" in value:
        raise ValueError(f"{what} {value!r} cannot name a folder")
    if any(ord(char) < 0x20 or char == "\x7f" for char in value) or len(value.encode()) > 255:
        raise ValueError(f"{what} {value!r} cannot name a folder")
    return value


class Job(BaseModel):
    """One line of a jobs file (SPEC §14). Paths are as written: relative to the jobs file.
    `mode`, `timeout`, `difficulty`, `tool_layer`, `egress` and `plugins` are the SSEBench run
    config the agent ran with, written in `summary.json` (`ssegrade.internal.ssebench.RunConfig`).

    An image job (`image`: an image reference, or `docker-archive:PATH` to load) is graded in
    a container of that image: `task` (default `/ssebench`) and `repo` are then absolute paths
    in the image; `build` is a host folder holding the Dockerfile the image is built from when
    the engine lacks it; `script_network: host` gives its container a network. `patch` stays
    a path of the host."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid", strict=True)

    task: str = Field(min_length=1)
    patch: str = Field(min_length=1)
    repo: str | None = Field(default=None, min_length=1)
    model: str = "unknown"
    agent: str = "unknown"
    run_id: str | None = None
    reference_run: bool = False
    agent_duration: int = Field(default=0, ge=0)
    agent_timeout: bool = False
    agent_exit_code: int | None = None
    spend: float | None = None
    started_at: str | None = None
    mode: Literal["sidecar", "sandbox"] = "sandbox"
    timeout: int = Field(default=3600, ge=0)
    difficulty: int = Field(default=2, ge=0, le=4)
    tool_layer: str | None = None
    egress: Literal["restricted", "open"] = "restricted"
    plugins: list[str] = Field(default_factory=list)
    image: str | None = Field(default=None, min_length=1, max_length=4096)
    build: str | None = Field(default=None, min_length=1)
    script_network: Literal["loopback", "host"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _image_task(cls, data: object) -> object:
        """An image job without `task` grades SSEBench's task folder, `/ssebench`."""
        if isinstance(data, dict) and data.get("image") is not None and "task" not in data:
            return {**data, "task": IMAGE_TASK}
        return data

    @model_validator(mode="after")
    def _image_paths(self) -> Job:
        image_job_problem(self.image, self.task, self.repo, self.build, self.script_network)
        return self

    @field_validator("model")
    @classmethod
    def _model_folders(cls, value: str) -> str:
        for part in value.split("/"):
            _folder_name(part, "model")
        return value

    @field_validator("agent", "run_id")
    @classmethod
    def _one_folder(cls, value: str | None) -> str | None:
        return None if value is None else _folder_name(value, "name")

    @field_validator("spend", mode="before")
    @classmethod
    def _int_spend(cls, value: object) -> object:
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("started_at")
    @classmethod
    def _iso_time(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                datetime.fromisoformat(value)
            except ValueError:
                raise ValueError(f"{value!r} is not an ISO 8601 time") from None
        return value

    def run_config(self) -> RunConfig:
        """The run config of this job, as SSEBench's run summary model holds it.

        >>> Job(task="t", patch="p", difficulty=0).run_config().model_dump()["difficulty"]
        0
        """
        return RunConfig(
            agent=self.agent,
            model=self.model,
            mode=self.mode,
            timeout=self.timeout,
            difficulty=self.difficulty,
            tool_layer=self.tool_layer,
            egress=self.egress,
            plugins=list(self.plugins),
            # unsaid, SSEBench's default: whether the agent is its reference agent
            **(
                {"reference_run": self.reference_run}
                if "reference_run" in self.model_fields_set
                else {}
            ),
        )

    def runtime(self, evaluator_timeout: bool = False) -> RuntimeResult:
        """The `runtime_result` of this job: the agent's facts from its line."""
        return RuntimeResult(
            agent_duration=self.agent_duration,
            agent_timeout=self.agent_timeout,
            evaluator_timeout=evaluator_timeout,
            agent_exit_code=self.agent_exit_code,
        )


JOB_KEYS: tuple[str, ...] = tuple(Job.model_fields)
"""Every key a job line may hold."""


@dataclass(frozen=True, slots=True)
class JobProblem:
    """A bad job line: its number (from 1) and one sentence."""

    line: int
    message: str


def parse_jobs(data: bytes) -> tuple[list[tuple[int, Job]], list[JobProblem]]:
    """Parse a JSON Lines jobs file: the (line number, job) pairs and every problem of every
    bad line, in line order.

    Blank lines are skipped. A line is bad when it is not a JSON object, lacks `task` or
    `patch`, holds an unknown key (the nearest known one is named) or a value of the wrong
    type; each of these is one problem.

    >>> jobs, problems = parse_jobs(b'{"task": "t", "patch": "p"}\\n\\n{"task": "t"}\\n[1]\\n')
    >>> [(n, job.model) for n, job in jobs]
    [(1, 'unknown')]
    >>> [(p.line, p.message) for p in problems]
    [(3, 'patch: required key is missing'), (4, 'expected a JSON object')]
    >>> [p.message for p in parse_jobs(b'{"task": "t", "modle": "m"}')[1]]
    ['modle: unknown key (did you mean model?)', 'patch: required key is missing']
    """
    jobs: list[tuple[int, Job]] = []
    problems: list[JobProblem] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            doc = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            problems.append(JobProblem(number, f"not JSON ({exc})"))
            continue
        if not isinstance(doc, dict):
            problems.append(JobProblem(number, "expected a JSON object"))
            continue
        unknown = sorted(key for key in doc if key not in JOB_KEYS)
        problems += [JobProblem(number, _unknown(key)) for key in unknown]
        try:
            job = Job.model_validate({k: v for k, v in doc.items() if k in JOB_KEYS})
        except ValidationError as exc:
            problems += [JobProblem(number, why) for why in describe_invalid(exc)]
            continue
        if not unknown:
            jobs.append((number, job))
    return jobs, problems


def _unknown(key: str) -> str:
    # Letters swapped (`modle`) name their key before any merely close one (`mode`).
    swapped = [known for known in JOB_KEYS if sorted(known) == sorted(key)]
    near = swapped[:1] or difflib.get_close_matches(key, JOB_KEYS, n=1)
    return f"{key}: unknown key" + (f" (did you mean {near[0]}?)" if near else "")


def describe_invalid(exc: ValidationError) -> list[str]:
    """One sentence per error of a job line the model refused: `key: why`.

    >>> try:
    ...     Job.model_validate({"task": 3})
    ... except ValidationError as exc:
    ...     describe_invalid(exc)
    ['task: Input should be a valid string', 'patch: required key is missing']
    """
    found: list[str] = []
    for err in exc.errors():
        key = ".".join(str(part) for part in err["loc"])
        if err["type"] == "missing":
            found.append(f"{key}: required key is missing")
        else:
            why = err["msg"].removeprefix("Value error, ")
            found.append(f"{key}: {why}" if key else why)
    return found


def duplicate_problems(keys: Sequence[tuple[int, tuple[str, ...]]]) -> list[JobProblem]:
    """One problem per line whose (task, model, agent, run id) an earlier line already has.

    >>> k = ("t", "m", "a", "r1")
    >>> found = duplicate_problems([(1, k), (2, ("t", "m", "a", "r2")), (5, k)])
    >>> [(p.line, p.message) for p in found]
    [(5, 'duplicate run: task t, model m, agent a, run id r1 (first on line 1)')]
    """
    first: dict[tuple[str, ...], int] = {}
    problems: list[JobProblem] = []
    for line, key in keys:
        if key in first:
            task, model, agent, run_id = key
            problems.append(
                JobProblem(
                    line,
                    f"duplicate run: task {task}, model {model}, agent {agent}, run id {run_id} "
                    f"(first on line {first[key]})",
                )
            )
        else:
            first[key] = line
    return problems


def nested_problems(folders: Sequence[tuple[int, tuple[str, ...]]]) -> list[JobProblem]:
    """One problem per line whose run folder (its parts below the results folder) lies inside
    another line's run folder: the grading of one would be cleared or mixed by the other's.

    >>> found = nested_problems([(1, ("t", "m", "a", "r")), (2, ("t", "m", "a", "r", "logs", "x"))])
    >>> [(p.line, p.message) for p in found]
    [(2, 'run folder t/m/a/r/logs/x lies inside the run folder of line 1 (t/m/a/r)')]
    """
    first: dict[tuple[str, ...], int] = {}
    for line, parts in folders:
        first.setdefault(parts, line)
    problems: list[JobProblem] = []
    for line, parts in folders:
        for end in range(1, len(parts)):
            outer = first.get(parts[:end])
            if outer is not None:
                problems.append(
                    JobProblem(
                        line,
                        f"run folder {'/'.join(parts)} lies inside the run folder of line "
                        f"{outer} ({'/'.join(parts[:end])})",
                    )
                )
                break
    return problems


def run_parts(task_id: str, model: str, agent: str, run_id: str) -> tuple[str, ...]:
    """The folders of a run below the results folder: `<task>/<model…>/<agent>/<run id>`.

    >>> run_parts("t", "openai/gpt-5", "codex", "r1")
    ('t', 'openai', 'gpt-5', 'codex', 'r1')
    """
    return (task_id, *model.split("/"), agent, run_id)


def job_digest(task_files: str, patch: bytes, repo_id: str, version: str) -> str:
    """What identifies a grading: sha256 over the task folder's content hash, the patch bytes,
    the grading repo's tree id (or content hash) and ssegrade's version.

    >>> a = job_digest("t" * 64, b"", "r" * 40, "0.1.0")
    >>> same = job_digest("t" * 64, b"", "r" * 40, "0.1.0")
    >>> other = job_digest("t" * 64, b" ", "r" * 40, "0.1.0")
    >>> a == same, a == other
    (True, False)
    """
    hasher = hashlib.sha256(b"ssegrade job digest 1\0")
    for part in (task_files.encode(), patch, repo_id.encode(), version.encode()):
        hasher.update(len(part).to_bytes(8, "big"))
        hasher.update(part)
    return hasher.hexdigest()


def summary_document(
    task: Task,
    job: Job,
    run_id: str,
    result: EvaluationResult,
    digest: str,
    cached_from: str | None = None,
    guard: GuardReport | None = None,
    *,
    containment: str | None = None,
    attempts: int | None = None,
) -> dict[str, Any]:
    """The `summary.json` of a batch run (SPEC §11, §14), shaped as SSEBench's run summary model
    reads it: the task config (in its task model's keys), the run config, the grade, the
    agent's facts from the job line (a job without `spend` gets 0.0, and `spend_recorded`
    false, which ssegrade's report reads as unknown); then the digest, the containment its
    scripts ran in (`full`, `weak`; null when none ran), the patch guard's report (`guard`,
    SPEC §15; absent when none was written) and, for a cached run, where the grade comes from,
    or, for a graded run, the number of attempts its grade took
    (`ssegrade.batch._summary.next_attempt`). `agent`, `model` and `reference_run` are also
    written at the top level, where readers that take `config` for the task config (as in
    `result.json`) find them."""
    run_config = job.run_config().model_dump(mode="json")
    doc: dict[str, Any] = {
        "task": task_document(task),
        "config": run_config,
        **{key: run_config[key] for key in ("agent", "model", "reference_run")},
        "patch_result": result.patch_result.model_dump(mode="json"),
        "runtime_result": result.runtime_result.model_dump(mode="json"),
        # SSEBench's run summary wants a number: a job without one says so beside it.
        "spend": 0.0 if job.spend is None else job.spend,
        "run_id": run_id,
        "started_at": start_time(job.started_at),
        "digest": digest,
        "containment": containment,
    }
    if job.spend is None:
        doc["spend_recorded"] = False
    if guard is not None:
        doc["guard"] = guard.model_dump(mode="json")
    if cached_from is not None:
        doc["cached_from"] = cached_from
    if attempts is not None:
        doc["attempts"] = attempts
    return doc


Outcome = Literal["graded", "cached", "skipped"]


@dataclass(slots=True)
class Tally:
    """What a batch did so far: jobs graded, cached and skipped, and the verdicts of the
    graded and cached ones (`passed + failed + error == graded + cached`)."""

    total: int = 0
    graded: int = 0
    cached: int = 0
    skipped: int = 0
    passed: int = 0
    failed: int = 0
    error: int = 0
    skipped_error: int = 0

    def add(self, outcome: Outcome, status: Status) -> None:
        """Count one finished job."""
        if outcome == "skipped":
            self.skipped += 1
            self.skipped_error += status == "error"
            return
        if outcome == "graded":
            self.graded += 1
        else:
            self.cached += 1
        self.passed += status == "passed"
        self.failed += status == "failed"
        self.error += status == "error"

    @property
    def done(self) -> int:
        """Jobs finished, in whatever way."""
        return self.graded + self.cached + self.skipped

    @property
    def ungraded(self) -> bool:
        """A job could not be graded: its result, new or found, is an `error`."""
        return self.error + self.skipped_error > 0

    def line(self, seconds: float) -> str:
        """The last line of a batch.

        >>> t = Tally()
        >>> t.add("graded", "passed"); t.add("cached", "failed"); t.add("skipped", "passed")
        >>> t.line(3.14159)
        '1 graded, 1 passed, 1 failed, 0 error, 1 cached, 1 skipped in 3.1 s'
        """
        return (
            f"{self.graded} graded, {self.passed} passed, {self.failed} failed, "
            f"{self.error} error, {self.cached} cached, {self.skipped} skipped in {seconds:.1f} s"
        )


def cached_result(graded: PatchResult, job: Job, evaluator_timeout: bool) -> EvaluationResult:
    """The `result.json` of a cached job: the graded job's grade, this job's agent facts."""
    return EvaluationResult(patch_result=graded, runtime_result=job.runtime(evaluator_timeout))
