"""The report model: what `aggregate` returns and every output format prints.

Pure core: frozen pydantic models, dumped as the `--format json` document of SPEC §11 (more
keys are added; those of the SPEC keep their meaning).
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ssegrade.internal.result import ErrorKind, Status
from ssegrade.internal.task import Check
from ssegrade.report._rules import Rules
from ssegrade.report._stats import CLUSTERED_NAME, INTERVAL_NAME, TEST_NAME, wilson

__all__ = [
    "Comparison",
    "ErrorCounts",
    "Excluded",
    "Interval",
    "Report",
    "Row",
    "RowKey",
    "RunsMode",
    "Share",
    "TaskRow",
    "TaskRun",
]

RunsMode = Literal["latest", "all"]
Containment = Literal["full", "container", "weak", "unknown"]
"""The containment a run's scripts ran in, as the report counts it (no mode or any other
value: `unknown`)."""
RowKey = tuple[str, str]
"""A report row's identity: (model, agent)."""


class _Out(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)


class Share(_Out):
    """`passed` of `of` runs passed a check; `share` and the Wilson 95 % bounds (None if of=0)."""

    passed: int
    of: int
    share: float | None
    low: float | None
    high: float | None

    @staticmethod
    @lru_cache(maxsize=8192)
    def of_counts(passed: int, of: int) -> Share:
        """The share and its Wilson interval for the counts (the same object for the same
        counts: a share is frozen, and a report of 25,000 tasks has few distinct counts).

        >>> s = Share.of_counts(4, 12)
        >>> round(s.share, 3), round(s.low, 3), round(s.high, 3)
        (0.333, 0.138, 0.609)
        >>> Share.of_counts(0, 0).share is None
        True
        """
        bounds = wilson(passed, of)
        if bounds is None:
            return Share(passed=passed, of=of, share=None, low=None, high=None)
        return Share(passed=passed, of=of, share=passed / of, low=bounds[0], high=bounds[1])


class ErrorCounts(_Out):
    """A row's `error` runs, by kind (SPEC §3): an error is neither a pass nor a failure, so
    it is counted beside the shares, never silently dropped. `again` is how many of them a
    batch resume grades again by default (`infrastructure` and `grader`, while fewer than
    the default `--max-attempts` of 2 attempts were made)."""

    total: int = 0
    timeout: int = 0
    task: int = 0
    infrastructure: int = 0
    grader: int = 0
    again: int = 0


class Interval(_Out):
    """A 95 % interval around a share."""

    low: float
    high: float


class Row(_Out):
    """One (model, agent): how many runs were kept, their mean spend and agent minutes (None
    when no kept run says), the share passing each check, and the share of runs that passed
    (status `passed`: every check its task has passed).

    Over repeated trials: `trials` is the fewest kept runs of any of its tasks; `pass_at_k`
    and `pass_hat_k` give pass@k and pass^k for k = 1 … `trials` (keys are k); `clustered` is
    the task-clustered interval of the pass share, given when a task has several kept runs.
    `cost_per_pass` is the total spend of the kept runs over the runs that passed.

    The patch guard's columns (`ssegrade.report._guard`): `unflagged`, the share of runs that
    passed and raised no flag, over the same runs as `passed` (None when no run carries a
    guard record); `flagged`, how many passed runs raised each kind; `unguarded`, the runs
    without a guard record; `flagged_as_failed`, the pass share where a flagged pass counts
    as not passed (a run without a guard record by its grade), over the same runs. Only flags
    that count against a run are in these; `listed` counts the passed runs that raised each
    kind only as a touch no check runs (listed, not counted).

    `errors` counts the row's `error` runs by kind: those left out of the shares (the latest
    run of their task under `--runs latest`), and those counted as failed with
    `--errors-as-failures`. A (model, agent) whose runs are all errors has no row: its runs
    are listed among those left out.
    """

    model: str
    agent: str
    runs: int
    spend: float | None
    minutes: float | None
    build: Share
    poc: Share
    func: Share
    intent: Share
    passed: Share
    tasks: int = 0
    trials: int = 0
    cost_per_pass: float | None = None
    pass_at_k: dict[int, float] = {}
    pass_hat_k: dict[int, float] = {}
    clustered: Interval | None = None
    unflagged: Share | None = None
    flagged: dict[str, int] = {}
    unguarded: int = 0
    flagged_as_failed: Share | None = None
    errors: ErrorCounts = ErrorCounts()
    listed: dict[str, int] = {}

    @property
    def key(self) -> RowKey:
        """(model, agent)."""
        return (self.model, self.agent)

    @property
    def label(self) -> str:
        """`model/agent`, the spelling `--compare` accepts."""
        return f"{self.model}/{self.agent}"


