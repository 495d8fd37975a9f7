"""`Outcomes` refuses PoC runs that do not match the task's PoCs, in its constructor, so that
`decide` and `document` can trust what they are given (SPEC §3: every PoC runs, once)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ssegrade import Task
from ssegrade.internal.checks import Check
from ssegrade.internal.verdict import (
    ApplyFailed,
    CheckOutcome,
    Crashed,
    Outcomes,
    OutcomesRefused,
    TimedOut,
)
from ssegrade.testing import FakeWorld
from ssegrade.testing.strategies import outcomes, tasks, worlds


def _poc_runs(o: Outcomes) -> list[int]:
    return [i for i, run in enumerate(o.runs) if run.check == "poc"]


def _with_runs(o: Outcomes, runs: list[CheckOutcome]) -> Outcomes:
    return Outcomes(o.has, o.pocs, tuple(runs), o.apply_failed, o.ending)


@given(outcomes(), st.data())
def test_a_poc_run_twice_is_refused_whatever_the_ending(o: Outcomes, data: st.DataObject) -> None:
    """Property (the attack: a result that counts one PoC twice as passed, so that
    `pov_passed` reaches `pov_total` without the other PoC): a PoC run a second time is
    refused, whatever ended grading."""
    found = _poc_runs(o)
    assume(found)
    i = data.draw(st.sampled_from(found))
    runs = list(o.runs)
    runs.insert(i + 1, replace(runs[i], passed=True))
    with pytest.raises(OutcomesRefused, match="ran twice"):
        _with_runs(o, runs)


@given(outcomes(), st.data(), st.text(min_size=1, max_size=12))
def test_a_poc_run_the_task_never_named_is_refused(
    o: Outcomes, data: st.DataObject, name: str
) -> None:
    """Property: a PoC run that names no PoC of the task (or none at all) is refused."""
    assume(f"/elsewhere/{name}" not in o.pocs)
    runs = list(o.runs)
    at = data.draw(st.integers(0, len(runs)))
    stranger = data.draw(st.sampled_from([f"/elsewhere/{name}", None]))
    runs.insert(at, CheckOutcome("poc", True, "", stranger))
    with pytest.raises(OutcomesRefused):
        _with_runs(o, runs)


@st.composite
def finished_with_pocs(draw: st.DrawFn) -> Outcomes:
    """A grading that ran to its end past its build, with one to four PoCs."""
    choices: list[Check] = ["build", "function_test", "intent_test"]
    others = draw(st.sets(st.sampled_from(choices)))
    pocs = tuple(f"/t/pocs/{i}" for i in range(draw(st.integers(1, 4))))
    runs = [CheckOutcome("build", True, "")] if "build" in others else []
    runs += [CheckOutcome("poc", draw(st.booleans()), "", poc) for poc in pocs]
    runs += [CheckOutcome(c, draw(st.booleans()), "") for c in others if c != "build"]
    return Outcomes(frozenset({"poc", *others}), pocs, tuple(runs))


@given(finished_with_pocs(), st.data())
def test_a_poc_missing_from_a_grading_that_ran_to_its_end_is_refused(
    o: Outcomes, data: st.DataObject
) -> None:
    """Property (the attack: a PoC left out of a finished grading, so that the PoCs that ran
    all passed and the grade is `passed` with `pov_total` short): a finished grading in which
    the build did not fail ran every PoC; one missing is refused. The same runs ended by a
    time limit or a crash are a grading that stopped there: accepted."""
    i = data.draw(st.sampled_from(_poc_runs(o)))
    runs = [run for j, run in enumerate(o.runs) if j != i]
    with pytest.raises(OutcomesRefused, match="without running the PoC"):
        _with_runs(o, runs)
    for ending in (TimedOut(60), Crashed("boom")):
        assert Outcomes(o.has, o.pocs, tuple(runs), None, ending).runs == tuple(runs)


@given(outcomes())
def test_outcomes_a_grading_can_give_are_accepted(o: Outcomes) -> None:
    """Property: the outcomes of any grading (every PoC once, nothing after a failed build,
    cut short by an ending) are accepted as they are, and so are those of a patch that did
    not apply (no PoC ran)."""
    assert _with_runs(o, list(o.runs)) == o
    assert Outcomes(o.has, o.pocs, (), ApplyFailed("git: does not apply")).runs == ()


@given(tasks(), worlds())
def test_every_grading_of_the_fake_world_gives_outcomes_it_accepts(
    task: Task, world: FakeWorld
) -> None:
    """Property: whatever the world does (scripts of any ending, failures to capture, apply
    or archive, a time limit), the grading program's own outcomes are never refused: it
    writes a document every time."""
    doc = world.grade(task)
    assert doc.patch_result.status in ("passed", "failed", "error")
