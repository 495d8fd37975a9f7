"""The real interpreter's side of the guard's re-run: a `RunScript` with variables set over the
script's environment and a limit of its own, run as the runner in a real copy: the pins reach
the script, its own limit cuts it inside the grading's, and it is not started when less than
its `least` is left of the grading's time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from returns.pipeline import is_successful

from interpreters.real import git
from interpreters.real.local import LocalSystem, Places
from interpreters.real.runner import resolve_runner
from ssegrade import Deadline
from ssegrade.internal.effects import (
    FreshCopy,
    RunScript,
    ScriptResult,
    Staged,
    StageFiles,
    StageItem,
    Unstage,
    Workspace,
)
from tests.support.realtask import RealTask, make_task

pytestmark = pytest.mark.slow

PRINT = '#!/bin/sh\necho "pinned=$ASAN_OPTIONS"\nexec sleep "${1:-0}"\n'


@pytest.fixture
def task(tmp_path: Path) -> RealTask:
    made = make_task(tmp_path)
    made.script("print.sh", PRINT)
    assert is_successful(git.record_baseline(made.source, made.baseline))
    return made


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def system(task: RealTask, tmp_path: Path) -> Iterator[tuple[LocalSystem, _Clock]]:
    clock = _Clock()
    places = Places(
        task=task.task,
        source=task.source,
        baseline=git.load_baseline(task.baseline).unwrap(),
        repo=task.source,
        results=tmp_path / "results",
        scratch=tmp_path / "scratch",
    )
    local = LocalSystem(
        places, resolve_runner(None).unwrap(), deadline=Deadline.starting(600, clock)
    )
    try:
        yield local, clock
    finally:
        local.close()


def _run(local: LocalSystem, task: RealTask, how: dict[str, Any], *args: str) -> ScriptResult:
    copy = local(FreshCopy())
    staged = local(StageFiles((StageItem(str(task.task / "scripts" / "print.sh")),)))
    assert isinstance(copy, Workspace)
    assert isinstance(staged, Staged)
    try:
        result = local(RunScript(staged.paths[0], args, copy, "guard-poc-1", **how))
    finally:
        local(Unstage(staged))
    assert isinstance(result, ScriptResult)
    return result


def test_the_pins_reach_the_script_over_the_rest(
    system: tuple[LocalSystem, _Clock], task: RealTask
) -> None:
    local, _ = system
    pinned = (("ASAN_OPTIONS", "exitcode=1:log_path=stderr"),)
    result = _run(local, task, {"env": pinned, "limit": 30.0, "least": 1.0})
    assert result.code == 0, result
    assert "pinned=exitcode=1:log_path=stderr" in result.stdout
    assert result.log_file is not None
    assert "guard-poc-1" in Path(result.log_file).name


def test_its_own_limit_cuts_it(system: tuple[LocalSystem, _Clock], task: RealTask) -> None:
    local, _ = system
    result = _run(local, task, {"limit": 1.0}, "30")
    assert result.killed, result
    assert result.seconds < 20


def test_it_is_not_started_when_too_little_time_is_left(
    system: tuple[LocalSystem, _Clock], task: RealTask
) -> None:
    local, clock = system
    clock.now = 595.0  # 5 s left of the grading's 600
    result = _run(local, task, {"limit": 60.0, "least": 10.0})
    assert result.not_started is not None
    assert "too little time left" in result.not_started
