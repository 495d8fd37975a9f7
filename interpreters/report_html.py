"""The report as one self-contained HTML page, from a Jinja2 template with autoescape.

Interpreter layer, output side. The template (`interpreters/templates/report.html.j2`, shipped
as package data) holds the markup and the style; this module only computes what the template
shows: the geometry of the inline SVG chart, the task × row grid, each run's marks. Every value
is escaped by Jinja2's autoescape, so names of tasks, models and agents cannot inject markup.

The page fetches nothing: style inline, chart as inline SVG, no script. Its only links are
relative links to each run's files (`result.json`, `final.patch`, `logs/`), given by the caller
(see `interpreters.report_links`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from interpreters.report_render import SHARES, UNFLAGGED, flags_text
from ssegrade.checks import CheckSpec, grading_order
from ssegrade.guard import KINDS
from ssegrade.report import DIFFERENCE, Comparison, Report, Row, Share, TaskRun
from ssegrade.report.stats import CLUSTERED_NAME, INTERVAL_NAME, TEST_NAME

__all__ = ["TEMPLATE", "render_html"]

TEMPLATE = "report.html.j2"
"""The page's template, in the `interpreters/templates` package data."""

Links = Mapping[str, Sequence[tuple[str, str]]]
"""Run folder (below RESULTS) → (name, relative href) of each of its files that exists."""

_COLOURS = {
    "passed": "#3b4cc0",
    "build": "#4e79a7",
    "poc": "#d1495b",
    "func": "#2a9d8f",
    "intent": "#e9a23b",
    "unflagged": "#6a4c93",
}
_BAR_H = 16
_GAP = 10
_LABEL_W = 270
_PLOT_W = 250
_TEXT_W = 110


@cache
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("interpreters", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=False,
        keep_trailing_newline=True,
    )


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def _money(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _minutes(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def _p(value: float) -> str:
    return f"{value:.3g}" if value >= 0.001 else f"{value:.1e}"


def _chart(title: str, key: str, rows: Sequence[Row]) -> dict[str, Any]:
    """The geometry of one SVG panel: a bar per row for share `key`, with its interval."""
    height = 30 + len(rows) * (_BAR_H + _GAP) + 18
    bars = []
    for i, row in enumerate(rows):
        share: Share = getattr(row, key) or Share.of_counts(0, 0)
        y = 30 + i * (_BAR_H + _GAP)
        mid = y + _BAR_H / 2
        bar: dict[str, Any] = {
            "label": row.label,
            "short": row.label if len(row.label) <= 42 else "…" + row.label[-41:],
            "y": y,
            "mid": mid,
            "text_y": f"{mid + 4:.1f}",
            "share": share.share,
        }
        if share.share is not None and share.low is not None and share.high is not None:
            bar["w"] = f"{_PLOT_W * share.share:.1f}"
            bar["lo"] = f"{_LABEL_W + _PLOT_W * share.low:.1f}"
            bar["hi"] = f"{_LABEL_W + _PLOT_W * share.high:.1f}"
            bar["counts"] = f"{share.passed}/{share.of}"
            bar["tip"] = (
                f"{row.label}: {share.passed}/{share.of} = {_pct(share.share)}, "
                f"95% interval {_pct(share.low)}–{_pct(share.high)}"
            )
        bars.append(bar)
    return {
        "title": title,
        "width": _LABEL_W + _PLOT_W + _TEXT_W,
        "height": height,
        "top": 30,
        "bottom": height - 18,
        "label_w": _LABEL_W,
        "plot_w": _PLOT_W,
        "bar_h": _BAR_H,
        "colour": _COLOURS[key],
        "ticks": [
            {"x": f"{_LABEL_W + _PLOT_W * t / 100:.1f}", "label": t} for t in range(0, 101, 25)
        ],
        "bars": bars,
    }


def _charts(report: Report) -> list[dict[str, Any]]:
    """A panel per share, the patch guard's unflagged share beside the pass share when a run
    carries a guard record."""
    shown = list(SHARES)
    if any(row.unflagged is not None for row in report.rows):
        shown.insert(1, UNFLAGGED)
    return [_chart(name, key, report.rows) for key, name in shown]


def _matrix(report: Report) -> list[dict[str, Any]]:
    cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for run in report.tasks:
        tally = cells[(run.task, f"{run.model}/{run.agent}")]
        tally[0] += run.status == "passed"
        tally[1] += 1
    lines = []
    for task in report.by_task:
        line: list[dict[str, str] | None] = []
        for row in report.rows:
            passed, total = cells.get((task.task, row.label), (0, 0))
            if total == 0:
                line.append(None)
                continue
            kind = "passed" if passed == total else "failed" if passed == 0 else "mixed"
            text = ("passed" if passed else "failed") if total == 1 else f"{passed}/{total}"
            line.append({"kind": kind, "text": text})
        lines.append({"task": task.task, "cells": line})
    return lines


def _mark(run: TaskRun, check: CheckSpec) -> tuple[str, str]:
    """(text, kind) of one check of a run: kind is absent, notrun, ok or no."""
    if check.name not in run.checks:
        return ("", "absent")
    value: bool | str | None = getattr(run, check.label)
    if value is None:
        return ("", "notrun")
    if check.name == "poc":
        passed, _, total = str(value).partition("/")
        return (str(value), "ok" if passed == total and total != "0" else "no")
    return ("", "ok" if value else "no")


def _details(report: Report, links: Links) -> list[dict[str, Any]]:
    runs_of: dict[str, list[TaskRun]] = defaultdict(list)
    for run in report.tasks:
        runs_of[run.task].append(run)
    return [
        {
            "task": task.task,
            "passed": task.passed.passed,
            "runs": [
                {
                    "run": run,
                    "marks": [_mark(run, check) for check in grading_order()],
                    "links": links.get(run.folder, ()),
                }
                for run in runs_of[task.task]
            ],
        }
        for task in report.by_task
    ]


def render_html(
    report: Report,
    comparisons: Sequence[Comparison] = (),
    title: str = "ssegrade report",
    links: Links | None = None,
) -> str:
    """The report as one self-contained HTML page: a bar chart of every share with its
    interval, the table of rows (with the share that passed unflagged), the patch guard's
    counts, repeated-trial statistics, the paired comparisons given, the per-task tables
    (each run's guard flags, links to its files: `links`), the runs left out."""
    kept = len(report.tasks)
    context = {
        "title": title,
        "report": report,
        "kept": kept,
        "which": (
            "every run" if report.runs == "all" else "the latest run of each task, model and agent"
        ),
        "shares": SHARES,
        "unflagged_title": UNFLAGGED[1],
        "guarded": [r for r in report.rows if r.unguarded < r.runs],
        "kinds": KINDS,
        "flags_text": flags_text,
        "check_titles": [check.title for check in grading_order()],
        "charts": _charts(report),
        "repeated": [r for r in report.rows if r.trials > 1 or r.clustered is not None],
        "comparisons": list(comparisons),
        "matrix": _matrix(report),
        "details": _details(report, links or {}),
        "links": links or {},
        "difference": DIFFERENCE,
        "interval_name": INTERVAL_NAME,
        "clustered_name": CLUSTERED_NAME,
        "test_name": TEST_NAME,
        "pct": _pct,
        "money": _money,
        "minutes": _minutes,
        "p": _p,
    }
    return _environment().get_template(TEMPLATE).render(context)
