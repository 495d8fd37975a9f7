"""The report: from parsed run records to pass shares per (model, agent), with intervals.

Pure core: this module parses the bytes of one run's `summary.json` or `result.json`
(`parse_run`), aggregates run records into the report model (`aggregate`) and compares two rows
(`compare`). Finding run folders and reading files is `interpreters.report_io`'s job; printing is
`interpreters.report_render`'s. Other tools import this module alone.

The rules (SPEC §11):

- selection: `latest` keeps the newest graded run of each (task, model, agent), newest by
  (`started_at`, run id), a missing time counting as the oldest; `all` keeps every graded run.
  Graded runs of a group are numbered as trials 1, 2, … in that order, in both modes.
- reference runs and `error` runs are never graded: they are left out before selection and listed
  in `excluded`, each with its `error_msg`;
- a check's share is taken over the kept runs whose task has that check. Which checks a task has
  comes from its config when a run carries it (`task` in `summary.json`, `config` in
  `result.json`), else from the check fields any run of that task filled in;
- a PoC check passes when every PoC ran and passed: a task with PoCs whose PoCs did not run
  counts as not passed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator
from returns.result import Failure, Result, Success

from ssegrade.result import PatchResult, Status, parse_result
from ssegrade.stats import INTERVAL_NAME, TEST_NAME, mcnemar_exact, wilson
from ssegrade.task import Check, checks_of

__all__ = [
    "CHECKS",
    "Comparison",
    "Excluded",
    "ReadError",
    "Report",
    "Row",
    "RowKey",
    "RunFolder",
    "RunRecord",
    "RunsMode",
    "Share",
    "Summary",
    "TaskConfig",
    "TaskRow",
    "TaskRun",
    "aggregate",
    "compare",
    "compare_all",
    "find_row",
    "parse_run",
    "poc_passed",
]

RunsMode = Literal["latest", "all"]
RowKey = tuple[str, str]
"""A report row's identity: (model, agent)."""

CHECKS: tuple[Check, ...] = ("build", "poc", "function_test", "intent_test")
"""The checks, in the order the report shows them."""


# --------------------------------------------------------------------------- summary.json


class _Lenient(BaseModel):
    """Unknown keys are ignored: summaries carry whatever their writer wanted to keep."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class _Scripts(_Lenient):
    build: str | None = None
    run: str | None = None
    test: str | None = None


class _Files(_Lenient):
    poc: tuple[str, ...] = ()
    future_test: str | None = None

    @field_validator("poc", mode="before")
    @classmethod
    def _null_is_empty(cls, value: object) -> object:
        return () if value is None else value


class TaskConfig(_Lenient):
    """The part of a task's `config.yaml` the report needs: its id and which checks it has."""

    id: str | None = None
    scripts: _Scripts | None = None
    files: _Files | None = None

    @property
    def checks(self) -> frozenset[Check]:
        """The checks the task has (SPEC §2).

        >>> TaskConfig.model_validate(
        ...     {"scripts": {"run": "run.sh", "test": "t.sh"}, "files": {"poc": ["p"]}}
        ... ).checks == {"poc", "function_test"}
        True
        """
        scripts = self.scripts or _Scripts()
        files = self.files or _Files()
        return checks_of(
            build=scripts.build,
            run=scripts.run,
            test=scripts.test,
            pocs=files.poc,
            future_test=files.future_test,
        )


class RunConfig(_Lenient):
    """How a run was started: the agent, the model, whether it was a reference run."""

    agent: str | None = None
    model: str | None = None
    reference_run: bool | None = None


class _Patch(_Lenient):
    status: Status | None = None
    build_success: bool | None = None
    pov_passed: int | None = None
    pov_total: int | None = None
    func_test_success: bool | None = None
    intent_test_success: bool | None = None
    error_msg: str | None = None


class _Runtime(_Lenient):
    agent_duration: float | None = None


