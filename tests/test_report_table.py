"""The terminal table (`interpreters.report_table`) at 80, 100 and 120 columns: readable,
nothing cut, rows sorted by pass share, the runs `latest` set aside said."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime
from typing import Literal

import pytest
from rich.console import Console

from interpreters.report_table import render_table
from ssegrade.report import Report, RunRecord, aggregate, compare_all
from ssegrade.result import PatchResult

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
            older: Status = "failed"
            for day, st in ((1, older), (2, status)):
                patch = PatchResult(
                    status=st, build_success=True, pov_passed=int(st == "passed"), pov_total=1
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


def rendered(report: Report, width: int) -> str:
    """The report as printed on a console `width` columns wide, without colour."""
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, highlight=False)
    render_table(report, console, compare_all(report))
    return out.getvalue()


def columns(text: str) -> list[str]:
    """Each table column's fragments, top to bottom, joined without whitespace (a folded or
    wrapped cell reads back whole)."""
    found: dict[int, list[str]] = {}
    for line in text.splitlines():
        if line.startswith("│"):
            for i, cell in enumerate(line.split("│")[1:-1]):
                found.setdefault(i, []).append(re.sub(r"\s+", "", cell))
    return ["".join(parts) for _, parts in sorted(found.items())]


@pytest.mark.parametrize("width", [80, 100, 120])
@pytest.mark.parametrize("mode", ["latest", "all"])
def test_nothing_vanishes_at_any_width(width: int, mode: str) -> None:
    """At 80, 100 and 120 columns: no line is wider than the console, nothing is cut with an
    ellipsis, every label, task, count and interval can be read back from its column."""
    report = aggregate(records(), "all" if mode == "all" else "latest")
    text = rendered(report, width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert "…" not in text
    cols = columns(text)
    assert cols
    wanted = [m for key in ROWS for m in key] + list(TASKS)
    for row in report.rows:
        for share in (row.passed, row.build, row.poc):
            assert share.low is not None
            assert share.high is not None
            wanted.append(f"{share.passed}/{share.of}")
            wanted.append(f"{100 * share.low:.0f}–{100 * share.high:.0f}%")
    for piece in wanted:
        assert any(piece.replace(" ", "") in col for col in cols), (width, piece)


@pytest.mark.parametrize("width", [80, 120])
def test_rows_sorted_by_pass_share_and_set_aside_said(width: int) -> None:
    """Rows come best first; `latest` says how many older runs it set aside."""
    text = rendered(aggregate(records()), width)
    first = columns(text)[0]
    at = [first.index(model) for model in ("openai/gpt-5", LONG_MODEL, "qwen")]
    assert at == sorted(at)
    # Per row and task, the older trial; and qwen's error run-0, older than both.
    assert "10 older runs set aside" in " ".join(text.split())


def test_repeated_trials_table_under_all() -> None:
    """Under `all`, a table gives pass@k, pass^k and the clustered interval."""
    text = " ".join(rendered(aggregate(records(), "all"), 120).split())
    assert "pass@k" in text
    assert "@1 50% @2 100%" in text  # openai/gpt-5 codex: one pass in two runs of each task
    assert "^1 50% ^2 0%" in text
