"""The report's Errors column: `error` runs counted by kind beside every share, in every
format, never in a share (SPEC §3, §11).

A patch whose grading hangs or breaks with no check failed is an `error`, left out of the
shares: the report must show it, by kind, with the runs a batch resume would grade again,
rather than let it vanish. Runs are read from their `summary.json` bytes as the command reads
them, an older one without `error_kind` by what its `error_msg` says.
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from interpreters.report.html import render_html
from interpreters.report.render import render_csv, render_json
from interpreters.report.table import render_table
from ssegrade.report import Report, RunFolder, RunRecord, aggregate, parse_run

MODEL, AGENT = "openai/gpt-5", "codex"


def _run(task: str, run_id: str, patch: dict[str, Any], kind: str | None = None) -> RunRecord:
    runtime: dict[str, Any] = {"agent_duration": 60, "evaluator_timeout": False}
    if kind is not None:
        runtime["error_kind"] = kind
    doc = {
        "task": {"id": task, "scripts": {"build": "b.sh"}},
        "config": {"model": MODEL, "agent": AGENT, "reference_run": False},
        "patch_result": patch,
        "runtime_result": runtime,
        "spend": 0.5,
        "run_id": run_id,
    }
    folder = RunFolder(task, MODEL, AGENT, run_id)
    return parse_run(json.dumps(doc).encode(), folder).unwrap()


def _runs() -> list[RunRecord]:
    """Two graded runs, and four errors: two timeouts (one said by an older result's message
    only), one host fault, one fault of ssegrade."""
    return [
        _run("t1", "r1", {"status": "passed", "build_success": True}),
        _run("t2", "r1", {"status": "failed", "build_success": False}),
        _run("t3", "r1", {"status": "error", "error_msg": "Timeout (3600s)"}, "timeout"),
        _run("t4", "r1", {"status": "error", "error_msg": "Timeout (60s)"}),
        _run("t5", "r1", {"status": "error", "error_msg": "Exception: full"}, "infrastructure"),
        _run("t6", "r1", {"status": "error", "error_msg": "Exception: bug"}, "grader"),
    ]


def _report() -> Report:
    return aggregate(_runs())


def test_error_runs_are_counted_by_kind_beside_unchanged_shares() -> None:
    """The row counts its four error runs by kind, two of which a resume grades again; the
    shares are over the two graded runs alone; each run left out has its kind."""
    report = _report()
    (row,) = report.rows
    assert (row.runs, row.passed.passed, row.passed.of) == (2, 1, 2)
    assert row.errors.model_dump() == {
        "total": 4,
        "timeout": 2,
        "task": 0,
        "infrastructure": 1,
        "grader": 1,
        "again": 2,
    }
    kinds = {ex.task: ex.error_kind for ex in report.excluded}
    assert kinds == {"t3": "timeout", "t4": "timeout", "t5": "infrastructure", "t6": "grader"}


def test_errors_as_failures_still_counts_them_in_their_column() -> None:
    """Counted as failed runs, the errors are in the shares, and still in their column."""
    (row,) = aggregate(_runs(), errors_as_failures=True).rows
    assert (row.passed.passed, row.passed.of, row.errors.total) == (1, 6, 4)


def test_every_format_shows_the_errors() -> None:
    """JSON `rows[].errors`, the CSV's `errors_*` columns, the page's Errors column and the
    text's, within 80 columns (at 40, in the row's label line)."""
    report = _report()
    doc = json.loads(render_json(report))
    assert doc["rows"][0]["errors"]["timeout"] == 2
    assert {ex["error_kind"] for ex in doc["excluded"]} == {"timeout", "infrastructure", "grader"}
    (line,) = csv.DictReader(io.StringIO(render_csv(report)))
    assert (line["errors_total"], line["errors_infrastructure"], line["errors_again"]) == (
        "4",
        "1",
        "2",
    )
    page = render_html(report)
    assert "<th>Errors</th>" in page
    assert "4: 2 timeout, 1 infra, 1 grader; 2 again" in page
    text = render_table(report, 80)
    assert max(len(line) for line in text.splitlines()) <= 80
    head = next(line for line in text.splitlines() if "Passed" in line)
    assert re.split(r"\s+", head.strip())[-1] == "Errors"
    assert "2 timeout" in text
    narrow = render_table(report, 40)
    assert max(len(line) for line in narrow.splitlines()) <= 40
    assert "errors 4: 2 timeout" in " ".join(narrow.split())


def test_a_report_without_errors_has_no_errors_column_in_its_text() -> None:
    """As the patch guard's columns, the text shows the column once a row has an error."""
    report = aggregate(_runs()[:2])
    head = next(line for line in render_table(report, 80).splitlines() if "Passed" in line)
    assert "Errors" not in head
    assert json.loads(render_json(report))["rows"][0]["errors"]["total"] == 0
