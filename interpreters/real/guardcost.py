"""What the patch guard costs a grading, timed where each part happens, and its log.

Interpreter layer (a clock). The guard's step (`ssegrade._guarding`) runs once `result.json`
is written: the pinned re-runs of the PoCs, then the facts observed, then the rules applied
(pure: no clock of its own), then `guard.json`. `GuardClock` sees every system effect the
local interpreter answers, with its start and end, and splits the time from the end of
`WriteResult` to the arrival of `WriteGuard` into its parts (`GuardCost`): the effects of the
re-runs (staging, the contained runs, their records), the reads of task and repo files, the
object scan, and the analysis, which is the time between the last effect answered and
`WriteGuard`: the program computing, which is the rules alone. The local interpreter writes
it to `logs/NN-guard-cost.log` (`GuardCost.log_text`, read back by `read_cost`). Nothing here
is read by the grade.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from ssegrade import Effect
from ssegrade.internal.effects import (
    CheckFinished,
    ReadRepoFiles,
    ReadTaskFile,
    RunScript,
    ScanObjects,
    StageFiles,
    Unstage,
    WriteResult,
)

__all__ = ["LOG_LABEL", "GuardClock", "GuardCost", "read_cost"]

LOG_LABEL = "guard-cost"
"""The label of the cost's log: `logs/NN-guard-cost.log`."""

_HEADER = "the patch guard's cost, in seconds, each part timed where it ran"
_RERUN = (StageFiles, RunScript, Unstage, CheckFinished)
"""The effects a pinned re-run is made of (`ssegrade.internal.bencher`), and its `guard` record."""


@dataclass(frozen=True, slots=True)
class GuardCost:
    """What the guard's step cost, in seconds: the pinned re-runs whole (staging, the contained
    runs, their records), reading the task's and the grading repo's files, the scan of the
    build's objects, the rules (from the last fact observed to `guard.json`), all of it
    (from `result.json` written to `guard.json`), and the rules' CPU."""

    reruns: float = 0.0
    reading: float = 0.0
    objects: float = 0.0
    analysis: float = 0.0
    total: float = 0.0
    analysis_cpu: float = 0.0
    """The CPU the rules took (the grading's thread), which the machine's load does not
    stretch as it does their wall time."""

    def log_text(self) -> str:
        """The log's text: a header line, then one `part: seconds` line each.

        >>> print(GuardCost(reruns=0.1, total=0.12).log_text(), end="")
        the patch guard's cost, in seconds, each part timed where it ran
        reruns: 0.100
        reading: 0.000
        objects: 0.000
        analysis: 0.000
        total: 0.120
        analysis_cpu: 0.000
        """
        parts = "".join(f"{name}: {value:.3f}\n" for name, value in asdict(self).items())
        return f"{_HEADER}\n{parts}"


def read_cost(text: str) -> GuardCost | None:
    """The cost a log's text holds, or None when it is not such a log.

    >>> read_cost(GuardCost(objects=0.002).log_text())  # doctest: +NORMALIZE_WHITESPACE
    GuardCost(reruns=0.0, reading=0.0, objects=0.002, analysis=0.0, total=0.0,
              analysis_cpu=0.0)
    >>> read_cost("something else")
    """
    lines = text.splitlines()
    if not lines or lines[0] != _HEADER:
        return None
    values: dict[str, float] = {}
    for line in lines[1:]:
        name, _, value = line.partition(": ")
        try:
            values[name] = float(value)
        except ValueError:
            return None
    if set(values) != set(GuardCost.__dataclass_fields__):
        return None
    return GuardCost(**values)


@dataclass(slots=True)
class GuardClock:
    """Times the guard's step of one grading from the effects answered (`started`/`ended`
    around each); `cost` says what it cost when `WriteGuard` arrives."""

    clock: Callable[[], float] = time.monotonic
    cpu: Callable[[], float] = time.thread_time
    """The CPU of the thread that answers the effects, which also runs the program."""
    _began: float | None = None
    """When `result.json` was last written: the guard's step begins then."""
    _last: float | None = None
    """When the last effect answered since then ended."""
    _last_cpu: float = 0.0
    _parts: dict[str, float] = field(default_factory=dict)

    def started(self) -> float:
        """The time an effect's answer begins (give it back to `ended`)."""
        return self.clock()

    def ended(self, effect: Effect[object], started: float) -> None:
        """Count the effect answered since `started` in its part of the guard's time."""
        now = self.clock()
        if isinstance(effect, WriteResult):
            self._began, self._last, self._last_cpu, self._parts = now, now, self.cpu(), {}
            return
        if self._began is None:
            return
        self._last, self._last_cpu = now, self.cpu()
        part = _part(effect)
        if part is not None:
            self._parts[part] = self._parts.get(part, 0.0) + (now - started)

    def cost(self) -> GuardCost | None:
        """What the guard's step cost until now (`WriteGuard` arriving), or None when it did
        not begin after `result.json`."""
        if self._began is None or self._last is None:
            return None
        now = self.clock()
        return GuardCost(
            reruns=_ms(self._parts.get("reruns", 0.0)),
            reading=_ms(self._parts.get("reading", 0.0)),
            objects=_ms(self._parts.get("objects", 0.0)),
            analysis=_ms(now - self._last),
            total=_ms(now - self._began),
            analysis_cpu=_ms(self.cpu() - self._last_cpu),
        )


def _part(effect: Effect[object]) -> str | None:
    if isinstance(effect, ScanObjects):
        return "objects"
    if isinstance(effect, ReadTaskFile | ReadRepoFiles):
        return "reading"
    if isinstance(effect, _RERUN):
        return "reruns"
    return None


def _ms(seconds: float) -> float:
    return round(max(seconds, 0.0), 3)
