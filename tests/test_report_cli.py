"""`ssegrade report` end to end through click, on folder trees in tmp_path."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from interpreters.report_cli import report
from tests.test_report_io import summary, write_run

ROWS = {
    # (model, agent): statuses of t1..t4, oldest run first per task
    ("openai/gpt-5", "codex"): ["passed", "passed", "passed", "failed"],
    ("qwen", "openhands"): ["failed", "failed", "passed", "failed"],
}


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """Two rows over four tasks, an older failed trial of t1 for codex, an error run, a
    reference run, and one unreadable summary."""
    root = tmp_path / "results"
    for (model, agent), statuses in ROWS.items():
        for i, status in enumerate(statuses, start=1):
            write_run(root, f"t{i}/{model}/{agent}/run-b", summary(task=f"t{i}", status=status))
    old = summary(task="t1", status="failed", started_at="2025-05-01T00:00:00Z")
    write_run(root, "t1/openai/gpt-5/codex/run-a", old)
    error = summary(task="t2", status="error")
    error["patch_result"]["error_msg"] = "Timeout (3600s)"
    error["started_at"] = "2025-07-01T00:00:00Z"
    write_run(root, "t2/qwen/openhands/run-c", error)
    ref = summary(task="t1", status="passed")
    ref["run"] = {"model": "ref", "agent": "ref", "reference_run": True}
    write_run(root, "t1/ref/ref/run-r", ref)
    write_run(root, "t3/qwen/openhands/broken", "{")
    return root


def invoke(*args: str) -> Result:
    """Run the command as the console script would."""
    return CliRunner().invoke(report, list(args), catch_exceptions=False)


def test_json_has_the_spec_shape(results: Path) -> None:
    """`--format json`: the §11 object, rows per (model, agent), shares rounded to 3 decimals,
    errors and reference runs listed apart, a warning line for the unreadable file."""
    out = invoke(str(results), "--format", "json")
    assert out.exit_code == 0
    doc = json.loads(out.stdout)
    assert doc["runs"] == "latest"
    assert "Wilson" in doc["interval"]
    rows = {(r["model"], r["agent"]): r for r in doc["rows"]}
    codex = rows[("openai/gpt-5", "codex")]
    assert codex["runs"] == 4
    assert codex["build"] == {"passed": 3, "of": 4, "share": 0.75, "low": 0.301, "high": 0.954}
    assert codex["poc"]["of"] == 0
    assert codex["poc"]["share"] is None
    assert (codex["spend"], codex["minutes"]) == (1.25, 1.0)
    assert rows[("qwen", "openhands")]["build"]["passed"] == 1
    whys = sorted((x["run_id"], x["why"]) for x in doc["excluded"])
    assert whys == [("run-c", "error: Timeout (3600s)"), ("run-r", "reference run")]
    task = next(t for t in doc["tasks"] if t["task"] == "t1" and t["agent"] == "codex")
    assert (task["trial"], task["status"], task["build"], task["poc"]) == (2, "passed", True, None)
    assert out.stderr.count("\n") == 1
    assert out.stderr.startswith("warning: ")
    assert "broken/summary.json" in out.stderr


def test_all_runs_are_trials(results: Path) -> None:
    """`--runs all` keeps the older trial too."""
    doc = json.loads(invoke(str(results), "--runs", "all", "--format", "json").stdout)
    codex_t1 = [
        (t["trial"], t["status"])
        for t in doc["tasks"]
        if (t["task"], t["agent"]) == ("t1", "codex")
    ]
    assert codex_t1 == [(1, "failed"), (2, "passed")]
    assert doc["runs"] == "all"


def test_compare_reports_the_test(results: Path) -> None:
    """`--compare A B` gives the paired counts, the p-value and names the test."""
    out = invoke(
        str(results), "--format", "json", "--compare", "openai/gpt-5/codex", "qwen/openhands"
    )
    comparison = json.loads(out.stdout)["compare"]
    assert comparison["tasks"] == 4
    assert (comparison["only_a"], comparison["only_b"], comparison["both"]) == (2, 0, 1)
    assert comparison["p_value"] == 0.5
    assert "exact McNemar" in comparison["test"]
    table = invoke(str(results), "--compare", "openai/gpt-5/codex", "qwen/openhands").stdout
    assert "exact McNemar" in table
    assert "p = 0.5" in table


def test_table_lists_rows_and_tasks(results: Path) -> None:
    """The default table names every row and task and the interval it shows."""
    out = invoke(str(results))
    assert out.exit_code == 0
    for text in ("openai/gpt-5", "openhands", "t4", "Wilson", "75% 3/4", "reference run"):
        assert text in out.stdout


def test_csv_one_line_per_row(results: Path) -> None:
    """CSV: a header and one line per (model, agent) with counts and bounds."""
    out = invoke(str(results), "--format", "csv")
    lines = list(csv.DictReader(io.StringIO(out.stdout)))
    assert [(line["model"], line["agent"]) for line in lines] == sorted(ROWS)
    assert lines[0]["build_passed"] == "3"
    assert lines[0]["build_low"] == "0.301"
    assert lines[0]["poc_share"] == ""


def test_html_is_self_contained(results: Path, tmp_path: Path) -> None:
    """`-o FILE` with html: one page, style inline, the chart as inline SVG, no script and no
    address that a browser would fetch."""
    page = tmp_path / "report.html"
    out = invoke(str(results), "--format", "html", "-o", str(page))
    assert out.exit_code == 0
    assert out.stdout == ""
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>")
    lowered = text.lower()
    for forbidden in ("http:", "https:", "<script", "<link", "src=", "@import", "url("):
        assert forbidden not in lowered
    assert lowered.count("<svg") == 5
    assert (
        text.count('class="bar"') == 2 * 2
    )  # two rows; passed and build (the tasks have no other check)
    assert "<details>" in text


def test_names_are_escaped_in_html(tmp_path: Path) -> None:
    """Model and task names cannot inject markup into the page."""
    write_run(tmp_path, "t/m/a/r", summary(task="t<script>", model="<b>x</b>", agent="a&b"))
    text = invoke(str(tmp_path), "--format", "html").stdout
    assert "<script>" not in text
    assert "&lt;b&gt;x&lt;/b&gt;" in text
    assert "a&amp;b" in text


def one_line_error(out: Result) -> str:
    """The error of a failed command: exactly one stderr line besides the warnings about
    unreadable files, no traceback, no usage text."""
    assert out.exit_code != 0
    errors = [line for line in out.stderr.splitlines() if not line.startswith("warning: ")]
    assert len(errors) == 1
    assert "Traceback" not in out.stderr
    assert "Usage" not in out.stderr
    return errors[0]


def test_nothing_found_is_one_line(tmp_path: Path) -> None:
    """No run folder: a clear message and exit 1."""
    err = one_line_error(invoke(str(tmp_path)))
    assert "no run folders found" in err
    assert invoke(str(tmp_path / "nope")).exit_code == 1


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--runs", "some"], "--runs"),
        (["--format", "pdf"], "--format"),
        (["--compare", "nobody/none", "qwen/openhands"], "no row 'nobody/none'"),
        (["--compare", "qwen/openhands"], "--compare"),
        (["--colour"], "--colour"),
    ],
)
def test_bad_usage_is_one_line(results: Path, args: list[str], needle: str) -> None:
    """Bad options: one line naming the problem, exit 2."""
    out = invoke(str(results), *args)
    assert needle in one_line_error(out)
    assert out.exit_code == 2


def test_missing_argument_is_one_line() -> None:
    """No RESULTS: one line, exit 2."""
    out = invoke()
    assert "RESULTS" in one_line_error(out)


def test_unwritable_output_is_one_line(results: Path, tmp_path: Path) -> None:
    """An output file that cannot be written: one line naming it, exit 1."""
    target = tmp_path / "no" / "such" / "dir" / "out.json"
    out = invoke(str(results), "--format", "json", "-o", str(target))
    assert str(target) in one_line_error(out)
    table = invoke(str(results), "-o", str(target))
    assert str(target) in one_line_error(table)


def test_help_describes_the_options() -> None:
    """--help works and names every option."""
    out = invoke("--help")
    assert out.exit_code == 0
    for option in ("--runs", "--format", "-o", "--compare", "McNemar"):
        assert option in out.stdout
