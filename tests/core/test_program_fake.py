"""The grading and bencher programs against the fake world: realistic scenarios."""

from __future__ import annotations

import pytest
from returns.result import Success

from ssegrade import Task, run
from ssegrade.internal.bencher import bench, prepare
from ssegrade.internal.effects import (
    ApplyDiff,
    CheckPatch,
    Discard,
    FreshCopy,
    RunScript,
    StageFiles,
    Unstage,
)
from ssegrade.internal.task import Files, Scripts
from ssegrade.testing import FakeWorld, Script

FULL = Task(
    id="demo-1",
    scripts=Scripts(build="scripts/build.sh", run="scripts/run.sh", test="scripts/test.sh"),
    files=Files(poc=("pocs/a.bin", "pocs/b.bin"), future_test="tests/future.diff"),
)
PATCH = b"diff --git a/x.c b/x.c\n--- a/x.c\n+++ b/x.c\n@@ -1 +1 @@\n-a\n+b\n"


def test_reference_fix_passes_and_saves_the_patch() -> None:
    world = FakeWorld(patch=PATCH, commits_log=b"abc\nfix\n\n---\n")
    result = world.grade(FULL)
    assert result.patch_result.status == "passed"
    assert (result.patch_result.pov_passed, result.patch_result.pov_total) == (2, 2)
    assert world.artifacts["final.patch"] == PATCH
    assert world.artifacts["commits.log"] == b"abc\nfix\n\n---\n"
    assert world.script_labels() == ["build", "poc-1", "poc-2", "function_test", "intent_test"]
    assert world.leaks() == Success(None)
    assert [c.name for c in world.checks] == [
        "prepare",
        "build",
        "poc",
        "poc",
        "function_test",
        "intent_test",
    ]


def test_empty_patch_grades_the_unmodified_project() -> None:
    world = FakeWorld(patch=b"  \n", scripts={"poc-1": Script(code=1, stderr="overflow")})
    result = world.grade(FULL)
    assert not any(isinstance(e, CheckPatch) for e in world.trace)
    assert world.artifacts["final.patch"] == b"  \n"
    assert result.patch_result.status == "failed"
    assert result.patch_result.error_msg == "PoC failed: /task/pocs/a.bin"
    assert result.patch_result.error_log == "\noverflow"
    assert any("empty" in note for note in world.notes)


def test_apply_failure_runs_no_check() -> None:
    world = FakeWorld(patch=PATCH, apply_error="error: patch failed: x.c:1")
    result = world.grade(FULL)
    assert world.script_labels() == []
    assert not any(isinstance(e, FreshCopy) for e in world.trace)
    assert result.patch_result.model_dump() == {
        "status": "failed",
        "build_success": False,
        "pov_passed": None,
        "pov_total": None,
        "func_test_success": False,
        "intent_test_success": False,
        "error_msg": "Patch apply failed",
        "error_log": "error: patch failed: x.c:1",
    }


def test_build_failure_stops_everything() -> None:
    world = FakeWorld(patch=PATCH, scripts={"build": Script(code=2, stdout="cc: error")})
    result = world.grade(FULL)
    assert world.script_labels() == ["build"]
    assert result.patch_result.error_msg == "Build failed"
    assert result.patch_result.error_log == "cc: error\n"
    assert result.patch_result.pov_total is None


def test_every_poc_runs_and_the_first_failing_one_is_named() -> None:
    world = FakeWorld(
        patch=PATCH,
        scripts={"poc-2": Script(code=1), "function_test": Script(code=1)},
    )
    result = world.grade(FULL)
    patch = result.patch_result
    assert (patch.pov_passed, patch.pov_total, patch.func_test_success) == (1, 2, False)
    assert patch.error_msg == "PoC failed: /task/pocs/b.bin"


def test_pocs_run_in_the_build_copy_and_tests_in_fresh_ones() -> None:
    world = FakeWorld(patch=PATCH)
    world.grade(FULL)
    workspaces = {e.label: e.workspace.path for e in world.trace if isinstance(e, RunScript)}
    assert workspaces["poc-1"] == workspaces["poc-2"] == workspaces["build"]
    assert len({workspaces["build"], workspaces["function_test"], workspaces["intent_test"]}) == 3
    discarded = {e.workspace.path for e in world.trace if isinstance(e, Discard)}
    assert {workspaces["function_test"], workspaces["intent_test"]} <= discarded


def test_intent_test_stages_the_hidden_diff_only_while_applying() -> None:
    world = FakeWorld(patch=PATCH)
    world.grade(FULL)
    start = next(
        i
        for i, e in enumerate(world.trace)
        if isinstance(e, StageFiles) and e.items[0].path.endswith(".diff")
    )
    kinds = [type(e) for e in world.trace[start - 1 : start + 7]]
    assert kinds == [
        FreshCopy,
        StageFiles,
        ApplyDiff,
        Unstage,
        StageFiles,
        RunScript,
        Unstage,
        Discard,
    ]


