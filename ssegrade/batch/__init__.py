"""Batch grading and task verification, the pure part (SPEC §13, §14).

Pure core, one concept per module; reading task folders, hashing files and running the
gradings is `interpreters.batch`'s job:

- `ssegrade.batch._jobs`: the job lines (`parse_jobs`), where a run goes, the digest that
  identifies a grading, a run's `summary.json` and the tally of the progress line;
- `ssegrade.batch._summary`: the batch's own `batch.json`; `_attempts`: which runs are graded
  again, and the record of earlier attempts;
- `ssegrade.batch._verify`: the verdict on a task's controls (`judge`);
- `ssegrade.batch._cheats`: the canonical cheats of `verify --adversarial` (`write_cheats`),
  with `cheats_build` (build files), `cheats_code` (where code goes) and `cheats_diff`;
- `ssegrade.batch._verify_adversarial`: which cheats pass unflagged (`judge_cheats`).
"""

from ssegrade.batch._cheats import CHEATS, Cheat, wanted_paths, write_cheats
from ssegrade.batch._containers import (
    BATCH_LABEL,
    RESULTS_AT,
    ContainerJob,
    EngineProgram,
    Limits,
    batch_containers_argv,
    engine_problems,
    remove_argv,
    run_argv,
)
from ssegrade.batch._image_paths import IMAGE_TASK
from ssegrade.batch._jobs import (
    JOB_KEYS,
    Job,
    JobProblem,
    describe_invalid,
    duplicate_problems,
    nested_problems,
    parse_jobs,
)
from ssegrade.batch._runs import Tally, cached_result, job_digest, run_parts, summary_document
from ssegrade.batch._summary import (
    KINDS,
    OUTCOMES,
    PYTHON_JOBS,
    RETRY_KINDS,
    BatchCommand,
    BatchCounts,
    BatchRuns,
    BatchSummary,
    JobsFile,
    RunKind,
    batch_summary,
    earlier_attempts,
    next_attempt,
    ray_cluster,
    retry_options,
    run_state,
)
from ssegrade.batch._verify import (
    CONTROLS,
    Control,
    ControlRun,
    Evidence,
    Verdict,
    Verification,
    expected_outcomes,
    judge,
    observed_outcomes,
)
from ssegrade.batch._verify_adversarial import (
    CheatOutcome,
    CheatRun,
    TaskVerdict,
    counts_against,
    judge_cheats,
    task_verdict,
)

__all__ = [
    "BATCH_LABEL",
    "CHEATS",
    "CONTROLS",
    "IMAGE_TASK",
    "JOB_KEYS",
    "KINDS",
    "OUTCOMES",
    "PYTHON_JOBS",
    "RESULTS_AT",
    "RETRY_KINDS",
    "BatchCommand",
    "BatchCounts",
    "BatchRuns",
    "BatchSummary",
    "Cheat",
    "CheatOutcome",
    "CheatRun",
    "ContainerJob",
    "Control",
    "ControlRun",
    "EngineProgram",
    "Evidence",
    "Job",
    "JobProblem",
    "JobsFile",
    "Limits",
    "RunKind",
    "Tally",
    "TaskVerdict",
    "Verdict",
    "Verification",
    "batch_containers_argv",
    "batch_summary",
    "cached_result",
    "counts_against",
    "describe_invalid",
    "duplicate_problems",
    "earlier_attempts",
    "engine_problems",
    "expected_outcomes",
    "job_digest",
    "judge",
    "judge_cheats",
    "nested_problems",
    "next_attempt",
    "observed_outcomes",
    "parse_jobs",
    "ray_cluster",
    "remove_argv",
    "retry_options",
    "run_argv",
    "run_parts",
    "run_state",
    "summary_document",
    "task_verdict",
    "wanted_paths",
    "write_cheats",
]
