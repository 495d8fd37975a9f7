"""The patch guard in the report: the 'passed, unflagged' share beside 'passed' in every
format, passed runs per kind, each run's flags, and `--exclude-flagged KIND`; under
`--rules ssebench`, SSEBench's shares whatever the guard recorded. Beside them, the runs'
containment modes in every format."""

from __future__ import annotations

import csv
import html
import io
import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from interpreters.cli.report import report
from ssegrade.guard import KINDS
from ssegrade.internal.result import PatchResult, Status
from ssegrade.report import Rules, RunRecord, Selector, aggregate, exclude_flagged, summarize
from tests.support.runfolders import summary, write_run
from tests.support.ssebench_report import as_ssebench, same, ssebench_report
from tests.support.ssebench_report import runs as tree_runs
from tests.support.ssebench_report import summary as ssebench_summary
from tests.support.ssebench_report import write as write_summary


def guard_doc(*kinds: str, checked: bool = True) -> dict[str, Any]:
    flags = [{"kind": kind, "paths": ["Makefile"], "why": "seen"} for kind in kinds]
    return {"version": 1, "checked": checked, "flags": flags, "observed": None}


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """One row, five tasks: passed clean, passed flagged sanitizer and build-config, passed
    flagged tests, failed flagged tests, and a passed run graded before the guard."""
    root = tmp_path / "results"
    runs = [
        ("t1", "passed", guard_doc()),
        ("t2", "passed", guard_doc("build-config", "sanitizer")),
        ("t3", "passed", guard_doc("tests")),
        ("t4", "failed", guard_doc("tests")),
        ("t5", "passed", None),
    ]
    for task, status, guard in runs:
        extra: dict[str, Any] = {} if guard is None else {"guard": guard}
        write_run(root, f"{task}/m/a/r1", summary(task=task, status=status, **extra))
    return root


def invoke(*args: str) -> Result:
    return CliRunner().invoke(report, list(args), catch_exceptions=False)


def test_json_has_the_unflagged_share_the_kinds_and_each_run_s_flags(results: Path) -> None:
    doc = json.loads(invoke(str(results), "--format", "json").stdout)
    (row,) = doc["rows"]
    assert (row["passed"]["passed"], row["passed"]["of"]) == (4, 5)
    assert row["unflagged"] == {"passed": 1, "of": 5, "share": 0.2, "low": 0.036, "high": 0.624}
    assert row["flagged"] == {"build-config": 1, "sanitizer": 1, "tests": 1}
    assert row["unguarded"] == 1
    flags = {t["task"]: t["flags"] for t in doc["tasks"]}
    assert flags == {
        "t1": [],
        "t2": ["build-config", "sanitizer"],
        "t3": ["tests"],
        "t4": ["tests"],
        "t5": None,
    }


def test_csv_jsonl_table_and_html_show_it_beside_passed(results: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(invoke(str(results), "--format", "csv").stdout)))
    assert (rows[0]["unflagged_passed"], rows[0]["unflagged_of"]) == ("1", "5")
    assert [rows[0][f"flagged_{kind}"] for kind in KINDS] == ["1", "1", "0", "0", "1", "0"]
    assert rows[0]["unguarded"] == "1"
    per_run = invoke(str(results), "--format", "csv", "--per-run").stdout
    by_task = {r["task"]: r["flags"] for r in csv.DictReader(io.StringIO(per_run))}
    assert (by_task["t2"], by_task["t1"], by_task["t5"]) == ("build-config;sanitizer", "", "")
    lines = [json.loads(x) for x in invoke(str(results), "--format", "jsonl").stdout.splitlines()]
    assert {r["task"]: r["flags"] for r in lines}["t3"] == ["tests"]
    table = invoke(str(results), "--format", "table").stdout
    header = next(line for line in table.splitlines() if "Passed" in line)
    assert header.index("Passed, unflagged") > header.index("Passed")
    assert "m/a: build-config 1, sanitizer 1, tests 1; 1 without a guard record" in table
    page = invoke(str(results), "--format", "html").stdout
    assert '<th class="num">Passed</th><th class="num">Passed, unflagged</th>' in page
    assert "<title>Passed, unflagged</title>" in page  # its chart
    assert "build-config, sanitizer" in page
    assert "<h2>Patch guard</h2>" in page


