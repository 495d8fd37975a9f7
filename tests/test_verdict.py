"""Properties of the verdict rule `decide()` (SPEC §3)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from ssegrade import PatchResult, decide
from ssegrade.testing.strategies import outcomes
from ssegrade.verdict import (
    ApplyFailed,
    CheckOutcome,
    Crashed,
    Finished,
    Interrupted,
    Outcomes,
    TimedOut,
    bound_log,
    escaped,
)


@given(outcomes())
def test_any_failed_check_fails(o: Outcomes) -> None:
    """Property: a finished grading with a failed check is `failed`, else `passed` if a check
    ran, else `error` with "No check ran"."""
    result = decide(o)
    if not isinstance(o.ending, Finished):
        assert result.status == "error"
    elif not o.runs:
        assert (result.status, result.error_msg) == ("error", "No check ran")
    elif any(not run.passed for run in o.runs):
        assert result.status == "failed"
    else:
        assert result.status == "passed"
        assert result.error_msg is None


@given(outcomes())
def test_first_failure_names_the_error(o: Outcomes) -> None:
    """Property: on a finished grading, error_msg and error_log come from the first failure."""
    result = decide(o)
    first = next((run for run in o.runs if not run.passed), None)
    if not isinstance(o.ending, Finished) or first is None:
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
    """Property: a field is null whenever its check is not in the task or did not finish."""
    result = decide(o)
    ran = {run.check for run in o.runs}
    assert (result.build_success is None) == ("build" not in ran)
    assert (result.func_test_success is None) == ("function_test" not in ran)
    assert (result.intent_test_success is None) == ("intent_test" not in ran)
    pocs_finished = sum(run.check == "poc" for run in o.runs) == len(o.pocs) and "poc" in o.has
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
def test_timeout_is_error_and_keeps_finished_checks(o: Outcomes, seconds: int) -> None:
    """Property: a timeout is `error` with "Timeout (Ns)" and the same check fields as if
    grading had stopped there."""
    finished = decide(Outcomes(o.has, o.pocs, o.runs, None, Finished()))
    timed = decide(Outcomes(o.has, o.pocs, o.runs, None, TimedOut(seconds)))
    assert timed.status == "error"
    assert timed.error_msg == f"Timeout ({seconds}s)"
    fields = (
        "build_success",
        "pov_passed",
        "pov_total",
        "func_test_success",
        "intent_test_success",
    )
    assert all(getattr(timed, f) == getattr(finished, f) for f in fields)


@given(outcomes(), st.text(min_size=1, max_size=30))
def test_exception_is_error_with_its_message(o: Outcomes, message: str) -> None:
    """Property: an exception is `error` with "Exception: <message>"."""
    result = decide(Outcomes(o.has, o.pocs, o.runs, None, Crashed(message)))
    assert (result.status, result.error_msg) == ("error", f"Exception: {message}")


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
    assert escaped(Interrupted(signal)) == PatchResult(
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
