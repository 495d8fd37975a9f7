"""What a graded job of a batch leaves: its run folder, its digest, its `summary.json`, a
cached result, and the tally of the last progress line.

Pure core (SPEC §14): `run_parts` says where a run goes below the results folder, `job_digest`
what identifies a grading (cache and resume), `summary_document` what its `summary.json` holds
(the shape SSEBench's own report reads), `cached_result` the grade a job reuses from another,
`Tally` what the last progress line says. The job lines themselves are `ssegrade.batch._jobs`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal

from ssegrade.batch._jobs import Job
from ssegrade.guard import GuardReport
from ssegrade.internal.result import EvaluationResult, PatchResult, Status
from ssegrade.internal.ssebench import start_time, task_document
from ssegrade.internal.task import Task

__all__ = ["Tally", "cached_result", "job_digest", "run_parts", "summary_document"]


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