def test_exclude_flagged_takes_those_runs_out_of_every_share(results: Path) -> None:
    doc = json.loads(
        invoke(str(results), "--format", "json", "--exclude-flagged", "sanitizer,tests").stdout
    )
    (row,) = doc["rows"]
    assert (row["runs"], row["passed"]["passed"], row["passed"]["of"]) == (2, 2, 2)
    assert row["build"]["of"] == 2
    whys = sorted((x["task"], x["why"]) for x in doc["excluded"])
    assert whys == [
        ("t2", "flagged: build-config, sanitizer"),
        ("t3", "flagged: tests"),
        ("t4", "flagged: tests"),
    ]
    every = json.loads(invoke(str(results), "--format", "json", "--exclude-flagged", "any").stdout)
    assert every["rows"][0]["runs"] == 2  # t1 unflagged, t5 without a record


def test_an_unknown_kind_is_one_line_and_exit_2(results: Path) -> None:
    out = CliRunner().invoke(report, [str(results), "--exclude-flagged", "sanitiser"])
    assert out.exit_code == 2
    assert out.output.strip().count("\n") == 0
    assert "unknown kind 'sanitiser'" in out.output


def test_guard_json_beside_a_result_json_is_read(tmp_path: Path) -> None:
    folder = write_run(tmp_path, "t1/m/a/r1", {"patch_result": {"status": "passed"}}, "result.json")
    (folder / "guard.json").write_text(json.dumps(guard_doc("crash-handler")))
    write_run(tmp_path, "t2/m/a/r1", {"patch_result": {"status": "passed"}}, "result.json")
    (tmp_path / "t2/m/a/r1/guard.json").symlink_to(folder / "guard.json")  # never followed
    doc = json.loads(invoke(str(tmp_path), "--format", "json").stdout)
    assert {t["task"]: t["flags"] for t in doc["tasks"]} == {"t1": ["crash-handler"], "t2": None}


def test_no_guard_record_anywhere_leaves_the_share_empty(tmp_path: Path) -> None:
    write_run(tmp_path, "t1/m/a/r1", summary())
    write_run(tmp_path, "t2/m/a/r1", summary(task="t2", guard=guard_doc(checked=False)))
    (row,) = json.loads(invoke(str(tmp_path), "--format", "json").stdout)["rows"]
    assert (row["unflagged"], row["flagged"], row["unguarded"]) == (None, {}, 2)


def test_every_format_counts_or_lists_the_containment_modes(tmp_path: Path) -> None:
    """The text and the page count the modes, the JSON counts them and gives each run's, the
    per-run CSV and JSON Lines give each run's: a mode not known or absent is `unknown`."""
    modes = {"t1": "full", "t2": "weak", "t3": "weak", "t4": None, "t5": "=cmd"}
    for task, mode in modes.items():
        extra = {} if mode is None else {"containment": mode}
        write_run(tmp_path, f"{task}/m/a/r1", summary(task=task, **extra))
    write_run(tmp_path, "t1/m/a/r0", summary(status="error", containment="full"))
    write_run(tmp_path, "t6/m/a/r1", summary(task="t6", status="error", containment="weak"))
    counts = {"full": 1, "unknown": 2, "weak": 3}
    want = {"t1": "full", "t2": "weak", "t3": "weak", "t4": "unknown", "t5": "unknown"}
    root = str(tmp_path)
    doc = json.loads(invoke(root, "--format", "json").stdout)
    assert doc["containment"] == counts
    assert {t["task"]: t["containment"] for t in doc["tasks"]} == want
    assert [x["containment"] for x in doc["excluded"]] == ["weak"]
    lines = invoke(root, "--format", "jsonl").stdout.splitlines()
    assert [json.loads(x)["containment"] for x in lines] == [*want.values(), "weak"]
    per_run = csv.DictReader(io.StringIO(invoke(root, "--format", "csv", "--per-run").stdout))
    assert [r["containment"] for r in per_run] == [*want.values(), "weak"]
    words = "Containment of the runs' scripts: 1 full, 2 unknown, 3 weak."
    assert words in invoke(root, "--format", "table").stdout
    assert words in html.unescape(invoke(root, "--format", "html").stdout)


# ---------------------------------------------------------------------------- pure rules


