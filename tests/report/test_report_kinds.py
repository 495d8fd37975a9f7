"""Every per-run format of the report names each `error` run's kind (SPEC §3, §11).

An error is neither a pass nor a failure, and its kind decides what to do about it (a
timeout, a broken task, the host, ssegrade): a per-run export that gives only the message
leaves the reader to guess it, and an older result's message says nothing of a host fault.
Run folders are written as SSEBench leaves them and read by the command itself.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from interpreters.report.runs import per_run_rows
from ssegrade.internal.result import error_kind_of
from ssegrade.report import RunRecord, aggregate
from tests.support.reportcommand import invoke
from tests.support.reportruns import MODES, records
from tests.support.runfolders import summary, write_run

MODEL, AGENT = "org/m", "a"

KINDS = {
    # task: (error_msg, runtime_result.error_kind as written, the kind the report gives)
    "t-time": ("Timeout (3600s)", "timeout", "timeout"),
    "t-task": ("Exception: cannot start b.sh: no such file", "task", "task"),
    "t-host": ("Exception: disk full", "infrastructure", "infrastructure"),
    "t-bug": ("Exception: boom", "grader", "grader"),
    "t-old": ("Exception: boom", None, "grader"),  # older result: no kind written
}


def _folders(root: Path) -> Path:
    """One passed run, one failed run, and one error run of each kind."""
    results = root / "results"
    write_run(results, f"t-pass/{MODEL}/{AGENT}/r1", summary("t-pass", MODEL, AGENT, "passed"))
    write_run(results, f"t-fail/{MODEL}/{AGENT}/r1", summary("t-fail", MODEL, AGENT, "failed"))
    for task, (message, written, _) in KINDS.items():
        doc = summary(task, MODEL, AGENT, "error")
        doc["patch_result"] = {"status": "error", "error_msg": message}
        if written is not None:
            doc["runtime_result"]["error_kind"] = written
        write_run(results, f"{task}/{MODEL}/{AGENT}/r1", doc)
    return results


def _expected() -> dict[str, str | None]:
    return {"t-pass": None, "t-fail": None} | {task: kind for task, (_, _, kind) in KINDS.items()}


def _run(*args: str) -> str:
    out = invoke(*args, columns=200)
    assert out.exit_code == 0, out.stderr
    return out.stdout


def test_jsonl_gives_each_runs_kind(tmp_path: Path) -> None:
    """`--format jsonl`: each record's `error_kind`, null for a run that is no error."""
    lines = _run(str(_folders(tmp_path)), "--format", "jsonl").splitlines()
    got = {doc["task"]: doc["error_kind"] for doc in map(json.loads, lines)}
    assert got == _expected()


def test_per_run_csv_gives_each_runs_kind(tmp_path: Path) -> None:
    """`--format csv --per-run`: an `error_kind` column, empty for a run that is no error."""
    text = _run(str(_folders(tmp_path)), "--format", "csv", "--per-run")
    got = {row["task"]: row["error_kind"] for row in csv.DictReader(io.StringIO(text))}
    assert got == {task: kind or "" for task, kind in _expected().items()}


def test_json_excluded_entries_and_task_rows_give_the_kind(tmp_path: Path) -> None:
    """`--format json`: the error runs left out carry their kind; with
    `--errors-as-failures` they are kept as `tasks` rows (status failed) that still do."""
    results = str(_folders(tmp_path))
    doc = json.loads(_run(results, "--format", "json"))
    assert {ex["task"]: ex["error_kind"] for ex in doc["excluded"]} == {
        task: kind for task, (_, _, kind) in KINDS.items()
    }
    assert {row["task"]: row["error_kind"] for row in doc["tasks"]} == {
        "t-pass": None,
        "t-fail": None,
    }
    doc = json.loads(_run(results, "--format", "json", "--errors-as-failures"))
    assert {row["task"]: row["error_kind"] for row in doc["tasks"]} == _expected()


def _why_cells(page: str) -> dict[str, str]:
    """Task → the text of its Why cell (the third cell from the end: Why, Files)."""
    cells: dict[str, str] = {}
    for line in re.findall(r"<tr[^>]*>(<td>.*?)</tr>", page):
        tds = re.findall(r"<td[^>]*>(.*?)</td>", line)
        if len(tds) > 8:
            cells[re.sub(r"<[^>]+>", "", tds[0])] = tds[-2]
    return cells


def test_html_runs_table_labels_the_kind_beside_the_reason(tmp_path: Path) -> None:
    """`--format html`: the runs table shows a short kind label in an error run's Why cell,
    left out or counted as failed; none beside a run that is no error."""
    results = str(_folders(tmp_path))
    for extra in ((), ("--errors-as-failures",)):
        cells = _why_cells(_run(results, "--format", "html", *extra))
        for task, kind in _expected().items():
            labels = re.findall(r'<span class="kind"[^>]*>([^<]*)</span>', cells[task])
            assert labels == ([] if kind is None else [kind]), (extra, task, cells[task])


def test_text_tables_left_out_list_gives_the_kind(tmp_path: Path) -> None:
    """The terminal table's list of runs left out names each error run's kind."""
    text = _run(str(_folders(tmp_path)), "--format", "table")
    listed = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^  (t-\w+) · .*?: .*? \[(\w+)\]$", text, re.MULTILINE)
    }
    assert listed == {task: kind for task, (_, _, kind) in KINDS.items()}


def _with_kind(rec: RunRecord, kind: Any) -> RunRecord:
    return rec._replace(error_kind=kind)


WRITTEN = st.sampled_from([None, "timeout", "task", "infrastructure", "grader", "odd", 3])


@settings(max_examples=60, deadline=None)
@given(
    runs=st.lists(
        st.builds(_with_kind, records(), WRITTEN),
        max_size=25,
        unique_by=lambda r: (r.task, r.model, r.agent, r.run_id),
    ),
    mode=st.sampled_from(MODES),
    errors_as_failures=st.booleans(),
    rules=st.sampled_from(["ssegrade", "ssebench"]),
)
def test_every_per_run_record_gives_its_runs_kind(
    runs: list[RunRecord], mode: Any, errors_as_failures: bool, rules: Any
) -> None:
    """Whatever the runs, the selection, the rules and the options: each per-run record's
    `error_kind` is its run's kind as the grade reads it, null exactly for the runs that are no
    error."""
    by_id = {(r.task, r.model, r.agent, r.run_id): r for r in runs}
    report = aggregate(runs, runs=mode, errors_as_failures=errors_as_failures, rules=rules)
    for row in per_run_rows(report):
        rec = by_id[(row["task"], row["model"], row["agent"], row["run_id"])]
        kind = error_kind_of(rec.patch.status, rec.patch.error_msg, rec.error_kind)
        assert row["error_kind"] == kind
        assert (kind is None) == (rec.patch.status != "error")
