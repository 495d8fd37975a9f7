"""The run loop owns the time limit and hands every failure to the program: driven by a
clock the test moves, never by sleeping."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ssegrade import Deadline, Effect, Task, TimeLimitReached, run
from ssegrade.internal.effects import Notify
from ssegrade.internal.task import Files, Scripts
from ssegrade.testing import Clock, FakeWorld, Recording, Script, Timed

FULL = Task(
    id="demo-1",
    scripts=Scripts(build="scripts/build.sh", run="scripts/run.sh", test="scripts/test.sh"),
    files=Files(poc=("pocs/a.bin", "pocs/b.bin"), future_test="tests/future.diff"),
)


def _message(effect: Effect[Any]) -> object:
    assert isinstance(effect, Notify)
    return effect.message


def timed(clock: Clock, costs: dict[str, float]) -> Recording:
    """Notes answered with their message, each taking the seconds `costs` gives it on `clock`;
    the notes seen are recorded."""
    return Recording(Timed(_message, clock, lambda effect: costs.get(str(_message(effect)), 0.0)))


def seen(interpret: Recording) -> list[str]:
    """The messages of the notes `interpret` was asked for, in order."""
    return [effect.message for effect in interpret.of(Notify)]


async def _steps(names: list[str], told: list[str]) -> str:
    """Await a Notify per name; on the time limit, note where and clean up with one more."""
    try:
        for name in names:
            await Notify(name)
    except TimeLimitReached as limit:
        told.append(f"limit {limit.seconds}")
        await Notify("clean-up")
        return "timed out"
    return "done"


def test_the_deadline_counts_down_on_its_clock() -> None:
    clock = Clock(100.0)
    deadline = Deadline.starting(10, clock)
    assert deadline.left() == 10
    clock.now += 9.5
    deadline.check()
    assert deadline.left() == 0.5
    clock.now += 0.5
    assert deadline.left() == 0
    with pytest.raises(TimeLimitReached, match="10s"):
        deadline.check()


@example([4.999999999999999], 5)
@given(
    st.lists(st.floats(0, 5), min_size=1, max_size=8),
    st.integers(1, 20),
)
def test_the_limit_is_thrown_once_at_the_first_effect_it_covers(
    costs: list[float], seconds: int
) -> None:
    clock = Clock(100.0)
    names = [f"step-{i}" for i in range(len(costs))]
    interpret = timed(clock, dict(zip(names, costs, strict=True)))
    told: list[str] = []
    deadline = Deadline.starting(seconds, clock)
    ended = run(_steps(names, told), interpret, deadline)
    # When each effect ends, in the clock's own arithmetic (at 100 s, 4.999999999999999 s more
    # is 105.0: the limit is reached though the costs' sum is under it).
    spent, at = [], 100.0
    for cost in costs:
        at += cost
        spent.append(at >= 100.0 + seconds)
    if True not in spent:
        assert (ended, told, seen(interpret)) == ("done", [], names)
        return
    # The effect during which the limit passed was interpreted, its answer not given;
    # nothing after it ran, but the clean-up after the limit did.
    cut = spent.index(True)
    assert ended == "timed out"
    assert told == [f"limit {seconds}"]
    assert seen(interpret) == [*names[: cut + 1], "clean-up"]


def test_a_passed_deadline_interprets_nothing_before_the_program_hears_of_it() -> None:
    clock = Clock(100.0)
    deadline = Deadline.starting(5, clock)
    clock.now += 6
    interpret = timed(clock, {})
    told: list[str] = []
    assert run(_steps(["a", "b"], told), interpret, deadline) == "timed out"
    assert seen(interpret) == ["clean-up"]


def test_an_exception_after_the_deadline_is_the_time_limit() -> None:
    clock = Clock(100.0)
    deadline = Deadline.starting(5, clock)

    def interpret(effect: Effect[Any]) -> object:
        clock.now += 10  # a copy cut short at the limit, which then fails
        raise OSError("interrupted copy")

    told: list[str] = []
    with pytest.raises(OSError, match="interrupted copy"):  # the clean-up fails the same way
        run(_steps(["a"], told), interpret, deadline)
    assert told == ["limit 5"]


def test_an_interrupt_is_not_overruled_by_the_deadline_and_clean_ups_run() -> None:
    clock = Clock(100.0)
    deadline = Deadline.starting(5, clock)
    cleaned: list[str] = []

    async def program() -> None:
        try:
            await Notify("work")
        finally:
            await Notify("clean-up")

    def interpret(effect: Effect[Any]) -> object:
        assert isinstance(effect, Notify)
        if effect.message == "work":
            clock.now += 10
            raise KeyboardInterrupt
        cleaned.append(effect.message)
        return None

    with pytest.raises(KeyboardInterrupt):
        run(program(), interpret, deadline)
    assert cleaned == ["clean-up"]


def test_the_observer_sees_what_the_program_saw() -> None:
    clock = Clock(100.0)
    deadline = Deadline.starting(5, clock)
    seen: list[tuple[str, object, str | None]] = []

    def observe(effect: Effect[Any], answer: object, error: BaseException | None) -> None:
        assert isinstance(effect, Notify)
        seen.append((effect.message, answer, None if error is None else type(error).__name__))

    told: list[str] = []
    run(_steps(["a", "b", "c"], told), timed(clock, {"b": 6}), deadline, observe)
    assert seen == [
        ("a", "a", None),
        ("b", None, "TimeLimitReached"),
        ("clean-up", "clean-up", None),
    ]


def test_a_script_killed_at_the_deadline_times_the_grading_out() -> None:
    world = FakeWorld(patch=b"diff\n", timeout=60, scripts={"poc-2": Script(time_limit=True)})
    result = world.grade(FULL)
    assert result.patch_result.status == "error"
    assert result.patch_result.error_msg == "Timeout (60s)"
    # poc-2 unrecorded; how grading ended is the last record
    assert [c.name for c in world.checks] == ["prepare", "build", "poc", "end"]
    assert (world.checks[-1].ended, world.checks[-1].error_kind) == ("Timeout (60s)", "timeout")
    assert world.result == result  # written after the limit
