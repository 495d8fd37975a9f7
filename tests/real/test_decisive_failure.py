"""A failed check is decisive (SPEC §3), tested as the attack on real gradings.

An agent whose patch fails a check must not gain by making the rest of the grading hang or
crash: a PoC triggers, then the intent check's script sleeps past the grading's time limit,
or the patch's own tests fill the disk of the grading's scratch folder so that the next
check cannot even be copied. Either way the grade is `failed`, the PoC named, and how the
grading ended is in `checks.jsonl` and the notes.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from interpreters.app.setup.graded import graded
from ssegrade import (
    BenchSession,
    EvaluationResult,
    GradeOptions,
    RuntimeResult,
    Task,
    bencher_interpreter,
    grade,
    run,
)
from ssegrade.internal.effects import WriteResult
from ssegrade.internal.program import Seen
from ssegrade.internal.task import Files, Scripts
from ssegrade.testing import FakeWorld, Script, Throwing, matching
from tests.support.realtask import CLI, RealTask, fix_to, make_task

FULL = Task(
    id="demo-1",
    scripts=Scripts(build="scripts/build.sh", run="scripts/run.sh", test="scripts/test.sh"),
    files=Files(poc=("pocs/a.bin",), future_test="tests/future.diff"),
)

ROOT = os.geteuid() == 0

SLEEPS_IN_INTENT = """#!/bin/sh
if [ -f tests/intent.sh ]; then sleep 600; fi
for t in tests/*.sh; do sh "$t" || { echo "$t failed" >&2; exit 1; }; done
"""

RUNS_THE_PROJECT = """#!/bin/sh
. ./lib.sh
grep -q fixed out.txt || { echo "PoC $1 triggered the bug" >&2; exit 1; }
"""
"""A PoC runner that runs the project's own code (`lib.sh`) with the PoC, as a real one
runs the program the patch built."""

FILLS_THE_DISK = """diff --git a/lib.sh b/lib.sh
--- a/lib.sh
+++ b/lib.sh
@@ -1 +1,2 @@
-VALUE=bug
+VALUE=still-bug
+if [ -n "$1" ]; then cat /dev/zero > fill 2>/dev/null; fi
"""
"""The agent's patch: run on a PoC, its code fills its working folder (the build's copy in
the grading's scratch, which every PoC shares) until the disk is full; the PoC triggers."""


def _evaluate(made: RealTask, patch: str, *extra: str, env: dict[str, str] | None = None) -> Any:
    """Grade `patch` with `ssegrade evaluate --patch` (into `made.results` unless `extra`
    names other results): its `result.json`."""
    patch_file = made.root / "agent.patch"
    patch_file.write_text(patch)
    args = ["evaluate", "--task", str(made.task), "--patch", str(patch_file)]
    args += ["--repo", str(made.source)]
    args += [] if "--results" in extra else ["--results", str(made.results)]
    args += extra
    done = subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results = Path(extra[extra.index("--results") + 1]) if "--results" in extra else made.results
    return json.loads((results / "result.json").read_bytes())


def _end(results: Path) -> dict[str, Any]:
    """The one `end` record of `checks.jsonl`."""
    lines = (results / "checks.jsonl").read_text().splitlines()
    (end,) = [r for r in map(json.loads, lines) if r["name"] == "end"]
    return dict(end)


def _poc_failed(made: RealTask) -> str:
    return f"PoC failed: {made.task.resolve() / 'pocs' / 'poc1.bin'}"


def test_a_script_hanging_after_a_triggered_poc_leaves_the_grade_failed(tmp_path: Path) -> None:
    """The PoC triggers; then the intent check's script sleeps past the grading's time
    limit. The grade is `failed` with the PoC as error_msg and its log, the time limit still
    said (`evaluator_timeout`), no error kind; `checks.jsonl` ends with an `end` record and
    the notes say how grading ended."""
    made = make_task(tmp_path / "hang", pocs=1)
    made.script("test.sh", SLEEPS_IN_INTENT)
    result = _evaluate(made, fix_to("still-bug"), "--timeout", "12")
    patch, runtime = result["patch_result"], result["runtime_result"]
    assert (patch["status"], patch["error_msg"]) == ("failed", _poc_failed(made))
    assert "triggered the bug" in patch["error_log"]
    assert (patch["pov_passed"], patch["pov_total"], patch["intent_test_success"]) == (0, 1, None)
    assert (runtime["evaluator_timeout"], runtime["error_kind"]) == (True, None)
    end = _end(made.results)
    assert (end["name"], end["ended"], end["error_kind"]) == ("end", "Timeout (12s)", None)
    notes = (made.results / "logs" / "notes.log").read_text()
    assert "grading ended early: Timeout (12s); the grade is failed: PoC failed" in notes


def test_a_hang_with_no_failed_check_is_a_timeout_error(tmp_path: Path) -> None:
    """The other side of the rule: the same hang after checks that all passed is an `error`
    of kind `timeout`, said the same way."""
    made = make_task(tmp_path / "hang-ok", pocs=1)
    made.script("test.sh", SLEEPS_IN_INTENT)
    result = _evaluate(made, fix_to("fixed"), "--timeout", "12")
    patch, runtime = result["patch_result"], result["runtime_result"]
    assert (patch["status"], patch["error_msg"]) == ("error", "Timeout (12s)")
    assert (patch["pov_passed"], patch["func_test_success"]) == (1, True)
    assert (runtime["evaluator_timeout"], runtime["error_kind"]) == (True, "timeout")
    end = _end(made.results)
    assert (end["name"], end["ended"], end["error_kind"]) == ("end", "Timeout (12s)", "timeout")


@contextlib.contextmanager
def _small_disk(size: str) -> Iterator[Path]:
    """A size-limited tmpfs mounted on a new folder of the system's temporary folder (where
    every account can reach it, as the grading's scratch must be), unmounted after."""
    where = Path(tempfile.mkdtemp(prefix="ssegrade-small-disk-", dir="/tmp"))
    where.chmod(0o755)
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size},mode=1777", "tmpfs", str(where)]
    subprocess.run(mount, check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
        with contextlib.suppress(OSError):
            where.rmdir()


FILLS_IN_ITS_TESTS = """diff --git a/lib.sh b/lib.sh
--- a/lib.sh
+++ b/lib.sh
@@ -1 +1 @@
-VALUE=bug
+VALUE=still-bug
diff --git a/tests/fill.sh b/tests/fill.sh
new file mode 100644
--- /dev/null
+++ b/tests/fill.sh
@@ -0,0 +1 @@
+cat /dev/zero > fill
"""
"""The agent's patch: the PoC still triggers, and its own test fills its working folder
until the disk is full."""


def _grade_on_small_disk(made: RealTask, patch: str) -> tuple[dict[str, Any], list[Any], str]:
    """Grade with the scratch folder and the results folder on one small disk (as in a task
    container, where both share the container's disk): the grade, the records of
    `checks.jsonl` and the notes."""
    with _small_disk("24m") as disk:
        results = disk / "results"
        result = _evaluate(made, patch, "--results", str(results), env={"TMPDIR": str(disk)})
        records = [json.loads(line) for line in (results / "checks.jsonl").read_text().splitlines()]
        return result, records, (results / "logs" / "notes.log").read_text()


@pytest.mark.skipif(not ROOT, reason="mounts a small tmpfs for the grading's scratch")
def test_a_patch_filling_the_disk_after_a_triggered_poc_is_failed(tmp_path: Path) -> None:
    """The PoC triggers; then the patch's own test fills the disk that holds the grading's
    scratch and results folders, so that the grader cannot write what follows. The grade is
    `failed` with the PoC as error_msg and no error kind; the `end` record says the grading
    broke on the full disk."""
    made = make_task(tmp_path / "fill", pocs=1)
    result, records, _ = _grade_on_small_disk(made, FILLS_IN_ITS_TESTS)
    patch, runtime = result["patch_result"], result["runtime_result"]
    assert (patch["status"], patch["error_msg"]) == ("failed", _poc_failed(made))
    assert (patch["pov_passed"], patch["pov_total"]) == (0, 1)
    assert (runtime["evaluator_timeout"], runtime["error_kind"]) == (False, None)
    (end,) = [r for r in records if r["name"] == "end"]
    assert "No space left on device" in end["ended"]


@pytest.mark.skipif(not ROOT, reason="mounts a small tmpfs for the grading's scratch")
def test_a_poc_filling_the_disk_while_it_triggers_is_failed(tmp_path: Path) -> None:
    """The check in flight is the one filling the disk: the patched code, run on the first
    PoC, fills the disk of the scratch and results folders, and the PoC triggers. The
    script ended, so its exit code decides its check even though the grader cannot write its
    log file: `failed`, the first PoC named, its log saying why the log file is missing."""
    made = make_task(tmp_path / "fill-poc", pocs=2)
    made.script("run.sh", RUNS_THE_PROJECT)
    result, records, notes = _grade_on_small_disk(made, FILLS_THE_DISK)
    patch, runtime = result["patch_result"], result["runtime_result"]
    assert (patch["status"], patch["error_msg"]) == ("failed", _poc_failed(made))
    assert (patch["pov_passed"], patch["pov_total"]) == (0, 2)
    assert "cannot write the log" in patch["error_log"]
    assert "the exit code stands" in patch["error_log"]
    assert runtime["error_kind"] is None
    first = next(r for r in records if r["name"] == "poc")
    assert (first["passed"], first["exit_code"], first["log_file"]) == (False, 1, None)
    assert "the outcome of poc-1 stands without it" in notes


HANGS_IN_FUNCTION = """#!/bin/sh
if [ ! -f tests/intent.sh ]; then sleep 600; fi
for t in tests/*.sh; do sh "$t" || { echo "$t failed" >&2; exit 1; }; done
"""


def test_a_hanging_script_is_a_failed_check_and_the_later_checks_still_run(
    tmp_path: Path,
) -> None:
    """By default a script's own limit keeps time for the checks after it: the functional
    test's script sleeps forever, is killed at its limit (a failed check, exit -1) before the
    grading's, and the intent check still runs and passes. The grade is `failed` (Function
    test failed), the time limit of the grading never reached."""
    made = make_task(tmp_path / "hang-func", pocs=1)
    made.script("test.sh", HANGS_IN_FUNCTION)
    result = _evaluate(made, fix_to("fixed"), "--timeout", "40")  # 4 s kept for the intent check
    patch, runtime = result["patch_result"], result["runtime_result"]
    assert (patch["status"], patch["error_msg"]) == ("failed", "Function test failed")
    assert (patch["pov_passed"], patch["func_test_success"], patch["intent_test_success"]) == (
        1,
        False,
        True,
    )
    assert (runtime["evaluator_timeout"], runtime["error_kind"]) == (False, None)
    lines = (made.results / "checks.jsonl").read_text().splitlines()
    (function,) = [r for r in map(json.loads, lines) if r["name"] == "function_test"]
    assert (function["killed"], function["exit_code"]) == (True, -1)


def test_a_result_the_grader_cannot_write_after_a_failed_check_is_failed(tmp_path: Path) -> None:
    """The grading program finished, a PoC had triggered, and writing result.json fails (the
    disk filled up): the exception escapes the program, and the evaluator writes the grade
    itself from the checks it saw finish: `failed` with the PoC, not an `error`."""
    world = FakeWorld(patch=b"diff --git a/x b/x\n", scripts={"poc-1": Script(code=1)})
    full = Throwing(world, {0: OSError(28, "No space left on device")}, matching(WriteResult))
    options = GradeOptions(task=FULL, folder="/task")
    seen = Seen()
    session = BenchSession(task=FULL, folder="/task")

    def grading() -> EvaluationResult:
        return run(grade(options, seen), bencher_interpreter(session, full))

    (tmp_path / "results").mkdir()
    result = graded(tmp_path / "results", RuntimeResult(), grading, seen)
    assert (result.patch_result.status, result.patch_result.error_msg) == (
        "failed",
        "PoC failed: /task/pocs/a.bin",
    )
    assert result.runtime_result.error_kind is None
    written = json.loads((tmp_path / "results" / "result.json").read_bytes())
    assert written["patch_result"]["status"] == "failed"
