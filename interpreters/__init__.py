"""The effect interpreters of ssegrade: the real ones (git, copies, processes, files, the
daemon API), the fake one, and the `ssegrade` command.

For other tools: `grade_patch` grades a recorded patch on this machine as
`ssegrade evaluate --patch` does.
"""

from interpreters.grading import GradingInputError, grade_patch

__all__ = ["GradingInputError", "grade_patch"]
