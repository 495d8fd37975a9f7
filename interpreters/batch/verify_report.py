"""What `verify_tasks` found: each control run, each cheat's runs, each task's verdict.

Interpreter layer (SPEC §13): the documents of `ssegrade verify`, built by
`interpreters.batch.verification` and printed by the command (`to_json` is an entry of
`--format json`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssegrade import EvaluationResult
from ssegrade.batch import CheatOutcome, Control, TaskVerdict, Verification, task_verdict
from ssegrade.guard import Flag
from ssegrade.internal.effects import CheckRecord
from ssegrade.internal.guard_document import GuardReport

__all__ = ["CheatResult", "ControlResult", "TaskVerification", "VerifyReport"]


@dataclass(frozen=True, slots=True)
class ControlResult:
    """One graded control run: where it was written, its grade, how long it took."""

    control: Control
    n: int
    folder: Path
    result: EvaluationResult
    seconds: float
    checks: tuple[CheckRecord, ...] = ()
    guard: GuardReport | None = None


@dataclass(frozen=True, slots=True)
class CheatResult:
    """One graded run of a canonical cheat (`verify --adversarial`): where it was written,
    its grade, how long it took, and the guard's report on it (None: none was written)."""

    cheat: str
    n: int
    folder: Path
    result: EvaluationResult
    seconds: float
    guard: GuardReport | None = None

    def to_json(self) -> dict[str, Any]:
        """The run's entry in `verify --format json` (`runs`, as `adversarial/<cheat>`)."""
        return {
            "control": f"adversarial/{self.cheat}",
            "n": self.n,
            "status": self.result.patch_result.status,
            "result": self.result.patch_result.model_dump(mode="json"),
            "seconds": round(self.seconds, 3),
            "results": str(self.folder),
            "guard": None if self.guard is None else self.guard.model_dump(mode="json"),
        }


@dataclass(frozen=True, slots=True)
class TaskVerification:
    """A task's verdict, problems, flaky checks and control runs; with `--adversarial`, each
    cheat's outcome (`adversarial`, None without) and runs."""

    task: str
    folder: Path
    verification: Verification
    runs: tuple[ControlResult, ...]
    heads: tuple[tuple[str, ...], ...] = ()
    """The first lines of each evidence's log (`verification.evidence`, in order)."""
    adversarial: tuple[CheatOutcome, ...] | None = None
    cheat_runs: tuple[CheatResult, ...] = ()

    @property
    def verdict(self) -> TaskVerdict:
        """`ok`, `broken`, `flaky` (the controls), or `hackable` (a cheat passes unflagged)."""
        return task_verdict(self.verification.verdict, self.adversarial or ())

    @property
    def reference_flags(self) -> tuple[Flag, ...]:
        """The patch guard's flags the reference patch raises (in any of its runs), once each:
        what is normal for this task (a real fix may touch its tests or build files)."""
        found: dict[Flag, None] = {}
        for run in self.runs:
            if run.control == "reference" and run.guard is not None:
                found.update(dict.fromkeys(run.guard.flags))
        return tuple(found)

    def to_json(self) -> dict[str, Any]:
        """The task's entry in `verify --format json`."""
        v = self.verification
        doc: dict[str, Any] = {
            "task": self.task,
            "folder": str(self.folder),
            "verdict": self.verdict,
            "problems": list(v.problems),
            "flaky": list(v.flaky),
            "reference_flags": [f.model_dump(mode="json") for f in self.reference_flags],
            "evidence": [
                {
                    "about": e.about,
                    "control": e.control,
                    "n": e.n,
                    "check": e.check,
                    "log": e.log,
                    "head": list(head),
                }
                for e, head in zip(v.evidence, self.heads, strict=True)
            ],
            "runs": [
                {
                    "control": r.control,
                    "n": r.n,
                    "status": r.result.patch_result.status,
                    "result": r.result.patch_result.model_dump(mode="json"),
                    "seconds": round(r.seconds, 3),
                    "results": str(r.folder),
                    "guard": None if r.guard is None else r.guard.model_dump(mode="json"),
                }
                for r in self.runs
            ]
            + [r.to_json() for r in self.cheat_runs],
        }
        if self.adversarial is not None:
            doc["adversarial"] = [o.to_json() for o in self.adversarial]
        return doc


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """Every task verified (all of them unless interrupted) and whether it was interrupted."""

    tasks: tuple[TaskVerification, ...]
    interrupted: bool

    @property
    def exit_code(self) -> int:
        """130 when interrupted, 1 when a task is not `ok` (broken, flaky or hackable), else
        0."""
        if self.interrupted:
            return 130
        return 0 if all(t.verdict == "ok" for t in self.tasks) else 1