class Summary(_Lenient):
    """A run's `summary.json`; a bare `result.json` reads as a summary without run config.

    Keys: the task config (`task`, also read as `task_config` or `config`), the run config (`run`,
    also `run_config`, with `agent`, `model`, `reference_run`; these three are also read at the
    top level), `patch_result`, `runtime_result`, `spend` (a number, e.g. dollars) and
    `started_at` (ISO 8601; no time zone means UTC). Other keys are ignored.
    """

    task: TaskConfig | None = Field(
        default=None, validation_alias=AliasChoices("task", "task_config", "config")
    )
    run: RunConfig | None = Field(default=None, validation_alias=AliasChoices("run", "run_config"))
    agent: str | None = None
    model: str | None = None
    reference_run: bool | None = None
    patch_result: _Patch
    runtime_result: _Runtime | None = None
    spend: float | None = None
    started_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class RunFolder:
    """Where a run was found: `<task>/<model…>/<agent>/<run-id>` below the results folder."""

    task: str
    model: str
    agent: str
    run_id: str

    @staticmethod
    def from_parts(parts: Sequence[str]) -> RunFolder | None:
        """The run named by the path parts below the results folder; None when too short.

        >>> RunFolder.from_parts(["t", "openai", "gpt-5", "codex", "r1"])
        RunFolder(task='t', model='openai/gpt-5', agent='codex', run_id='r1')
        >>> RunFolder.from_parts(["t", "codex", "r1"]) is None
        True
        """
        if len(parts) < 4:
            return None
        return RunFolder(parts[0], "/".join(parts[1:-2]), parts[-2], parts[-1])


@dataclass(frozen=True, slots=True)
class ReadError:
    """Why one run document could not be used; `message` is one line."""

    message: str


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run as the report sees it.

    `checks` is the set of checks the run's task has, when the run carries the task config;
    None when it is unknown (then the report infers it from the runs of the same task).
    `agent_seconds` is the agent's run time (`runtime_result.agent_duration`), None when unknown.
    """

    task: str
    model: str
    agent: str
    run_id: str
    patch: PatchResult
    started_at: datetime | None = None
    reference: bool = False
    spend: float | None = None
    agent_seconds: float | None = None
    checks: frozenset[Check] | None = None


def parse_run(data: bytes, folder: RunFolder) -> Result[RunRecord, ReadError]:
    """Read one run's `summary.json` or `result.json` bytes into a record.

    Task id, model and agent come from the document when it names them, from the folder
    otherwise; the run id is the folder's name. A missing `status` is derived with the status
    rule; a missing time zone on `started_at` means UTC.

    >>> folder = RunFolder("t", "m", "a", "r1")
    >>> doc = b'{"run": {"model": "openai/gpt-5"}, "patch_result": {"build_success": false}}'
    >>> rec = parse_run(doc, folder).unwrap()
    >>> rec.model, rec.agent, rec.patch.status
    ('openai/gpt-5', 'a', 'failed')
    >>> parse_run(b'{"patch_result": 3}', folder).failure().message
    'patch_result: Input should be an object'
    """
    try:
        doc = Summary.model_validate_json(data)
    except ValidationError as exc:
        return Failure(ReadError(_first_error(exc)))
    patch = doc.patch_result
    status = patch.status
    if status is None:
        derived = parse_result(data)
        if isinstance(derived, Failure):
            return Failure(ReadError(str(derived.failure()).removeprefix("result.json: ")))
        status = derived.unwrap().patch_result.status
    run = doc.run or RunConfig()
    started = doc.started_at
    if started is not None and started.tzinfo is None:
        started = started.replace(tzinfo=UTC)
    reference = run.reference_run if run.reference_run is not None else doc.reference_run
    return Success(
        RunRecord(
            task=(doc.task.id if doc.task is not None else None) or folder.task,
            model=run.model or doc.model or folder.model,
            agent=run.agent or doc.agent or folder.agent,
            run_id=folder.run_id,
            patch=PatchResult.model_construct(
                status=status,
                build_success=patch.build_success,
                pov_passed=patch.pov_passed,
                pov_total=patch.pov_total,
                func_test_success=patch.func_test_success,
                intent_test_success=patch.intent_test_success,
                error_msg=patch.error_msg,
            ),
            started_at=started,
            reference=bool(reference),
            spend=doc.spend,
            agent_seconds=(
                doc.runtime_result.agent_duration if doc.runtime_result is not None else None
            ),
            checks=doc.task.checks if doc.task is not None else None,
        )
    )


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(part) for part in err["loc"])
    return f"{where}: {err['msg']}" if where else str(err["msg"])


# --------------------------------------------------------------------------- report model


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class Share(_Out):
    """`passed` of `of` runs passed a check; `share` and the Wilson 95 % bounds (None if of=0)."""

    passed: int
    of: int
    share: float | None
    low: float | None
    high: float | None

    @staticmethod
    def of_counts(passed: int, of: int) -> Share:
        """The share and its Wilson interval for the counts.

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


