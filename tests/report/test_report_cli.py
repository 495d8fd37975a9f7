"""`ssegrade report` end to end through click, on folder trees in tmp_path."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from tests.support.reportcommand import invoke, one_line_error
from tests.support.runfolders import summary, write_run

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
    old["patch_result"]["error_msg"] = "Build failed"
    write_run(root, "t1/openai/gpt-5/codex/run-a", old)
    error = summary(task="t2", status="error")
    error["patch_result"]["error_msg"] = "Timeout (3600s)"
    error["started_at"] = "2025-07-01T00:00:00Z"
    write_run(root, "t2/qwen/openhands/run-c", error)
    ref = summary(task="t1", status="passed")
    ref["config"] = {"model": "ref", "agent": "ref", "reference_run": True}
    write_run(root, "t1/ref/ref/run-r", ref)
    write_run(root, "t3/qwen/openhands/broken", "{")
    return root


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
    assert rows[("qwen", "openhands")]["runs"] == 3  # t2's newest run is an error run
    assert doc["set_aside"] == 2
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
    doc = json.loads(out.stdout)
    comparison = doc["compare"]
    assert comparison["tasks"] == 3
    assert (comparison["only_a"], comparison["only_b"], comparison["both"]) == (1, 0, 1)
    assert comparison["p_value"] == comparison["p_holm"] == 1.0
    assert "exact McNemar" in comparison["test"]
    assert [(c["a"], c["b"]) for c in doc["comparisons"]] == [
        ("openai/gpt-5/codex", "qwen/openhands")
    ]
    table = invoke(str(results), "--compare", "openai/gpt-5/codex", "qwen/openhands").stdout
    assert "exact McNemar" in " ".join(table.split())
    assert "Holm" in table


def test_table_lists_rows_and_tasks(results: Path) -> None:
    """The default table names every row and task and the interval it shows; wide enough,
    a row's share reads on one line."""
    out = invoke(str(results))
    assert out.exit_code == 0
    for text in ("openai/gpt-5", "openhands", "t4", "Wilson", "  75%  ", "reference run"):
        assert text in out.stdout
    assert "75% 3/4 (30–95%)" in invoke(str(results), columns=250).stdout


def test_csv_one_line_per_row(results: Path) -> None:
    """CSV: a header and one line per (model, agent) with counts and bounds."""
    out = invoke(str(results), "--format", "csv")
    lines = list(csv.DictReader(io.StringIO(out.stdout)))
    assert [(line["model"], line["agent"]) for line in lines] == sorted(ROWS)
    assert lines[0]["build_passed"] == "3"
    assert lines[0]["build_low"] == "0.301"
    assert lines[0]["poc_share"] == ""


def test_html_is_self_contained(results: Path, tmp_path: Path) -> None:
    """`-o FILE` with html: one page, style inline, the chart as inline SVG, one inline script
    and no address that a browser would fetch."""
    page = tmp_path / "report.html"
    out = invoke(str(results), "--format", "html", "-o", str(page))
    assert out.exit_code == 0
    assert out.stdout == ""
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>")
    lowered = text.lower()
    for forbidden in ("http:", "https:", "<link", "src=", "@import", "url("):
        assert forbidden not in lowered
    assert lowered.count("<script") == 1
    assert lowered.count("<svg") == 5
    assert (
        text.count('class="bar"') == 2 * 2
    )  # two rows; passed and build (the tasks have no other check)
    assert '<table id="runs">' in text


def test_names_are_escaped_in_html(tmp_path: Path) -> None:
    """Model and task names cannot inject markup into the page."""
    run = "t<script>/<b>x</b>/a&b/r"
    write_run(tmp_path, run, summary(task="t<script>", model="<b>x</b>", agent="a&b"))
    text = invoke(str(tmp_path), "--format", "html").stdout
    assert text.count("<script>") == 1  # the page's own
    assert "t&lt;script&gt;" in text
    assert "&lt;b&gt;x&lt;/b&gt;" in text
    assert "a&amp;b" in text


def test_nothing_found_is_one_line(tmp_path: Path) -> None:
    """No run folder, a missing folder or a file: a clear message and exit 2."""
    out = invoke(str(tmp_path))
    assert "no run folders found" in one_line_error(out)
    assert out.exit_code == 2
    for bad in (tmp_path / "nope", tmp_path / "file"):
        (tmp_path / "file").write_text("x")
        out = invoke(str(bad))
        assert str(bad) in one_line_error(out)
        assert out.exit_code == 2


