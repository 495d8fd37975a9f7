"""Run records drawn for the report's properties: tasks with their checks, models, agents,
run ids and start times, patch results with or without errors, and guard flags."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

from ssegrade.guard import KINDS
from ssegrade.internal.result import PatchResult, status_of
from ssegrade.internal.task import Check
from ssegrade.report import (
    Report,
    RunRecord,
    RunsMode,
    Share,
)
from ssegrade.testing.strategies import CHECKS


def shares(report: Report) -> list[Share]:
    """Every share the report holds, rows and per-task rows."""
    keys = ("build", "poc", "func", "intent", "passed")
    return [getattr(row, key) for row in (*report.rows, *report.by_task) for key in keys]


TASKS: dict[str, tuple[frozenset[Check], int]] = {
    # task: (the checks its config gives, number of PoCs)
    "t-all": (frozenset(CHECKS), 2),
    "t-nointent": (frozenset({"build", "poc", "function_test"}), 1),
    "t-nobuild": (frozenset({"poc", "function_test", "intent_test"}), 3),
    "t-tests": (frozenset({"function_test"}), 0),
}
MODELS = ("m1", "org/m2")
AGENTS = ("a1", "a2")
BASE = datetime(2025, 1, 1, tzinfo=UTC)
MODES: tuple[RunsMode, ...] = ("latest", "all")


@st.composite
def patches(draw: st.DrawFn, task: str, *, error: bool | None = None) -> PatchResult:
    """A patch result consistent with the task's checks (fields of absent checks stay null);
    an `error` one (`error=True`) has no failed check, which would decide its grade."""
    has, pocs = TASKS[task]
    outcomes = st.just(True) if error else st.booleans()

    def maybe_bool(check: Check) -> bool | None:
        return draw(st.none() | outcomes) if check in has else None

    build = maybe_bool("build")
    total = passed = None
    if "poc" in has and draw(st.booleans()):
        total = pocs
        passed = pocs if error else draw(st.integers(0, pocs))
    func = maybe_bool("function_test")
    intent = maybe_bool("intent_test")
    unfinished = draw(st.booleans()) if error is None else error
    status = status_of(
        build_success=build,
        pov_passed=passed,
        pov_total=total,
        func_test_success=func,
        intent_test_success=intent,
        unfinished=unfinished,
    )
    message = draw(st.sampled_from(["Timeout (3600s)", "Exception: boom", None]))
    return PatchResult(
        status=status,
        build_success=build,
        pov_passed=passed,
        pov_total=total,
        func_test_success=func,
        intent_test_success=intent,
        error_msg=message if status == "error" else None,
    )


FLAGS = st.none() | st.lists(st.sampled_from(KINDS), unique=True, max_size=3).map(tuple)
"""A run's patch guard flags: none raised, some, or no guard record."""


@st.composite
def records(
    draw: st.DrawFn,
    *,
    config: bool | None = True,
    reference: bool | None = None,
    error: bool | None = None,
) -> RunRecord:
    """One run record. `config`: True = carries its task's checks, None = either way."""
    task = draw(st.sampled_from(sorted(TASKS)))
    known = draw(st.booleans()) if config is None else config
    when = draw(st.none() | st.integers(0, 5).map(lambda d: BASE + timedelta(days=d)))
    return RunRecord(
        task=task,
        model=draw(st.sampled_from(MODELS)),
        agent=draw(st.sampled_from(AGENTS)),
        run_id=draw(st.sampled_from(["r", "run-"])) + str(draw(st.integers(0, 12))),
        patch=draw(patches(task, error=error)),
        started_at=when,
        reference=draw(st.booleans()) if reference is None else reference,
        spend=draw(st.none() | st.floats(0, 50, allow_nan=False)),
        agent_seconds=draw(st.none() | st.integers(0, 7200).map(float)),
        checks=TASKS[task][0] if known else None,
        flags=draw(FLAGS),
        containment=draw(st.sampled_from([None, "full", "weak", "odd"])),
    )


def run_lists(config: bool | None = True) -> st.SearchStrategy[list[RunRecord]]:
    """Lists of records with distinct (task, model, agent, run id)."""
    return st.lists(
        records(config=config),
        max_size=40,
        unique_by=lambda r: (r.task, r.model, r.agent, r.run_id),
    )
