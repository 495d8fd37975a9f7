"""The data formats (`interpreters.report.render`) written part by part through spools are the
report as its model says: JSON is the model's document (rounded where SPEC §11 says), JSON
Lines and CSV one record per run, in order."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from interpreters.report.render import inert, render_json
from interpreters.report.runs import PER_RUN_FIELDS, per_run_rows, render_jsonl, render_runs_csv
from ssegrade.report import RunRecord, RunsMode, aggregate, compare_all
from tests.support.reportruns import MODES, run_lists


def rounded(share: dict[str, Any]) -> dict[str, Any]:
    """A share with its share and bounds rounded to three decimals."""
    bounds = ("share", "low", "high")
    return {**share, **{k: None if share[k] is None else round(share[k], 3) for k in bounds}}


@settings(max_examples=40, deadline=None)
@given(run_lists(config=None), st.sampled_from(MODES))
def test_json_is_the_models_document(recs: list[RunRecord], mode: RunsMode) -> None:
    """Property: `--format json` holds the report model's document: every kept run, every run
    left out and every per-task row (its shares rounded), the comparisons given."""
    report = aggregate(recs, mode)
    pairs = compare_all(report)
    doc = json.loads(render_json(report, None, pairs))
    want = report.model_dump(mode="json")
    assert doc["tasks"] == want["tasks"]
    assert doc["excluded"] == want["excluded"]
    assert doc["by_task"] == [
        {**row, **{k: rounded(row[k]) for k in ("build", "poc", "func", "intent", "passed")}}
        for row in want["by_task"]
    ]
    assert [(r["model"], r["agent"], r["runs"]) for r in doc["rows"]] == [
        (r.model, r.agent, r.runs) for r in report.rows
    ]
    assert doc.get("comparisons", []) == [c.model_dump(mode="json") for c in pairs]
    assert list(doc)[:5] == ["runs", "rows", "excluded", "tasks", "by_task"]


@settings(max_examples=40, deadline=None)
@given(run_lists(config=None), st.sampled_from(MODES))
def test_per_run_lines_are_every_run_in_order(recs: list[RunRecord], mode: RunsMode) -> None:
    """Property: JSON Lines and CSV --per-run hold one record per run considered, the kept
    runs then those left out, with the same values (CSV as text)."""
    report = aggregate(recs, mode)
    rows = list(per_run_rows(report))
    lines = [json.loads(line) for line in render_jsonl(report).splitlines()]
    assert lines == [json.loads(json.dumps(row)) for row in rows]
    table = list(csv.DictReader(io.StringIO(render_runs_csv(report))))
    assert [list(row) for row in table[:1]] == ([list(PER_RUN_FIELDS)] if rows else [])

    def text(value: object) -> str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list):  # the guard's flags
            return str(inert(";".join(value)))
        return str(inert(value))

    assert table == [{name: text(row[name]) for name in PER_RUN_FIELDS} for row in rows]
