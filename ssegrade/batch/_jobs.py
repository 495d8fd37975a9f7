"""The jobs of a batch: its JSON Lines, each line checked, every problem named.

Pure core: `parse_jobs` reads the bytes of a jobs file and names every bad line by its number,
with the problems between lines (two jobs with one run folder, one run nested in another);
where each job's run goes and what it writes is `ssegrade.batch._runs`. Reading task folders,
hashing files and running the gradings is `interpreters.batch`'s job (SPEC §14).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ssegrade.batch._image_paths import IMAGE_TASK, image_job_problem
from ssegrade.internal.result import RuntimeResult
from ssegrade.internal.ssebench import RunConfig

__all__ = [
    "JOB_KEYS",
    "Job",
    "JobProblem",
    "describe_invalid",
    "duplicate_problems",
    "nested_problems",
    "parse_jobs",
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
