"""Hypothesis strategies shared by the property tests."""

from __future__ import annotations

from hypothesis import strategies as st

from ssegrade import Check, Task
from ssegrade.task import Files, Scripts
from ssegrade.verdict import CheckOutcome, Crashed, Ending, Finished, Outcomes, TimedOut

CHECKS: tuple[Check, ...] = ("build", "poc", "function_test", "intent_test")


@st.composite
def tasks(draw: st.DrawFn) -> Task:
    """Any task config: each script present or not, zero to four PoCs, hidden tests or not."""
    build = draw(st.booleans())
    runner = draw(st.booleans())
    test = draw(st.booleans())
    pocs = draw(st.lists(st.sampled_from(["a.bin", "b.bin", "c.py", "d"]), max_size=4, unique=True))
    future = draw(st.booleans())
    return Task(
        id="t1",
        scripts=Scripts(
            build="build.sh" if build else None,
            run="run.sh" if runner else None,
            test="test.sh" if test else None,
        ),
        files=Files(poc=tuple(f"pocs/{p}" for p in pocs), future_test="f.diff" if future else None),
    )


endings: st.SearchStrategy[Ending] = st.one_of(
    st.just(Finished()),
    st.builds(TimedOut, st.integers(1, 10_000)),
    st.builds(Crashed, st.text(min_size=1, max_size=20), st.none() | st.text(max_size=20)),
)


@st.composite
def outcomes(draw: st.DrawFn) -> Outcomes:
    """Outcomes the grading program can produce: checks in pipeline order, nothing after a
    failed build, PoCs in config order, possibly cut short by an ending."""
    has = frozenset(draw(st.sets(st.sampled_from(CHECKS))))
    pocs = tuple(f"/t/pocs/{i}" for i in range(draw(st.integers(1, 4))) if "poc" in has) or ()
    if "poc" not in has:
        pocs = ()
    runs: list[CheckOutcome] = []
    if "build" in has:
        runs.append(CheckOutcome("build", draw(st.booleans()), draw(st.text(max_size=10))))
    if not runs or runs[0].passed:
        runs += [CheckOutcome("poc", draw(st.booleans()), "poc log", poc) for poc in pocs]
        for check in ("function_test", "intent_test"):
            if check in has:
                runs.append(CheckOutcome(check, draw(st.booleans()), f"{check} log"))
    ending = draw(endings)
    if not isinstance(ending, Finished):
        runs = runs[: draw(st.integers(0, len(runs)))]
    return Outcomes(has=has, pocs=pocs, runs=tuple(runs), ending=ending)