def test_a_kept_error_run_taken_out_by_its_flags_is_left_out_as_flagged() -> None:
    """An `error` run the selection keeps (`--errors-as-failures`; under SSEBench's rules, a
    grade that does not say `error` itself) and `--exclude-flagged` takes out says why; an
    `error` run the selection left out stays an error run."""
    err = PatchResult(status="error", error_msg="Timeout (3600s)")
    given_error = RunRecord("t1", "m", "a", "r1", err, flags=("tests",))
    derived = RunRecord("t2", "m", "a", "r1", err, flags=("tests",), status_given=False)
    cases: list[tuple[bool, Rules, RunRecord, str]] = [
        (True, "ssegrade", given_error, "flagged: tests"),
        (False, "ssebench", derived, "flagged: tests"),
        (False, "ssegrade", given_error, "error: Timeout (3600s)"),
        (False, "ssebench", given_error, "error: Timeout (3600s)"),
    ]
    for errors_as_failures, rules, rec, why in cases:
        selector = Selector("latest", errors_as_failures, rules)
        selector.add(rec)
        shown = summarize(exclude_flagged(selector.result(), ["tests"]))
        assert [x.why for x in shown.excluded] == [why], (errors_as_failures, rules)


flag_sets = st.none() | st.lists(st.sampled_from(KINDS), unique=True).map(tuple)


@st.composite
def records(draw: st.DrawFn) -> list[RunRecord]:
    made = []
    for i in range(draw(st.integers(1, 12))):
        status: Status = draw(st.sampled_from(["passed", "failed", "error"]))
        day = draw(st.integers(1, 28))
        made.append(
            RunRecord(
                task=f"t{draw(st.integers(1, 4))}",
                model="m",
                agent=draw(st.sampled_from(["a", "b"])),
                run_id=f"r{i}",
                patch=PatchResult(status=status, build_success=status == "passed"),
                started_at=datetime(2025, 1, day, tzinfo=UTC),
                flags=draw(flag_sets),
            )
        )
    return made


@given(records(), st.sampled_from(["latest", "all"]))
def test_the_unflagged_share_is_never_above_the_pass_share(
    runs: list[RunRecord], mode: str
) -> None:
    for row in aggregate(runs, "all" if mode == "all" else "latest").rows:
        if row.unflagged is not None:
            assert row.unflagged.of == row.passed.of
            assert row.unflagged.passed <= row.passed.passed
            assert all(n <= row.passed.passed for n in row.flagged.values())


@given(records(), st.lists(st.sampled_from(KINDS), min_size=1, unique=True))
def test_excluding_kinds_leaves_no_run_raising_them_and_never_promotes_an_older_run(
    runs: list[RunRecord], kinds: list[str]
) -> None:
    selector = Selector("latest")
    for rec in runs:
        selector.add(rec)
    selection = selector.result()
    without = exclude_flagged(selection, kinds)
    assert all(not set(kinds) & set(rec.flags or ()) for _, rec in without.kept)
    assert {rec.run_id for _, rec in without.kept} <= {rec.run_id for _, rec in selection.kept}
    assert len(without.kept) + len(without.excluded) == len(selection.kept) + len(
        selection.excluded
    )
    rebuilt = summarize(without)
    assert sum(row.runs for row in rebuilt.rows) == len(without.kept)


guard_kinds = st.none() | st.lists(st.sampled_from(KINDS), unique=True)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(tree_runs, guard_kinds), min_size=1, max_size=10))
def test_the_patch_guards_record_changes_none_of_ssebenchs_shares(made: list[Any]) -> None:
    """Summaries carrying the guard's record (`guard`, any flags or none) still give SSEBench's
    rows under `--rules ssebench`; the guard's columns beside them count passed runs only."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for (task, model, agent, run_id, doc, when, reference, checks), kinds in made:
            made_summary = ssebench_summary(
                task,
                model,
                agent,
                run_id,
                doc,
                started_at=when,
                reference=reference and model == "m1",
                checks=checks,
            )
            if kinds is not None:
                flags = [{"kind": kind, "paths": [], "why": "seen"} for kind in kinds]
                made_summary["guard"] = {"version": 1, "checked": True, "flags": flags}
            write_summary(root, made_summary)
        theirs = ssebench_report(root, "latest")
        out = CliRunner().invoke(report, [str(root), "--format", "json", "--rules", "ssebench"])
        if not theirs:
            assert out.exit_code != 0 or json.loads(out.stdout)["rows"] == []
            return
        assert out.exit_code == 0, out.output
        doc = json.loads(out.stdout)
        same(theirs, as_ssebench(doc))
        for row in doc["rows"]:
            if row["unflagged"] is not None:
                assert row["unflagged"]["of"] == row["passed"]["of"] == row["runs"]
                assert row["unflagged"]["passed"] <= row["passed"]["passed"]
