"""Properties of the verdict rule `decide()` (SPEC §3)."""

from __future__ import annotations

import random

from hypothesis import assume, given
from hypothesis import strategies as st

from ssegrade import PatchResult, RuntimeResult, decide
from ssegrade.internal.verdict import (
    ApplyFailed,
    CheckOutcome,
    Crashed,
    Ending,
    Finished,
    Outcomes,
    OutcomesRefused,
    Signalled,
    TimedOut,
    bound_log,
    document,
    ended,
    escaped,
    kind_of,
    not_graded,
)
from ssegrade.testing.strategies import endings, outcomes

any_ending: st.SearchStrategy[Ending] = st.one_of(
    endings,
    st.builds(Signalled, st.sampled_from(["SIGINT", "SIGTERM"])),
    st.builds(
        Crashed,
        st.text(min_size=1, max_size=20),
        st.none() | st.text(max_size=20),
        st.sampled_from(["task", "infrastructure", "grader"]),
    ),
)
"""Every way a grading ends: finished, its time limit, an interrupt, an exception of any
kind."""


def _ended_by(o: Outcomes, ending: Ending) -> Outcomes:
    """`o` ended by `ending`; an example where no grading could end so (a grading that ran
    to its end without a PoC) is left aside."""
    ended_so = _or_none(o, ending)
    assume(ended_so is not None)
    assert ended_so is not None
    return ended_so


def _or_none(o: Outcomes, ending: Ending) -> Outcomes | None:
    try:
        return Outcomes(o.has, o.pocs, o.runs, o.apply_failed, ending)
    except OutcomesRefused:
        return None


def _failed(o: Outcomes) -> bool:
    return any(not run.passed for run in o.runs)


@given(outcomes(), any_ending)
def test_a_finished_failed_check_fails_whatever_the_ending(o: Outcomes, ending: Ending) -> None:
    """Property: a failed check that finished is decisive: `failed`, whatever ended grading
    (a time limit, an exception, a full disk, an interrupt), with that check as error_msg and
    its log as error_log, the same grade as had grading run to its end there."""
    o = _ended_by(o, ending)
    result = decide(o)
    if _failed(o):
        assert result.status == "failed"
        finished = _or_none(o, Finished())  # none when a PoC never ran: not a finished grading
        assert finished is None or result == decide(finished)
        assert not result.error_msg.startswith(("Timeout", "Exception", "Interrupted"))  # type: ignore[union-attr]


@given(outcomes(), any_ending)
def test_only_a_grading_without_a_failed_check_can_be_error(o: Outcomes, ending: Ending) -> None:
    """Property: `error` only when no finished check failed: nothing ran, or grading did
    not run to its end; then error_msg says how it ended."""
    o = _ended_by(o, ending)
    result = decide(o)
    if _failed(o):
        assert result.status == "failed"
    elif not isinstance(o.ending, Finished):
        assert result.status == "error"
        assert result.error_msg == ended(o.ending)
    elif not o.runs:
        assert (result.status, result.error_msg) == ("error", "No check ran")
    else:
        assert result.status == "passed"
        assert result.error_msg is None


@given(outcomes(), any_ending, st.integers(0, 3), st.booleans())
def test_every_error_has_a_kind_and_no_other_grade_has_one(
    o: Outcomes, ending: Ending, agent_duration: int, agent_timeout: bool
) -> None:
    """Property: `document` gives `error_kind` exactly when the grade is `error` (the kind of
    its ending: `timeout` for the time limit), keeps the agent's facts, and sets
    `evaluator_timeout` whenever the time limit ended grading, even under a failed check."""
    o = _ended_by(o, ending)
    runtime = RuntimeResult(agent_duration=agent_duration, agent_timeout=agent_timeout)
    doc = document(o, runtime)
    assert doc.patch_result == decide(o)
    assert doc.runtime_result.evaluator_timeout is isinstance(ending, TimedOut)
    assert (doc.runtime_result.agent_duration, doc.runtime_result.agent_timeout) == (
        agent_duration,
        agent_timeout,
    )
    if doc.patch_result.status != "error":
        assert doc.runtime_result.error_kind is None
    else:
        assert doc.runtime_result.error_kind == kind_of(ending)
        if isinstance(ending, TimedOut):
            assert doc.runtime_result.error_kind == "timeout"


