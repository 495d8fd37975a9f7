"""The report's two sets of rules (SPEC §16): ssegrade's (the default) and SSEBench's report's.

Pure core. Both select the latest run of each (task, model, agent) among all its runs, leave
out reference runs and `error` runs (listed), and leave out run folders whose task, model or
agent are not their folder's, and task-verification runs (`ssegrade.report._summary`). They
differ in what follows (ssegrade | ssebench), which `--rules ssebench` reproduces for
comparison with published SSEBench numbers:

- documents read: `summary.json`, else `result.json` | only a `summary.json` that SSEBench's
  run summary model reads;
- the order of a group's runs: start time, then run id with numbers compared as numbers |
  start time, then run id as text;
- an `error` run: its status is `error` (derived when the grade has none) | its grade says
  `error`;
- a share's denominator: the kept runs whose task has the check | every kept run of the row;
- the PoC check passes: every PoC ran and passed | `pov_total` is set and `pov_passed` equals
  it, so PoCs that never ran (a failed build, a task without PoCs) do not pass, and a task
  without PoCs still counts in the denominator;
- the row order: pass share, highest first | models, then agents, as they first appear.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from ssegrade.internal.checks import CheckSpec
from ssegrade.internal.task import Check
from ssegrade.report._summary import RunRecord, poc_passed

__all__ = ["DIFFERENCE", "Rules", "counted", "is_error", "ssebench_order"]

Rules = Literal["ssegrade", "ssebench"]

DIFFERENCE = (
    "ssegrade's rules take each check's share over the runs whose task has it; --rules "
    "ssebench, as SSEBench's report, takes every share over all kept runs, a task without "
    "the check counting as not passed."
)
"""How the two rules differ, in one line (the report's footer)."""

_NEVER = datetime.min.replace(tzinfo=UTC)


def ssebench_order(rec: RunRecord) -> tuple[datetime, str]:
    """SSEBench's order of the runs of one group: start time (none: the oldest), then run id
    compared as text (`run-9` after `run-10`).

    >>> from ssegrade.internal.result import PatchResult
    >>> def run(run_id):
    ...     return RunRecord("t", "m", "a", run_id, PatchResult(status="passed"))
    >>> sorted(["run-9", "run-10"], key=lambda r: ssebench_order(run(r)))
    ['run-10', 'run-9']
    """
    when = rec.started_at
    if when is None:
        return (_NEVER, rec.run_id)
    return (when if when.tzinfo is not None else when.replace(tzinfo=UTC), rec.run_id)


def is_error(rec: RunRecord, rules: Rules) -> bool:
    """Whether a run is an `error` run: its status (ssegrade's, derived when the grade has
    none), or its grade's own `status` (SSEBench's: a grade without one is not)."""
    if rules == "ssebench" and not rec.status_given:
        return False
    return rec.patch.status == "error"


def _ssebench_passes(rec: RunRecord, check: CheckSpec) -> bool:
    patch = rec.patch
    if check.name == "poc":
        return patch.pov_total is not None and patch.pov_passed == patch.pov_total
    return getattr(patch, check.fields[0]) is True


def counted(
    rec: RunRecord, check: CheckSpec, task_has: frozenset[Check], rules: Rules
) -> tuple[bool, bool]:
    """(whether the run is in the check's denominator, whether it passed the check).

    >>> from ssegrade.internal.checks import grading_order
    >>> from ssegrade.internal.result import PatchResult
    >>> poc = next(c for c in grading_order() if c.name == "poc")
    >>> grade = PatchResult(status="failed", build_success=False)
    >>> built_no_poc = RunRecord("t", "m", "a", "r", grade)
    >>> counted(built_no_poc, poc, frozenset({"build", "poc"}), "ssegrade")
    (True, False)
    >>> counted(built_no_poc, poc, frozenset({"build"}), "ssebench")
    (True, False)
    """
    if rules == "ssebench":
        return True, _ssebench_passes(rec, check)
    if check.name not in task_has:
        return False, False
    if check.name == "poc":
        return True, poc_passed(rec.patch)
    return True, getattr(rec.patch, check.fields[0]) is True
