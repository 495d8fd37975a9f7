"""The effect interpreters of ssegrade: the real ones (git, copies, processes, files, the
daemon API) and the `ssegrade` command; the fake one is the core's (`ssegrade.testing`).

For other tools: `grade_patch` grades a recorded patch on this machine as
`ssegrade evaluate --patch` does; `run_batch` grades many (`ssegrade batch`). They are loaded
on first use, so that a command pays only for the modules it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ssegrade._lazy import lazy_face

if TYPE_CHECKING:
    from interpreters.app.grading import InputError, grade_patch
    from interpreters.batch import BadJobs, BatchReport, EngineUnavailable, run_batch

__all__ = [
    "BadJobs",
    "BatchReport",
    "EngineUnavailable",
    "InputError",
    "grade_patch",
    "run_batch",
]

_HOMES = {
    "BadJobs": "interpreters.batch",
    "BatchReport": "interpreters.batch",
    "EngineUnavailable": "interpreters.batch",
    "run_batch": "interpreters.batch",
    "InputError": "interpreters.app.setup",
    "grade_patch": "interpreters.app.grading",
}

lazy_face(__name__, _HOMES)
