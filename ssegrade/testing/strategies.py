"""Hypothesis strategies for the core's values, and `Drawn`, an interpreter whose answers
hypothesis draws.

Pure core, part of the testing kit; the one module of it that imports hypothesis (install
`ssegrade[testing]`). `tasks()` draws task configs, `outcomes()` what the grading program can
observe, `worlds()` fake worlds in any state, `script_endings` how a fake script ends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from ssegrade.internal.effects import Effect
from ssegrade.internal.task import Check, Files, Scripts, Task
from ssegrade.internal.verdict import CheckOutcome, Crashed, Ending, Finished, Outcomes, TimedOut
from ssegrade.testing._fake import FakeWorld, Script

__all__ = [
    "CHECKS",
    "LABELS",
    "Drawn",
    "endings",
    "outcomes",
    "script_endings",
    "tasks",
    "worlds",
]

CHECKS: tuple[Check, ...] = ("build", "poc", "function_test", "intent_test")
"""Every check, in grading order."""

LABELS = ("build", "poc-1", "poc-2", "poc-3", "poc-4", "function_test", "intent_test")
"""The run labels of the scripts of a grading with up to four PoCs."""


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
"""How a grading ends: finished, at its time limit, or broken by an exception."""


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


script_endings: st.SearchStrategy[Script] = st.builds(
    Script,
    code=st.integers(-1, 3),
    stdout=st.text(max_size=8),
    stderr=st.text(max_size=8),
    seconds=st.floats(0, 1e6, allow_nan=False),
    killed=st.booleans(),
    time_limit=st.booleans(),
)
"""How a fake script ends: any exit code and output, killed or not, at the time limit or not."""

_maybe_text = st.none() | st.text(min_size=1, max_size=12)


@st.composite
def worlds(draw: st.DrawFn, *, crashes: bool = False) -> FakeWorld:
    """A fake world in any state: capture, apply, intent and archive failures, any script
    ending, a time limit, and (with `crashes`) an interpreter that breaks."""
    return FakeWorld(
        patch=draw(st.binary(max_size=40)),
        commits_log=draw(st.binary(max_size=10)),
        left_out=tuple(draw(st.lists(st.text(min_size=1, max_size=6), max_size=3))),
        capture_error=draw(st.none() | st.none() | st.text(min_size=1, max_size=12)),
        proof_differs=draw(st.booleans()) and draw(st.booleans()),
        apply_error=draw(st.none() | st.none() | st.text(min_size=1, max_size=12)),
        intent_apply_error=draw(_maybe_text),
        archive_error=draw(_maybe_text),
        scripts=draw(st.dictionaries(st.sampled_from(LABELS), script_endings, max_size=4)),
        crash_on=draw(st.none() | st.sampled_from(LABELS)) if crashes else None,
        timeout=draw(st.integers(1, 10_000)),
    )


@dataclass
class Drawn:
    """An interpreter whose answers hypothesis draws: `answers` gives the strategy of an
    effect's answer (None: the effect is answered None); a drawn exception is raised in place
    of an answer. Compose it with `ssegrade.testing.Recording` to see what was drawn."""

    data: st.DataObject
    answers: Callable[[Effect[Any]], st.SearchStrategy[Any] | None]

    def __call__(self, effect: Effect[Any]) -> object:
        """Draw the answer to `effect` (or the exception to raise in its place)."""
        strategy = self.answers(effect)
        if strategy is None:
            return None
        answer = self.data.draw(strategy, label=type(effect).__name__)
        if isinstance(answer, BaseException):
            raise answer
        return answer
