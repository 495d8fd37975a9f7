"""The text report (`interpreters.report.table`): it fits its width (80 columns by default),
cuts nothing, lists the per-task lines only up to a few dozen tasks unless asked, and says why
runs failed."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interpreters.report.table import DETAIL_LIMIT, render_table
from interpreters.report.tasks import TASK_LIMIT
from interpreters.report.text import Column, Row, table, wrap
from ssegrade.internal.result import PatchResult
from ssegrade.report import Report, RunRecord, aggregate, compare_all
from tests.support.reportruns import MODES, run_lists

LONG_MODEL = "organisation-with-a-long-name/team/very-long-model-name-2025-preview"
Status = Literal["passed", "failed"]
ROWS: dict[tuple[str, str], list[Status]] = {
    # (model, agent): statuses over tasks t-alpha, t-beta, t-gamma
    (LONG_MODEL, "claude-code-with-extra-tools"): ["failed", "failed", "passed"],
    ("openai/gpt-5", "codex"): ["passed", "passed", "passed"],
    ("qwen", "openhands"): ["failed", "passed", "failed"],
}
TASKS = ("t-alpha-with-a-rather-long-task-name-0042", "t-beta", "t-gamma")


def records() -> list[RunRecord]:
    """Two trials per task and row (the older one always failed), and one error run without a
    time (the oldest)."""
    out = []
    for (model, agent), statuses in ROWS.items():
        for task, status in zip(TASKS, statuses, strict=True):
            trials: tuple[tuple[int, Status], ...] = ((1, "failed"), (2, status))
            for day, st_ in trials:
                patch = PatchResult(
                    status=st_,
                    build_success=True,
                    pov_passed=int(st_ == "passed"),
                    pov_total=1,
                    error_msg=None if st_ == "passed" else "PoC failed: /ssebench/pocs/poc.bin",
                )
                out.append(
                    RunRecord(
                        task,
                        model,
                        agent,
                        f"run-{day}",
                        patch,
                        started_at=datetime(2025, 6, day, tzinfo=UTC),
                        checks=frozenset({"build", "poc"}),
                        spend=0.5,
                        agent_seconds=600.0,
                    )
                )
    out.append(
        RunRecord(
            TASKS[0],
            "qwen",
            "openhands",
            "run-0",
            PatchResult(status="error", error_msg="Timeout (60s)"),
        )
    )
    return out


def rendered(report: Report, width: int, all_tasks: bool = False) -> str:
    """The report as printed at `width` columns."""
    return render_table(report, width, compare_all(report), all_tasks)


def flat(text: str) -> str:
    """The text with every run of white space as one space (a wrapped sentence reads whole)."""
    return " ".join(text.split())


def longest(text: str) -> int:
    """The longest line."""
    return max(len(line) for line in text.splitlines())


@pytest.mark.parametrize("width", [40, 80, 100, 120, 200])
@pytest.mark.parametrize("mode", ["latest", "all"])
def test_nothing_is_cut_at_any_width(width: int, mode: str) -> None:
    """At 40 to 200 columns: no line is wider, nothing is cut with an ellipsis, and every
    label, task, count, interval and note can be read."""
    report = aggregate(records(), "all" if mode == "all" else "latest")
    text = rendered(report, width)
    assert longest(text) <= width
    assert "…" not in text
    squeezed = re.sub(r"\s+", "", text)
    wanted = [m for key in ROWS for m in key] + list(TASKS)
    for row in report.rows:
        for share in (row.passed, row.build, row.poc):
            assert share.low is not None
            assert share.high is not None
            wanted.append(f"{share.passed}/{share.of}")
            wanted.append(f"{100 * share.low:.0f}–{100 * share.high:.0f}%")
    for piece in wanted:
        assert re.sub(r"\s+", "", piece) in squeezed, (width, piece)
    for note in ("Wilson score interval", "Rules: ssegrade's", "exact McNemar"):
        assert note in flat(text)


def test_at_80_columns_every_share_column_is_there() -> None:
    """At 80 columns the main table keeps every share's column, the intent's too, with the
    short titles, and its footnote wrapped below it."""
    text = rendered(aggregate(records()), 80)
    head = next(line for line in text.splitlines() if "Passed" in line)
    assert re.split(r"\s+", head.strip()) == ["Passed", "Build", "PoCs", "Func", "Intent"]
    assert "PoCs: every PoC passed (not run: not passed)" in flat(text)
    assert longest(text) <= 80


def test_wide_enough_one_line_per_row() -> None:
    """Where one line per row fits, each row is one line: model, agent, runs, spend, minutes,
    cost per pass and every share with its interval."""
    text = rendered(aggregate(records()), 250)
    line = next(line for line in text.splitlines() if line.startswith("openai/gpt-5"))
    assert re.split(r"\s{2,}", line.strip())[:4] == ["openai/gpt-5", "codex", "3", "0.50"]
    assert "100% 3/3 (44–100%)" in line


@settings(max_examples=60, deadline=None)
@given(run_lists(config=None), st.sampled_from(MODES), st.integers(40, 160), st.booleans())
def test_no_line_is_longer_than_the_width(
    recs: list[RunRecord], mode: Literal["latest", "all"], width: int, all_tasks: bool
) -> None:
    """Property: whatever the runs, the width (from the narrowest, 40) and `--tasks`, no line
    of the text is longer than the width."""
    report = aggregate(recs, mode)
    assert longest(rendered(report, width, all_tasks) + "x") <= width


def test_rows_sorted_by_pass_share_and_set_aside_said() -> None:
    """Rows come best first; `latest` says how many older runs it set aside."""
    text = rendered(aggregate(records()), 80)
    at = [text.index(model) for model in ("openai/gpt-5", LONG_MODEL, "qwen")]
    assert at == sorted(at)
    # Per row and task, the older trial; and qwen's error run-0, older than both.
    assert "10 older runs set aside" in flat(text)


def test_repeated_trials_table_under_all() -> None:
    """Under `all`, a table gives pass@k, pass^k and the clustered interval."""
    text = flat(rendered(aggregate(records(), "all"), 120))
    assert "pass@k" in text
    assert "@1 50% @2 100%" in text  # openai/gpt-5 codex: one pass in two runs of each task
    assert "^1 50% ^2 0%" in text


def test_why_runs_failed_is_said_with_each_run_and_counted() -> None:
    """Each listed run says its first failure; the runs that did not pass are counted by
    first failure; the run left out says why."""
    text = rendered(aggregate(records(), "all"), 80)
    assert "Why runs did not pass" in text
    failed = sum(1 for r in records() if r.patch.status == "failed")
    assert re.search(rf"^\s+{failed}\s+PoC failed: /ssebench/pocs/poc.bin$", text, re.M)
    runs = text[text.index("Runs (—") :]
    assert runs.count("PoC failed: /ssebench/pocs/poc.bin") == failed
    assert "run-0: error: Timeout (60s)" in flat(text)


def many_tasks(count: int, runs: int = 1) -> Report:
    """`count` tasks with `runs` runs each of one row."""
    recs = [
        RunRecord(
            f"task-{i:05d}",
            "m",
            "a",
            f"r{j}",
            PatchResult(status="failed", build_success=False, error_msg="Build failed"),
            checks=frozenset({"build"}),
        )
        for i in range(count)
        for j in range(runs)
    ]
    return aggregate(recs, "all")


def test_per_task_lines_only_up_to_a_few_dozen_tasks_unless_asked() -> None:
    """Beyond `TASK_LIMIT` tasks the per-task lines are left out, and a footnote says how to
    get them; `--tasks` prints one line per task, none wider than the width. The single runs
    are left out beyond `DETAIL_LIMIT`, with a footnote."""
    report = many_tasks(TASK_LIMIT + 1)
    text = rendered(report, 80)
    assert "task-00000" not in text[text.index("Per task") : text.index("Runs (")]
    assert f"{TASK_LIMIT + 1} tasks: not listed beyond {TASK_LIMIT} (--tasks lists them" in flat(
        text
    )
    assert "single runs not listed here" in flat(text) or TASK_LIMIT + 1 <= DETAIL_LIMIT
    every = rendered(report, 80, all_tasks=True)
    lines = [line for line in every.splitlines() if line.startswith("task-") and "·" not in line]
    assert len(lines) == TASK_LIMIT + 1
    assert lines[0].split() == ["task-00000", "0%", "0/1", "0%", "0/1", "n/a", "n/a", "n/a"]
    assert longest(every) <= 80
    few = rendered(many_tasks(3, runs=DETAIL_LIMIT), 80)
    assert "task-00002" in few
    assert f"{3 * DETAIL_LIMIT} single runs not listed here" in flat(few)


def test_a_task_name_too_long_for_its_column_takes_a_line() -> None:
    """A long task name is printed whole on a line of its own, its numbers below it."""
    name = "a-task-whose-name-is-far-too-long-for-the-per-task-column"
    recs = [RunRecord(name, "m", "a", "r", PatchResult(status="passed", build_success=True))]
    text = rendered(aggregate(recs), 80)
    tasks = text[text.index("Per task") :]
    at = tasks.splitlines().index(name)
    assert tasks.splitlines()[at + 1].split()[:2] == ["100%", "1/1"]


def test_table_layout_wraps_and_folds_within_the_width() -> None:
    """The layout narrows the widest columns first and wraps their cells; a head takes the
    whole width above its cells."""
    columns = [Column("Name"), Column("Count", right=True)]
    rows = [Row(["a rather long cell that must wrap", "12345"], head="head " * 30)]
    lines = table(columns, rows, 30)
    assert max(len(line) for line in lines) <= 30
    assert any(line.rstrip().endswith("12345") for line in lines)
    assert wrap("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]
