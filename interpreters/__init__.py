"""The effect interpreters of ssegrade: the real ones (git, copies, processes, files, the
daemon API) and the `ssegrade` command; the fake one is the core's (`ssegrade.testing`).

For other tools: `grade(Request(...)) -> Graded`, the one grading entry (`read_patch` reads a
recorded patch for it, `ScriptOptions` says how scripts run, `Limits` bounds the time);
`grade_patch` is the same as keywords, as `ssegrade evaluate --patch` grades; `run_batch`
grades many (`ssegrade batch`). They are loaded on first use, so that a command pays only for
the modules it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ssegrade._lazy import lazy_face

if TYPE_CHECKING:
    from interpreters.app.grading import InputError, grade, grade_patch, read_patch
    from interpreters.batch import BadJobs, BatchReport, EngineUnavailable, run_batch
    from interpreters.real.runner.options import ScriptOptions
    from ssegrade.internal.request import Graded, Limits, Request

__all__ = [
    "BadJobs",
    "BatchReport",
    "EngineUnavailable",
    "Graded",
    "InputError",
    "Limits",
    "Request",
    "ScriptOptions",
    "grade",
    "grade_patch",
    "read_patch",
    "run_batch",
]

_HOMES = {
    "BadJobs": "interpreters.batch",
    "BatchReport": "interpreters.batch",
    "EngineUnavailable": "interpreters.batch",
    "run_batch": "interpreters.batch",
    "InputError": "interpreters.app.setup",
    "grade": "interpreters.app.grading",
    "grade_patch": "interpreters.app.grading",
    "read_patch": "interpreters.app.grading",
    "ScriptOptions": "interpreters.real.runner.options",
    "Graded": "ssegrade.internal.request",
    "Limits": "ssegrade.internal.request",
    "Request": "ssegrade.internal.request",
}

lazy_face(__name__, _HOMES)