class TaskRow(_Out):
    """One task over every kept run of it, whatever the model and agent: how many runs, and the
    share passing each check and passing overall (where do they fail)."""

    task: str
    runs: int
    build: Share
    poc: Share
    func: Share
    intent: Share
    passed: Share


class Excluded(_Out):
    """A run left out of the shares: a reference run, an `error` run (under `latest`, the
    latest run of its task, model and agent; `error_kind` its kind), or a run
    `--exclude-flagged` took out."""

    task: str
    model: str
    agent: str
    run_id: str
    why: str
    error_msg: str | None
    status: Status = "error"
    reference: bool = False
    build: bool | None = None
    poc: str | None = None
    func: bool | None = None
    intent: bool | None = None
    folder: str = ""
    spend: float | None = None
    minutes: float | None = None
    started_at: datetime | None = None
    flags: tuple[str, ...] | None = None
    containment: Containment = "unknown"
    error_kind: ErrorKind | None = None


class TaskRun(_Out):
    """One kept run in the per-task table. `poc` is `passed/total`, None when the PoCs did not
    run; `checks` lists the checks the task has (a null field of a listed check: not run).
    `status` is `failed` for an error run counted as failed (`error` keeps its own message).
    `flags`: the kinds the patch guard raised (None: no guard record); `containment` the mode
    its scripts ran in; `error_kind` the kind of an `error` run counted (None for any other)."""

    model: str
    agent: str
    task: str
    trial: int
    status: Status
    build: bool | None
    poc: str | None
    func: bool | None
    intent: bool | None
    run_id: str
    checks: tuple[Check, ...]
    folder: str = ""
    spend: float | None = None
    minutes: float | None = None
    started_at: datetime | None = None
    cached_from: str | None = None
    error_msg: str | None = None
    flags: tuple[str, ...] | None = None
    containment: Containment = "unknown"
    error_kind: ErrorKind | None = None


class Report(_Out):
    """The whole report (the `--format json` document of SPEC §11).

    `set_aside` counts the runs `--runs latest` did not keep because a newer run of the same
    task, model and agent exists; `errors_as_failures` says whether error runs were counted as
    failed instead of left out; `rules` which rules made it (`ssegrade.report._rules`);
    `containment` counts the runs kept and left out by the mode their scripts ran in
    (`full`, `weak`, `unknown`).
    """

    runs: RunsMode
    rows: tuple[Row, ...]
    excluded: tuple[Excluded, ...]
    tasks: tuple[TaskRun, ...]
    by_task: tuple[TaskRow, ...] = ()
    interval: str = INTERVAL_NAME
    clustered_interval: str = CLUSTERED_NAME
    set_aside: int = 0
    errors_as_failures: bool = False
    flagged_as: Literal["failed"] | None = None
    """`failed` when a pass the patch guard flagged was counted as not passed
    (`--flagged-as failed`)."""
    rules: Rules = "ssegrade"
    containment: dict[str, int] = {}


class Comparison(_Out):
    """A paired comparison of rows A and B on the tasks both ran.

    A row passes a task when more than half of its kept runs of that task passed (with
    `--runs latest`: its one run passed). `p_value` is the exact McNemar test's; `p_holm` is
    Holm-adjusted over the comparisons reported together (equal to `p_value` alone).
    """

    a: str
    b: str
    test: str = TEST_NAME
    tasks: int
    both: int
    only_a: int
    only_b: int
    neither: int
    p_value: float
    p_holm: float
