"""Where a grading works (`Places`): the folders of one grading, each named.

Interpreter side, with nothing to import but the standard library: the set-up of a grading
(`interpreters.app.setup.prepare`) makes the places before anything answers an effect, and the
daemon does so before its agent-facing socket exists, without loading the interpreter that
answers the effects (`interpreters.real.local`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from interpreters.real.git import Baseline

__all__ = ["Places"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Places:
    """Where a grading works, each named: the task, the agent's tree and its baseline (none
    when a recorded patch is graded), the grading repo, the results folder, a scratch folder
    for copies and staged files, and the task's support folders."""

    task: Path
    source: Path | None
    baseline: Baseline | None
    repo: Path
    results: Path
    scratch: Path
    support: tuple[Path, ...] = ()
