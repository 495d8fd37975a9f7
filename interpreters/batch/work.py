"""One grading of a batch: what to grade (`Work`), how it ended (`Done`), and running it with
a grading function (`run_work`), wherever an engine runs it.

Interpreter layer. The grading function is `interpreters.grade_patch` in production; tests
inject their own (`GradeFunction`). The scripts' options (`Work.scripts`) reach it only when
given, as `grade_patch`'s `script_env`, `clean_env`, `script_memory` and `containment`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from interpreters.real import files
from interpreters.real.runner.options import ScriptOptions
from interpreters.real.setup import InputError
from ssegrade import EvaluationResult, RuntimeResult
from ssegrade.program import crashed
from ssegrade.verdict import Crashed, not_graded

__all__ = ["Done", "Engine", "GradeFunction", "Work", "checks_containment", "run_work"]


class GradeFunction(Protocol):
    """The grading entry point's shape (`interpreters.grade_patch`)."""

    def __call__(
        self,
        task: Path,
        patch: Path | bytes,
        repo: Path,
        results: Path,
        *,
        timeout: int = ...,
        script_timeout: int | None = ...,
        runner_user: str | None = ...,
        runtime: RuntimeResult | None = ...,
        force: bool = ...,
    ) -> EvaluationResult: ...


@dataclass(frozen=True, slots=True)
class Work:
    """One grading to run: `key` identifies it to its submitter; `scripts` are the options
    of its scripts (None: the grading function's defaults)."""

    key: int
    task: str
    patch: bytes
    repo: str
    results: str
    runtime: RuntimeResult
    timeout: int = 3600
    script_timeout: int | None = None
    runner_user: str | None = None
    scripts: ScriptOptions | None = None
    image: str | None = None
    """The ID of the image a container engine grades it in (`task`, `repo`: paths there)."""
    network: Literal["loopback", "host"] | None = None
    """The scripts' network its job asked for (None: the batch's)."""


@dataclass(frozen=True, slots=True)
class Done:
    """A finished grading: its result (None when it was killed), how long it took, and the
    containment its scripts ran in (`full`, `weak`; None when none ran)."""

    key: int
    result: EvaluationResult | None
    seconds: float
    containment: str | None = None


class Engine(Protocol):
    """What `drive` needs of an engine."""

    capacity: int

    def start(self, work: Work) -> None:
        """Start one grading."""

    def running(self) -> int:
        """How many gradings are running."""

    def poll(self, timeout: float) -> list[Done]:
        """Wait up to `timeout` seconds; the gradings that finished meanwhile."""

    def kill(self) -> list[int]:
        """Stop every running grading, wait for their workers; the keys of those stopped."""

    def close(self) -> None:
        """Release the workers."""


def run_work(grade: GradeFunction, work: Work) -> Done:
    """Run one grading with `grade`; an exception it raises becomes an `error` result written
    into the results folder (the grade of a job that could not be graded)."""
    start = time.monotonic()
    results = Path(work.results)
    result = _grade(grade, work, results)
    return Done(work.key, result, time.monotonic() - start, checks_containment(results))


def _options(scripts: ScriptOptions | None) -> dict[str, Any]:
    if scripts is None:
        return {}
    return {
        "script_env": scripts.env.extra,
        "clean_env": scripts.env.clean,
        "script_memory": scripts.memory,
        "containment": scripts.containment,
    }


def _grade(grade: GradeFunction, work: Work, results: Path) -> EvaluationResult:
    try:
        return grade(
            Path(work.task),
            work.patch,
            Path(work.repo),
            results,
            timeout=work.timeout,
            script_timeout=work.script_timeout,
            runner_user=work.runner_user,
            runtime=work.runtime,
            **_options(work.scripts),
        )
    except Exception as exc:  # noqa: BLE001 - the job's error belongs in its result.json
        # What escapes `grade` never reached the grading program (input it refused: the
        # task's), or its grade could not be written (the host's): no check is known.
        ending = Crashed(str(exc), kind="task") if isinstance(exc, InputError) else crashed(exc)
        result = not_graded(Crashed(ending.message, kind=ending.kind), work.runtime)
        results.mkdir(parents=True, exist_ok=True)
        files.atomic_write(results / "result.json", result.to_json())
        return result


def checks_containment(results: Path) -> str | None:
    """The containment the grading's scripts ran in, from its `checks.jsonl` (the weakest
    when they differ; None when no script ran or it cannot be read)."""
    try:
        lines = (results / "checks.jsonl").read_bytes().splitlines()
    except OSError:
        return None
    modes: set[object] = set()
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            modes.add(record.get("containment"))
    weakest = ("weak", "container", "full")
    return next((mode for mode in weakest if mode in modes), None)
