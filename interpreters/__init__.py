"""The effect interpreters of ssegrade: the real ones (git, copies, processes, files, the
daemon API) and the `ssegrade` command; the fake one is the core's (`ssegrade.testing`).

For other tools: `grade_patch` grades a recorded patch on this machine as
`ssegrade evaluate --patch` does; `run_batch` grades many (`ssegrade batch`). They are loaded
on first use, so that a command pays only for the modules it runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'interpreters' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
