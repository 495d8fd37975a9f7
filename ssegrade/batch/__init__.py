"""Batch grading and task verification, the pure part (SPEC §13, §14).

Pure core, one concept per module; reading task folders, hashing files and running the
gradings is `interpreters.batch`'s job:

- `ssegrade.batch.jobs`: the job lines (`parse_jobs`), where a run goes, the digest that
  identifies a grading, a run's `summary.json` and the tally of the progress line;
- `ssegrade.batch.summary`: the batch's own `batch.json`, and which runs are graded again;
- `ssegrade.batch.verify`: the verdict on a task's controls (`judge`);
- `ssegrade.batch.cheats`: the canonical cheats of `verify --adversarial` (`write_cheats`),
  with `cheats_build` (build files), `cheats_code` (where code goes) and `cheats_diff`;
- `ssegrade.batch.verify_adversarial`: which cheats pass unflagged (`judge_cheats`).
"""

from ssegrade.batch.cheats import CHEATS, Cheat, wanted_paths, write_cheats
from ssegrade.batch.containers import engine_problems
from ssegrade.batch.image_paths import IMAGE_TASK
from ssegrade.batch.jobs import (
    JOB_KEYS,
    Job,
    JobProblem,
    Tally,
    cached_result,
    describe_invalid,
    duplicate_problems,
    job_digest,
    nested_problems,
    parse_jobs,
    run_parts,
    summary_document,
)
from ssegrade.batch.summary import (
    KINDS,
    BatchCounts,
    BatchRuns,
    BatchSummary,
    JobsFile,
    RunKind,
    batch_summary,
    next_attempt,
)
from ssegrade.batch.verify import (
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
from ssegrade.batch.verify_adversarial import (
    CheatOutcome,
    CheatRun,
    counts_against,
    judge_cheats,
    task_verdict,
)

__all__ = [
    "CHEATS",
    "CONTROLS",
    "IMAGE_TASK",
    "JOB_KEYS",
    "KINDS",
    "BatchCounts",
    "BatchRuns",
    "BatchSummary",
    "Cheat",
    "CheatOutcome",
    "CheatRun",
    "Control",
    "ControlRun",
    "Evidence",
    "Job",
    "JobProblem",
    "JobsFile",
    "RunKind",
    "Tally",
    "Verdict",
    "Verification",
    "batch_summary",
    "cached_result",
    "counts_against",
    "describe_invalid",
    "duplicate_problems",
    "engine_problems",
    "expected_outcomes",
    "job_digest",
    "judge",
    "judge_cheats",
    "nested_problems",
    "next_attempt",
    "observed_outcomes",
    "parse_jobs",
    "run_parts",
    "summary_document",
    "task_verdict",
    "wanted_paths",
    "write_cheats",
]