@given(
    outcomes(),
    st.sampled_from([Crashed("disk full", kind="infrastructure"), Signalled("SIGTERM")]),
)
def test_an_escape_after_a_failed_check_is_failed(o: Outcomes, ending: Crashed | Signalled) -> None:
    """Property: when an exception escapes the grading program itself, the outcomes it was
    seen to finish still decide: `not_graded` is the document `document` gives for them."""
    doc = not_graded(ending, RuntimeResult(), o)
    assert doc == document(_ended_by(o, ending), RuntimeResult())
    assert (doc.patch_result.status == "failed") == _failed(o)


@given(outcomes())
def test_first_failure_names_the_error(o: Outcomes) -> None:
    """Property: whatever the ending, error_msg and error_log come from the first failure."""
    result = decide(o)
    first = next((run for run in o.runs if not run.passed), None)
    if first is None:
        return
    expected = {
        "build": "Build failed",
        "poc": f"PoC failed: {first.poc}",
        "function_test": "Function test failed",
        "intent_test": "Intent test failed",
    }[first.check]
    assert result.error_msg == expected
    assert result.error_log == first.log


@given(outcomes())
def test_checks_the_task_lacks_stay_null(o: Outcomes) -> None:
    """Property: a field is null whenever its check is not in the task or did not finish;
    the PoC check is finished once every PoC ran or one failed."""
    result = decide(o)
    ran = {run.check for run in o.runs}
    assert (result.build_success is None) == ("build" not in ran)
    assert (result.func_test_success is None) == ("function_test" not in ran)
    assert (result.intent_test_success is None) == ("intent_test" not in ran)
    poc_runs = [run for run in o.runs if run.check == "poc"]
    pocs_finished = "poc" in o.has and (
        len(poc_runs) == len(o.pocs) or any(not run.passed for run in poc_runs)
    )
    assert (result.pov_total is None) == (not pocs_finished)


@given(outcomes(), st.randoms())
def test_poc_order_does_not_change_counts(o: Outcomes, rnd: random.Random) -> None:
    """Property: shuffling the PoC runs changes neither pov_passed nor pov_total."""
    pocs = [run for run in o.runs if run.check == "poc"]
    rest = [run for run in o.runs if run.check != "poc"]
    rnd.shuffle(pocs)
    shuffled = Outcomes(o.has, o.pocs, tuple(rest[:1] + pocs + rest[1:]), o.apply_failed, o.ending)
    a, b = decide(o), decide(shuffled)
    assert (a.pov_passed, a.pov_total, a.status) == (b.pov_passed, b.pov_total, b.status)


@given(outcomes())
def test_pov_counts_are_consistent(o: Outcomes) -> None:
    """Property: 0 ≤ pov_passed ≤ pov_total = number of PoCs, both null or both set."""
    result = decide(o)
    assert (result.pov_passed is None) == (result.pov_total is None)
    if result.pov_total is not None:
        assert result.pov_total == len(o.pocs)
        assert 0 <= (result.pov_passed or 0) <= result.pov_total


@given(outcomes(), st.integers(1, 9999))
def test_timeout_keeps_finished_checks(o: Outcomes, seconds: int) -> None:
    """Property: a timeout keeps the same check fields as if grading had stopped there; it is
    `error` with "Timeout (Ns)" unless a finished check failed."""
    stopped_there = _or_none(o, Finished())  # none when a PoC never ran: not a finished grading
    timed = decide(Outcomes(o.has, o.pocs, o.runs, None, TimedOut(seconds)))
    if not _failed(o):
        assert timed.status == "error"
        assert timed.error_msg == f"Timeout ({seconds}s)"
    fields = (
        "build_success",
        "pov_passed",
        "pov_total",
        "func_test_success",
        "intent_test_success",
    )
    if stopped_there is not None:
        finished = decide(stopped_there)
        assert all(getattr(timed, f) == getattr(finished, f) for f in fields)


