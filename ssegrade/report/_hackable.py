"""The report of a verify folder: the benchmark's share of hackable tasks (SPEC §13).

Pure core. `ssegrade verify --adversarial --results DIR` keeps each cheat's runs in
`DIR/<task id>/adversarial/<cheat>/<n>/`; the report reads each run's grade and guard flags
(`CheatRun`) and judges each cheat as verify does (`ssegrade.batch._verify_adversarial`). A
task is hackable when a cheat passes unflagged; the share is over the tasks whose cheats
were graded (a task verified without `--adversarial` is listed as not checked).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ssegrade.batch._cheats import CHEATS, Cheat
from ssegrade.batch._verify_adversarial import CheatOutcome, CheatRun, judge_cheats
from ssegrade.report._model import Share

__all__ = ["HackableReport", "VerifiedTask", "hackable_report", "verified_task"]


@dataclass(frozen=True, slots=True)
class VerifiedTask:
    """A task of a verify folder: each cheat's outcome (None: no cheat was graded)."""

    task: str
    outcomes: tuple[CheatOutcome, ...] | None

    @property
    def hackable(self) -> bool | None:
        """Whether a cheat passes unflagged; None when no cheat was graded."""
        if self.outcomes is None:
            return None
        return any(o.verdict == "hackable" for o in self.outcomes)


def verified_task(task: str, runs: Sequence[CheatRun]) -> VerifiedTask:
    """A task from its cheats' runs (none: verified without `--adversarial`).

    >>> verified_task("t", [CheatRun("tests-removed", 1, "passed", ())]).hackable
    True
    """
    if not runs:
        return VerifiedTask(task, None)
    order = {name: i for i, name in enumerate(CHEATS)}
    names = sorted({r.cheat for r in runs}, key=lambda n: (order.get(n, len(order)), n))
    return VerifiedTask(task, judge_cheats([Cheat(n, patch=b"") for n in names], runs))


@dataclass(frozen=True, slots=True)
class HackableReport:
    """Every task of a verify folder and the share of hackable tasks among those checked."""

    tasks: tuple[VerifiedTask, ...]
    share: Share

    @property
    def unchecked(self) -> int:
        """How many tasks were verified without `--adversarial`."""
        return sum(1 for t in self.tasks if t.outcomes is None)

    def summary(self) -> str:
        """The share in one line.

        >>> hackable_report([verified_task("t", [CheatRun("a", 1, "failed", ())])]).summary()
        'hackable tasks: 0 of 1 checked (0.0 %)'
        """
        s = self.share
        if s.share is None:
            line = "hackable tasks: none checked (verify without --adversarial)"
        else:
            line = f"hackable tasks: {s.passed} of {s.of} checked ({100 * s.share:.1f} %)"
        if self.unchecked and s.share is not None:
            line += f"; {self.unchecked} verified without --adversarial"
        return line

    def to_json(self) -> dict[str, Any]:
        """The report as JSON: the share, and each task's cheats."""
        return {
            "kind": "verify",
            "hackable": self.share.model_dump(mode="json"),
            "unchecked": self.unchecked,
            "tasks": [
                {
                    "task": t.task,
                    "hackable": t.hackable,
                    "adversarial": None
                    if t.outcomes is None
                    else [o.to_json() for o in t.outcomes],
                }
                for t in self.tasks
            ],
        }


def hackable_report(tasks: Sequence[VerifiedTask]) -> HackableReport:
    """The share of hackable tasks over those whose cheats were graded."""
    checked = [t for t in tasks if t.outcomes is not None]
    hackable = sum(1 for t in checked if t.hackable)
    return HackableReport(tuple(tasks), Share.of_counts(hackable, len(checked)))
