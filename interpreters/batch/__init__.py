"""Grading many patches: `ssegrade verify` (task verification) and `ssegrade batch`.

Interpreter layer. `jobs` reads and checks a batch, `engines` runs gradings (local worker
processes or Ray), `run` is `run_batch`, `verification` verifies tasks and `progress` speaks
while they run; their commands are `interpreters.cli.batch` and `interpreters.cli.verify`.
"""

from interpreters.batch.engines import EngineUnavailable, GradeFunction
from interpreters.batch.jobs import BadJobs
from interpreters.batch.run import BatchReport, JobOutcome, run_batch

__all__ = [
    "BadJobs",
    "BatchReport",
    "EngineUnavailable",
    "GradeFunction",
    "JobOutcome",
    "run_batch",
]