def test_console_script_nonexistent_folder_exits_2() -> None:
    """`ssegrade report /nonexistent`: exit 2 and one line, through the real console script."""
    import subprocess
    import sys

    code = "from interpreters.cli.main import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "report", "/nonexistent/results"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert "/nonexistent/results: no such folder" in done.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--runs", "some"], "--runs"),
        (["--format", "pdf"], "--format"),
        (["--compare", "nobody/none", "qwen/openhands"], "no row 'nobody/none'"),
        (["--compare", "qwen/openhands"], "--compare"),
        (["--colour"], "--colour"),
        (["--per-run"], "--per-run"),
        (["--format", "json", "--per-run"], "--per-run"),
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
    """An output file that cannot be written: one line naming it, exit 2."""
    target = tmp_path / "no" / "such" / "dir" / "out.json"
    out = invoke(str(results), "--format", "json", "-o", str(target))
    assert str(target) in one_line_error(out)
    assert out.exit_code == 2
    table = invoke(str(results), "-o", str(target))
    assert str(target) in one_line_error(table)


def test_help_describes_the_options() -> None:
    """--help works and names every option."""
    out = invoke("--help")
    assert out.exit_code == 0
    for option in (
        "--runs",
        "--format",
        "-o",
        "--compare",
        "McNemar",
        "--per-run",
        "--errors-as-failures",
        "jsonl",
    ):
        assert option in out.stdout


PER_RUN = [
    "task",
    "model",
    "agent",
    "run_id",
    "trial",
    "counted",
    "status",
    "why",
    "error_msg",
    "error_kind",
    "build",
    "poc_passed",
    "poc_total",
    "func",
    "intent",
    "spend",
    "minutes",
    "started_at",
    "cached_from",
    "folder",
    "flags",
    "containment",
]


def test_per_run_exports(results: Path) -> None:
    """`--format jsonl` and `--format csv --per-run`: one row per run considered (kept, then
    left out), the same columns in both; folders name the run folders."""
    lines = invoke(str(results), "--runs", "all", "--format", "jsonl").stdout.splitlines()
    rows = [json.loads(line) for line in lines]
    assert all(list(row) == PER_RUN for row in rows)
    counted = [r for r in rows if r["counted"]]
    assert len(counted) == 9
    assert {r["why"] for r in rows if not r["counted"]} == {
        "reference run",
        "error: Timeout (3600s)",
    }
    first = next(r for r in counted if (r["task"], r["agent"], r["trial"]) == ("t1", "codex", 1))
    assert (first["run_id"], first["status"], first["build"]) == ("run-a", "failed", False)
    assert first["folder"] == "t1/openai/gpt-5/codex/run-a"
    assert (results / first["folder"] / "summary.json").is_file()
    assert (first["spend"], first["minutes"]) == (1.25, 1.0)
    assert first["error_msg"] == "Build failed"
    assert {r["error_msg"] for r in rows if r["why"] == "error: Timeout (3600s)"} == {
        "Timeout (3600s)"
    }
    table = list(
        csv.DictReader(
            io.StringIO(
                invoke(str(results), "--runs", "all", "--format", "csv", "--per-run").stdout
            )
        )
    )
    assert [list(r) for r in table[:1]] == [PER_RUN]
    assert len(table) == len(rows)
    assert [r["run_id"] for r in table] == [r["run_id"] for r in rows]
    assert table[rows.index(first)]["counted"] == "true"
    assert table[rows.index(first)]["build"] == "false"


def test_errors_as_failures(results: Path) -> None:
    """`--errors-as-failures`: the error run counts, as failed; the reference run stays out."""
    doc = json.loads(invoke(str(results), "--format", "json", "--errors-as-failures").stdout)
    assert doc["errors_as_failures"] is True
    assert [x["why"] for x in doc["excluded"]] == ["reference run"]
    qwen = next(r for r in doc["rows"] if r["agent"] == "openhands")
    assert qwen["runs"] == 4
    t2 = next(t for t in doc["tasks"] if (t["task"], t["agent"]) == ("t2", "openhands"))
    assert (t2["run_id"], t2["status"]) == ("run-c", "failed")


def test_html_links_each_run_to_its_files(results: Path, tmp_path: Path) -> None:
    """Each run links to its result.json, final.patch and logs when they exist, relative to
    where the page is written; a link in their place is not linked."""
    run = results / "t1/openai/gpt-5/codex/run-b"
    (run / "result.json").write_text("{}")
    (run / "final.patch").write_text("")
    (run / "logs").mkdir()
    (results / "t3/openai/gpt-5/codex/run-b/final.patch").symlink_to("/etc/passwd")
    pages = tmp_path / "pages"
    pages.mkdir()
    page = pages / "report.html"
    assert invoke(str(results), "--format", "html", "-o", str(page)).exit_code == 0
    text = page.read_text()
    base = "../results/t1/openai/gpt-5/codex/run-b"
    for name in ("result.json", "final.patch", "logs/"):
        assert f'href="{base}/{name}"' in text
        assert (pages / f"{base}/{name}").exists()
    assert "t3/openai/gpt-5/codex/run-b/final.patch" not in text
