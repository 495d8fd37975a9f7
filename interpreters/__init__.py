"""The effect interpreters of ssegrade: the real ones (git, copies, processes, files, the
daemon API), the fake one, and the `ssegrade` command.

For other tools: `grade_patch` grades a recorded patch on this machine as
`ssegrade evaluate --patch` does; `run_batch` grades many (`ssegrade batch`).
"""

from interpreters.batch import BadJobs, BatchReport, EngineUnavailable, run_batch
from interpreters.grading import GradingInputError, grade_patch

__all__ = [
    "BadJobs",
    "BatchReport",
    "EngineUnavailable",
    "GradingInputError",
    "grade_patch",
    "run_batch",
]