class Row(_Out):
    """One (model, agent): how many runs were kept, their mean spend and agent minutes (None
    when no kept run says), the share passing each check, and the share of runs that passed
    (status `passed`: every check its task has passed)."""

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
    """A run left out of the shares: a reference run or an `error` run."""

    task: str
    model: str
    agent: str
    run_id: str
    why: str
    error_msg: str | None


class TaskRun(_Out):
    """One kept run in the per-task table. `poc` is `passed/total`, None when the PoCs did not
    run; `checks` lists the checks the task has (a null field of a listed check: not run)."""

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


class Report(_Out):
    """The whole report (the `--format json` document of SPEC §11)."""

    runs: RunsMode
    rows: tuple[Row, ...]
    excluded: tuple[Excluded, ...]
    tasks: tuple[TaskRun, ...]
    by_task: tuple[TaskRow, ...] = ()
    interval: str = INTERVAL_NAME


class Comparison(_Out):
    """A paired comparison of rows A and B on the tasks both ran.

    A row passes a task when more than half of its kept runs of that task passed (with
    `--runs latest`: its one run passed). `p_value` is the exact McNemar test's.
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


# --------------------------------------------------------------------------- aggregation


def poc_passed(patch: PatchResult) -> bool:
    """Whether the PoC check passed: every PoC ran and passed (a PoC check that did not run
    has not passed).

    >>> poc_passed(PatchResult(status="passed", pov_passed=2, pov_total=2))
    True
    >>> poc_passed(PatchResult(status="failed", build_success=False))
    False
    """
    total = patch.pov_total
    return total is not None and total > 0 and patch.pov_passed == total


def _observed(patch: PatchResult) -> set[Check]:
    seen: set[Check] = set()
    if patch.build_success is not None:
        seen.add("build")
    if patch.pov_total is not None:
        seen.add("poc")
    if patch.func_test_success is not None:
        seen.add("function_test")
    if patch.intent_test_success is not None:
        seen.add("intent_test")
    return seen


def _task_checks(records: Sequence[RunRecord]) -> dict[str, frozenset[Check]]:
    configured: dict[str, set[Check]] = {}
    observed: dict[str, set[Check]] = defaultdict(set)
    for rec in records:
        if rec.checks is not None:
            configured.setdefault(rec.task, set()).update(rec.checks)
        observed[rec.task] |= _observed(rec.patch)
    return {task: frozenset(configured.get(task, seen)) for task, seen in observed.items()}


_NEVER = datetime.min.replace(tzinfo=UTC)


def _order(rec: RunRecord) -> tuple[int, datetime, str]:
    when = rec.started_at
    if when is None:
        return (0, _NEVER, rec.run_id)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (1, when, rec.run_id)


def _why(rec: RunRecord) -> str:
    if rec.reference:
        return "reference run"
    return f"error: {rec.patch.error_msg}" if rec.patch.error_msg else "error"


def _mean(values: Iterable[float | None]) -> float | None:
    """The mean of the known values; `fsum` is exact, so the input order cannot change it."""
    known = [v for v in values if v is not None]
    return math.fsum(known) / len(known) if known else None


def _share(
    kept: Sequence[RunRecord], has: dict[str, frozenset[Check]], check: Check | None
) -> Share:
    """The share of `kept` passing `check` (None: passing overall) over the runs that have it."""
    if check is None:
        return Share.of_counts(sum(rec.patch.status == "passed" for rec in kept), len(kept))
    passed = of = 0
    for rec in kept:
        if check not in has[rec.task]:
            continue
        of += 1
        patch = rec.patch
        if check == "build":
            ok = patch.build_success is True
        elif check == "poc":
            ok = poc_passed(patch)
        elif check == "function_test":
            ok = patch.func_test_success is True
        else:
            ok = patch.intent_test_success is True
        passed += ok
    return Share.of_counts(passed, of)


def aggregate(records: Iterable[RunRecord], runs: RunsMode = "latest") -> Report:
    """The report of the given runs (SPEC §11); see the module docstring for the rules.

    A run appears once whatever the input: records with the same (task, model, agent, run id)
    after the first are ignored. Rows are sorted by (model, agent), tasks by
    (task, model, agent, trial), excluded runs by (task, model, agent, run id).

    >>> def rec(run_id, status, when=None, **fields):
    ...     patch = PatchResult(status=status, **fields)
    ...     at = None if when is None else datetime(2025, 1, when, tzinfo=UTC)
    ...     return RunRecord("t", "m", "a", run_id, patch, started_at=at,
    ...                      checks=frozenset({"build", "poc"}))
    >>> runs = [rec("r1", "passed", 1, build_success=True, pov_passed=1, pov_total=1),
    ...         rec("r2", "failed", 2, build_success=False),
    ...         rec("r3", "error", 3, error_msg="Timeout (3600s)")]
    >>> latest = aggregate(runs)
    >>> row = latest.rows[0]
    >>> row.runs, row.build.passed, row.poc.passed, row.poc.of, row.func.of
    (1, 0, 0, 1, 0)
    >>> latest.tasks[0].trial, latest.excluded[0].why
    (2, 'error: Timeout (3600s)')
    >>> aggregate(runs, "all").rows[0].build.share
    0.5
    """
    unique: dict[tuple[str, str, str, str], RunRecord] = {}
    for rec in records:
        unique.setdefault((rec.task, rec.model, rec.agent, rec.run_id), rec)
    every = list(unique.values())
    has = _task_checks(every)

    excluded: list[RunRecord] = []
    groups: dict[tuple[str, str, str], list[RunRecord]] = defaultdict(list)
    for rec in every:
        if rec.reference or rec.patch.status == "error":
            excluded.append(rec)
        else:
            groups[(rec.task, rec.model, rec.agent)].append(rec)

    kept: list[tuple[int, RunRecord]] = []
    for group in groups.values():
        group.sort(key=_order)
        trials = list(enumerate(group, start=1))
        kept.extend(trials if runs == "all" else trials[-1:])

    by_row: dict[RowKey, list[RunRecord]] = defaultdict(list)
    for _, rec in kept:
        by_row[(rec.model, rec.agent)].append(rec)
    rows = tuple(
        Row(
            model=model,
            agent=agent,
            runs=len(recs),
            spend=_mean(r.spend for r in recs),
            minutes=_mean(None if r.agent_seconds is None else r.agent_seconds / 60 for r in recs),
            build=_share(recs, has, "build"),
            poc=_share(recs, has, "poc"),
            func=_share(recs, has, "function_test"),
            intent=_share(recs, has, "intent_test"),
            passed=_share(recs, has, None),
        )
        for (model, agent), recs in sorted(by_row.items())
    )
    by_task: dict[str, list[RunRecord]] = defaultdict(list)
    for _, rec in kept:
        by_task[rec.task].append(rec)
    task_rows = tuple(
        TaskRow(
            task=task,
            runs=len(recs),
            build=_share(recs, has, "build"),
            poc=_share(recs, has, "poc"),
            func=_share(recs, has, "function_test"),
            intent=_share(recs, has, "intent_test"),
            passed=_share(recs, has, None),
        )
        for task, recs in sorted(by_task.items())
    )
    kept.sort(key=lambda item: (item[1].task, item[1].model, item[1].agent, item[0]))
    tasks = tuple(_task_run(trial, rec, has[rec.task]) for trial, rec in kept)
    excluded.sort(key=lambda r: (r.task, r.model, r.agent, r.run_id))
    return Report(
        runs=runs,
        rows=rows,
        excluded=tuple(
            Excluded(
                task=r.task,
                model=r.model,
                agent=r.agent,
                run_id=r.run_id,
                why=_why(r),
                error_msg=r.patch.error_msg,
            )
            for r in excluded
        ),
        tasks=tasks,
        by_task=task_rows,
    )


def _task_run(trial: int, rec: RunRecord, has: frozenset[Check]) -> TaskRun:
    patch = rec.patch
    poc = None if patch.pov_total is None else f"{patch.pov_passed or 0}/{patch.pov_total}"
    return TaskRun.model_construct(
        model=rec.model,
        agent=rec.agent,
        task=rec.task,
        trial=trial,
        status=patch.status,
        build=patch.build_success,
        poc=poc,
        func=patch.func_test_success,
        intent=patch.intent_test_success,
        run_id=rec.run_id,
        checks=tuple(c for c in CHECKS if c in has),
    )


# --------------------------------------------------------------------------- comparison


def find_row(report: Report, spec: str) -> Result[RowKey, ReadError]:
    """The row named `model/agent` (the model may itself contain `/`).

    >>> rep = Report(runs="latest", rows=(), excluded=(), tasks=())
    >>> find_row(rep, "m/a").failure().message
    "no row 'm/a' (the report has no rows)"
    """
    for row in report.rows:
        if row.label == spec:
            return Success(row.key)
    known = ", ".join(row.label for row in report.rows[:20])
    more = ", …" if len(report.rows) > 20 else ""
    hint = f"rows are {known}{more}" if known else "the report has no rows"
    return Failure(ReadError(f"no row '{spec}' ({hint})"))


def _outcomes(report: Report, key: RowKey) -> dict[str, bool]:
    tally: dict[str, list[int]] = {}
    for run in report.tasks:
        if (run.model, run.agent) == key:
            counts = tally.setdefault(run.task, [0, 0])
            counts[0] += run.status == "passed"
            counts[1] += 1
    return {task: 2 * passed > total for task, (passed, total) in tally.items()}


def compare(report: Report, a: RowKey, b: RowKey) -> Comparison:
    """Paired comparison of rows `a` and `b` on the tasks both ran, with the exact McNemar test.

    >>> def run(agent, task, status):
    ...     return TaskRun(model="m", agent=agent, task=task, trial=1, status=status,
    ...                    build=None, poc=None, func=None, intent=None, run_id="r", checks=())
    >>> tasks = [run("a", f"t{i}", "passed") for i in range(6)]
    >>> tasks += [run("b", f"t{i}", "failed") for i in range(5)] + [run("b", "t5", "passed")]
    >>> tasks += [run("b", "t9", "passed")]
    >>> c = compare(Report(runs="latest", rows=(), excluded=(), tasks=tuple(tasks)),
    ...             ("m", "a"), ("m", "b"))
    >>> c.tasks, c.both, c.only_a, c.only_b, c.neither, c.p_value
    (6, 1, 5, 0, 0, 0.0625)
    """
    left = _outcomes(report, a)
    right = _outcomes(report, b)
    shared = left.keys() & right.keys()
    both = sum(left[t] and right[t] for t in shared)
    only_a = sum(left[t] and not right[t] for t in shared)
    only_b = sum(right[t] and not left[t] for t in shared)
    return Comparison(
        a=f"{a[0]}/{a[1]}",
        b=f"{b[0]}/{b[1]}",
        tasks=len(shared),
        both=both,
        only_a=only_a,
        only_b=only_b,
        neither=len(shared) - both - only_a - only_b,
        p_value=mcnemar_exact(only_a, only_b),
    )


def compare_all(report: Report) -> tuple[Comparison, ...]:
    """Every pair of rows, in row order (A before B)."""
    keys = [row.key for row in report.rows]
    return tuple(
        compare(report, keys[i], keys[j]) for i in range(len(keys)) for j in range(i + 1, len(keys))
    )