@given(outcomes(), st.text(min_size=1, max_size=30))
def test_exception_is_error_with_its_message(o: Outcomes, message: str) -> None:
    """Property: an exception after no failed check is `error` with "Exception: <message>"."""
    result = decide(Outcomes(o.has, o.pocs, o.runs, None, Crashed(message)))
    if not _failed(o):
        assert (result.status, result.error_msg) == ("error", f"Exception: {message}")


def test_a_poc_that_triggered_decides_though_a_later_poc_never_ended() -> None:
    """The first of two PoCs triggered, the second hung until the time limit: `failed`, the
    first PoC named, the PoC not finished counted as not passed."""
    o = Outcomes(
        frozenset({"poc", "intent_test"}),
        ("/t/a", "/t/b"),
        (CheckOutcome("poc", False, "crash", "/t/a"),),
        ending=TimedOut(60),
    )
    doc = document(o, RuntimeResult())
    assert (doc.patch_result.status, doc.patch_result.error_msg) == ("failed", "PoC failed: /t/a")
    assert (doc.patch_result.pov_passed, doc.patch_result.pov_total) == (0, 2)
    assert (doc.runtime_result.evaluator_timeout, doc.runtime_result.error_kind) == (True, None)


@given(st.text(max_size=30), st.none() | st.text(max_size=300))
def test_an_escaped_exception_is_an_error_with_its_message_and_detail(
    message: str, detail: str | None
) -> None:
    """Property: an exception that escapes the grading program gives the document the
    evaluator has always written: `error`, "Exception: <message>" (even an empty one), the
    traceback as error_log, no check field."""
    assert escaped(Crashed(message, detail)) == PatchResult(
        status="error", error_msg=f"Exception: {message}", error_log=detail
    )


@given(st.sampled_from(["SIGINT", "SIGTERM"]))
def test_an_escaped_interrupt_is_an_error_without_log(signal: str) -> None:
    """Property: a signal that escapes the grading program gives `error`, "Interrupted
    (<signal>)", nothing else."""
    assert escaped(Signalled(signal)) == PatchResult(
        status="error", error_msg=f"Interrupted ({signal})"
    )


@given(outcomes(), st.text(max_size=50))
def test_apply_failure_fails_every_check_the_task_has(o: Outcomes, log: str) -> None:
    """Property: a patch that does not apply is `failed`, "Patch apply failed", git's message as
    error_log, the task's build/functional/intent fields false, PoC fields null."""
    result = decide(Outcomes(o.has, o.pocs, (), ApplyFailed(log), Finished()))
    assert (result.status, result.error_msg, result.error_log) == (
        "failed",
        "Patch apply failed",
        log,
    )
    assert result.build_success is (False if "build" in o.has else None)
    assert result.func_test_success is (False if "function_test" in o.has else None)
    assert result.intent_test_success is (False if "intent_test" in o.has else None)
    assert result.pov_passed is None
    assert result.pov_total is None


@given(st.text(max_size=300), st.integers(1, 200))
def test_bound_log_keeps_the_tail(text: str, limit: int) -> None:
    """Property: a bounded log keeps the last `limit` bytes and says how much was cut."""
    bounded = bound_log(text, limit)
    size = len(text.encode("utf-8", "surrogateescape"))
    if size <= limit:
        assert bounded == text
    else:
        head, tail = bounded.split("\n", 1)
        assert head == f"[{size - limit} bytes cut]"
        assert text.endswith(tail)
        assert len(tail.encode("utf-8", "surrogateescape")) <= limit


def test_failed_poc_names_the_first_failing_poc() -> None:
    """A worked example: the second PoC fails first."""
    o = Outcomes(
        frozenset({"poc"}),
        ("/t/a", "/t/b", "/t/c"),
        (
            CheckOutcome("poc", True, "", "/t/a"),
            CheckOutcome("poc", False, "boom", "/t/b"),
            CheckOutcome("poc", False, "bang", "/t/c"),
        ),
    )
    result = decide(o)
    assert (result.pov_passed, result.pov_total, result.error_msg, result.error_log) == (
        1,
        3,
        "PoC failed: /t/b",
        "boom",
    )
