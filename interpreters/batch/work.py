"""One grading of a batch: what to grade (`Work`), how it ended (`Done`), and running it with
a grading function (`run_work`), wherever an engine runs it.

Interpreter layer. The grading function is `interpreters.app.grading.HeldGrade` in
production (the one grading entry, `grade(request) -> Graded`); tests inject their own
(`GradeFunction`). A `Work` becomes the `Request` it asks for (`Work.request`), its script
options (`Work.scripts`) passed whole; what the grading did comes back in its `Graded`
record, never read back from the run folder.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from interpreters.app.setup import InputError
from interpreters.real import files
from interpreters.real.runner.options import ScriptOptions
from ssegrade import EvaluationResult, RuntimeResult
from ssegrade.internal.answers import Containment
from ssegrade.internal.effects import CheckRecord
from ssegrade.internal.guard_document import GuardReport
from ssegrade.internal.program import crashed
from ssegrade.internal.request import Graded, Limits, Request
from ssegrade.internal.verdict import Crashed, not_graded

__all__ = ["Done", "Engine", "GradeFunction", "Work", "run_work"]


class GradeFunction(Protocol):
    """The grading entry point's shape (`interpreters.app.grading.grade`)."""

    def __call__(self, request: Request[ScriptOptions]) -> Graded: ...


@dataclass(frozen=True, slots=True)
class Work:
    """One grading to run: `key` identifies it to its submitter; `scripts` are the options
    of its scripts (None: the defaults)."""

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

    def request(self) -> Request[ScriptOptions]:
        """The grading this work asks for."""
        return Request(
            Path(self.task),
            Path(self.results),
            self.scripts if self.scripts is not None else ScriptOptions(),
            patch=self.patch,
            repo=Path(self.repo),
            limits=Limits(self.timeout, self.script_timeout),
            runtime=self.runtime,
            runner_user=self.runner_user,
        )


@dataclass(frozen=True, slots=True)
class Done:
    """A finished grading: its result (None when it was killed), how long it took, the
    containment its scripts ran in (`full`, `container`, `weak`; None when none ran), and
    its check records and guard report as the grading gave them."""

    key: int
    result: EvaluationResult | None
    seconds: float
    containment: Containment | None = None
    checks: tuple[CheckRecord, ...] = ()
    guard: GuardReport | None = None


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
    answer = _grade(grade, work, Path(work.results))
    return Done(
        work.key,
        answer.document,
        time.monotonic() - start,
        answer.containment,
        answer.checks,
        answer.guard,
    )


def _grade(grade: GradeFunction, work: Work, results: Path) -> Graded:
    try:
        return grade(work.request())
    except Exception as exc:  # noqa: BLE001 - the job's error belongs in its result.json
        # What escapes `grade` never reached the grading program (input it refused: the
        # task's), or its grade could not be written (the host's): no check is known.
        ending = Crashed(str(exc), kind="task") if isinstance(exc, InputError) else crashed(exc)
        result = not_graded(Crashed(ending.message, kind=ending.kind), work.runtime)
        results.mkdir(parents=True, exist_ok=True)
        files.atomic_write(results / "result.json", result.to_json())
        return Graded(result)