def test_hidden_diff_that_does_not_apply_is_an_intent_failure() -> None:
    world = FakeWorld(patch=PATCH, intent_apply_error="error: tests/t.py: does not exist")
    result = world.grade(FULL)
    patch = result.patch_result
    assert (patch.status, patch.intent_test_success, patch.error_msg) == (
        "failed",
        False,
        "Intent test failed",
    )
    assert patch.error_log == "\nerror: tests/t.py: does not exist"
    assert world.script_labels() == ["build", "poc-1", "poc-2", "function_test"]


def test_time_limit_keeps_the_finished_checks() -> None:
    world = FakeWorld(patch=PATCH, timeout=90, scripts={"poc-2": Script(time_limit=True)})
    result = world.grade(FULL)
    assert result.patch_result.model_dump() == {
        "status": "error",
        "build_success": True,
        "pov_passed": None,
        "pov_total": None,
        "func_test_success": None,
        "intent_test_success": None,
        "error_msg": "Timeout (90s)",
        "error_log": None,
    }
    assert result.runtime_result.evaluator_timeout is True
    assert "result.json" in world.artifacts
    assert world.leaks() == Success(None)


def test_per_script_kill_is_a_failed_check_and_grading_goes_on() -> None:
    world = FakeWorld(patch=PATCH, scripts={"function_test": Script(killed=True)})
    result = world.grade(FULL)
    assert result.patch_result.func_test_success is False
    assert result.patch_result.intent_test_success is True
    assert world.checks[4].killed is True


def test_exception_keeps_finished_checks_and_still_writes() -> None:
    world = FakeWorld(patch=PATCH, crash_on="function_test")
    result = world.grade(FULL)
    patch = result.patch_result
    assert (patch.status, patch.build_success, patch.pov_passed, patch.func_test_success) == (
        "error",
        True,
        2,
        None,
    )
    assert patch.error_msg == "Exception: the interpreter broke during function_test"
    assert patch.error_log is not None
    assert "RuntimeError" in patch.error_log


@pytest.mark.parametrize(
    ("world", "message"),
    [
        (
            FakeWorld(patch=PATCH, proof_differs=True),
            "the captured patch does not reproduce the source tree",
        ),
        (FakeWorld(capture_error="not a git tree"), "not a git tree"),
    ],
)
def test_capture_problems_are_errors(world: FakeWorld, message: str) -> None:
    result = world.grade(FULL)
    assert (result.patch_result.status, result.patch_result.error_msg) == (
        "error",
        f"Exception: {message}",
    )
    assert world.script_labels() == []


def test_task_without_checks_is_no_check_ran() -> None:
    world = FakeWorld(patch=PATCH)
    result = world.grade(Task(id="bare"))
    assert (result.patch_result.status, result.patch_result.error_msg) == ("error", "No check ran")


def test_pocs_without_build_script_run_in_a_fresh_copy() -> None:
    task = Task(id="t", scripts=Scripts(run="run.sh"), files=Files(poc=("p1", "p2")))
    world = FakeWorld(patch=PATCH)
    result = world.grade(task)
    assert result.patch_result.status == "passed"
    copies = [e for e in world.trace if isinstance(e, FreshCopy)]
    assert len(copies) == 1


def test_runtime_facts_are_written() -> None:
    from ssegrade import RuntimeResult

    world = FakeWorld(patch=PATCH)
    result = world.grade(
        FULL, runtime=RuntimeResult(agent_duration=42, agent_timeout=True, agent_exit_code=3)
    )
    assert result.runtime_result.model_dump() == {
        "agent_duration": 42,
        "agent_timeout": True,
        "evaluator_timeout": False,
        "agent_exit_code": 3,
        "error_kind": None,
    }


def test_run_poc_before_build_is_refused() -> None:
    world = FakeWorld()
    session = world.session(FULL)
    refused = run(bench(session, "run_poc", "pocs/a.bin"), world)
    assert refused.code == -1
    assert "build" in refused.stderr
    run(bench(session, "build"), world)
    assert run(bench(session, "run_poc", "/task/pocs/a.bin"), world).code == 0
    unknown = run(bench(session, "run_poc", "../etc/passwd"), world)
    assert unknown.code == -1
    assert world.script_labels() == ["build", "poc-1"]


def test_second_prepare_does_not_apply_twice() -> None:
    world = FakeWorld(patch=PATCH)
    session = world.session(FULL)
    first = run(prepare(session), world)
    second = run(prepare(session), world)
    assert first == second
    assert world.applied == 1


def test_a_second_prepare_writes_again_what_the_first_saved() -> None:
    world = FakeWorld(patch=PATCH)
    session = world.session(FULL)
    run(prepare(session), world)
    saved = dict(world.artifacts)
    assert {"final.patch", "commits.log", "logs/capture.log"} <= set(saved)
    world.artifacts.clear()  # a forced grading cleared the results folder
    run(prepare(session), world)
    assert world.artifacts == saved
    assert world.applied == 1


def test_a_gitignore_change_is_noted() -> None:
    patch = PATCH + b"diff --git a/.gitignore b/.gitignore\n--- a/.gitignore\n+++ b/.gitignore\n"
    world = FakeWorld(patch=patch)
    world.grade(FULL)
    assert any(".gitignore" in note for note in world.notes)
    plain = FakeWorld(patch=PATCH)
    plain.grade(FULL)
    assert not any(".gitignore" in note for note in plain.notes)
