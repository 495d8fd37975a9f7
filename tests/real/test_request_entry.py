"""One grading entry: a `Request` in, a `Graded` record out, and callers that take what a
grading did from the record, never from the files in its run folder."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from interpreters.app.grading import grade
from interpreters.batch import run_batch
from interpreters.batch.transit import grade_on_node
from interpreters.batch.work import Done, Work
from interpreters.real.runner.options import ScriptOptions
from ssegrade import RuntimeResult
from ssegrade.internal.effects import CheckRecord
from ssegrade.internal.guard_document import GuardReport
from ssegrade.internal.request import Graded, Limits, Request
from tests.support.batchkit import Quiet, saying, verdict_grade
from tests.support.realtask import FIX, make_task

RECORD = TypeAdapter(CheckRecord)


def _records(results: Path) -> list[CheckRecord]:
    lines = (results / "checks.jsonl").read_bytes().splitlines()
    return [RECORD.validate_json(line) for line in lines if b'"name":"guard"' not in line]


@pytest.mark.slow
def test_graded_holds_what_the_grading_wrote(tmp_path: Path) -> None:
    """A real grading: the record answers the document, each check record, the notes and
    the guard's report the run folder holds."""
    made = make_task(tmp_path / "t")
    results = tmp_path / "results"
    request = Request(made.task, results, ScriptOptions(), patch=FIX.encode(), repo=made.source)
    graded = grade(request)
    assert graded.document.to_json() == (results / "result.json").read_bytes()
    assert graded.document.patch_result.status == "passed"
    assert list(graded.checks) == _records(results)
    assert [c.name for c in graded.checks] == [
        "prepare",
        "build",
        "poc",
        "poc",
        "function_test",
        "intent_test",
    ]
    assert graded.containment == next(c.containment for c in graded.checks if c.name == "build")
    assert graded.guard == GuardReport.model_validate_json((results / "guard.json").read_bytes())
    notes = (results / "logs" / "notes.log").read_text().splitlines()
    assert list(graded.notes) == notes


@pytest.mark.slow
def test_the_script_time_limit_reaches_the_scripts_in_one_hand_off(tmp_path: Path) -> None:
    """The request's script time limit is the one a hanging build is killed at: a failed
    check (SPEC §3), the later checks still run within the grading's own limit."""
    made = make_task(tmp_path / "t", pocs=1)
    made.script("build.sh", "#!/bin/sh\nsleep 30\n")
    request = Request(
        made.task,
        tmp_path / "results",
        ScriptOptions(),
        patch=b"",
        repo=made.source,
        limits=Limits(timeout=120, script_timeout=1),
    )
    graded = grade(request)
    build = next(c for c in graded.checks if c.name == "build")
    assert (build.killed, build.passed) == (True, False)
    assert build.seconds < 20
    assert graded.document.patch_result.error_msg == "Build failed"


def _forging(request: Request[Any]) -> Graded:
    """A grading whose run folder says more than the grading did: a `checks.jsonl` whose
    scripts ran in `full` containment and a `guard.json` that flags the patch, while the
    grading's own record says its scripts ran `weak` and the guard wrote no report."""
    graded = verdict_grade(request)
    results = Path(request.results)
    forged = CheckRecord("build", None, 0, 1.0, False, None, True, containment="full")
    line = json.dumps(RECORD.dump_python(forged, mode="json"))
    (results / "checks.jsonl").write_text(line + "\n")
    flags = [{"kind": "tests", "paths": ["tests/x.sh"], "why": "the patch touches tests"}]
    guard = {"version": 1, "checked": True, "flags": flags, "observed": None}
    (results / "guard.json").write_text(json.dumps(guard))
    weak = replace(forged, containment="weak")
    return replace(graded, checks=(weak,))


def test_a_batch_summary_says_what_the_grading_answered_not_what_its_folder_holds(
    tmp_path: Path,
) -> None:
    """The attack: files in a run folder that disagree with the grading that wrote it (a
    node's transit, a grading function, a leftover) must not reach the summary: the
    containment is the weakest the grading's records name, the guard the one it answered."""
    made = make_task(tmp_path / "t")
    (tmp_path / "fixed.patch").write_text(saying("fixed"))
    jobs = tmp_path / "jobs.jsonl"
    job = {"task": "t/task", "patch": "fixed.patch", "repo": "t/source", "run_id": "r"}
    jobs.write_text(json.dumps(job) + "\n")
    assert made.task.is_dir()
    report = run_batch(jobs, tmp_path / "out", workers=1, grade=_forging, reporter=Quiet())
    assert report.exit_code == 0
    summary = json.loads((tmp_path / "out/shell-001/unknown/unknown/r/summary.json").read_bytes())
    assert summary["containment"] == "weak"
    assert "guard" not in summary


def _node_grade(request: Request[Any]) -> Graded:
    """A grading on a node: its log and its record name the node's own run folder."""
    results = Path(request.results)
    (results / "logs").mkdir(exist_ok=True)
    (results / "logs" / "03-build.log").write_bytes(b"built\n")
    record = CheckRecord("build", None, 0, 1.0, False, str(results / "logs" / "03-build.log"), True)
    return replace(verdict_grade(request), checks=(record,))


def test_a_ray_nodes_record_names_the_logs_where_the_driver_keeps_them(tmp_path: Path) -> None:
    """The record a node sends back names each log by the driver's path, as its
    `checks.jsonl` does: verify shows a failing check's log from there (the node's folder is
    gone once the stream ends)."""
    made = make_task(tmp_path / "t")
    driver_run = tmp_path / "results" / "shell-001" / "r"
    work = Work(1, str(made.task), b"", str(made.source), str(driver_run), RuntimeResult())
    items = list(grade_on_node(_node_grade, work, "0123456789abcdef"))
    done = items[-1]
    assert isinstance(done, Done)
    assert [c.log_file for c in done.checks] == [f"{driver_run}/logs/03-build.log"]
