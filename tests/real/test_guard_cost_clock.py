"""The guard's cost, split from the effects the local interpreter answers (`GuardClock`): each
part is the time of its own effects, the analysis the program's time between the last effect
and `guard.json`, the total from `result.json` written; nothing before it counts (the archive,
`result.json` itself, which the benchmark's old interval held), and its log reads back."""

from __future__ import annotations

from collections.abc import Iterator

from interpreters.real.guardcost import GuardClock, GuardCost, read_cost
from ssegrade.internal.effects import (
    Archive,
    CheckFinished,
    CheckRecord,
    ReadRepoFiles,
    ReadTaskFile,
    RunScript,
    ScanObjects,
    Workspace,
    WriteResult,
)
from ssegrade.internal.result import EvaluationResult

_RESULT = EvaluationResult.model_validate(
    {"patch_result": {"status": "passed"}, "runtime_result": {}}
)


def _ticks(times: list[float]) -> Iterator[float]:
    yield from times


def _clock(times: list[float], cpu: list[float] | None = None) -> GuardClock:
    ticks, spent = _ticks(times), _ticks(cpu or [])
    return GuardClock(clock=lambda: next(ticks), cpu=lambda: next(spent))


def _answer(clock: GuardClock, effect: object) -> None:
    clock.ended(effect, clock.started())  # type: ignore[arg-type]


def test_each_part_is_the_time_of_its_own_effects() -> None:
    where = Workspace("/w")
    record = CheckRecord("guard", "/t/p", 0, 0.1, False, None, passed=True)
    ticks = [0.0, 1.0, 1.0, 5.0, 5.0, 5.2, 5.2, 5.25, 5.3, 5.3, 5.31, 5.32, 5.33, 5.33, 5.4]
    clock = _clock(ticks, [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.508])  # the thread's, at each end
    _answer(clock, Archive())  # before result.json: not the guard's
    _answer(clock, WriteResult(_RESULT))  # the guard's step: 5.0
    _answer(clock, RunScript("/t/run.sh", ("/t/p",), where, "guard-poc-1"))  # 0.2
    _answer(clock, CheckFinished(record))  # its record: 0.05
    _answer(clock, ReadTaskFile("/t/p", 10))  # 0
    _answer(clock, ScanObjects(where, ()))  # 0.01
    _answer(clock, ReadRepoFiles(("src/a.c",), 10))  # ends at 5.33; the rules until 5.4
    cost = clock.cost()  # as WriteGuard arrives
    assert cost is not None
    assert (cost.reruns, cost.reading, cost.objects) == (0.25, 0.0, 0.01), cost
    assert (cost.analysis, cost.total, cost.analysis_cpu) == (0.07, 0.4, 0.008), cost


def test_a_guard_before_result_json_is_not_timed() -> None:
    clock = _clock([0.0, 1.0, 2.0])
    _answer(clock, Archive())
    assert clock.cost() is None


def test_the_log_reads_back_as_the_cost() -> None:
    cost = GuardCost(reruns=0.123, reading=0.001, objects=0.002, analysis=0.004, total=0.131)
    assert read_cost(cost.log_text()) == cost
    assert read_cost(cost.log_text().replace("total", "whole")) is None
