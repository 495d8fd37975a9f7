"""Rendering the report: a rich terminal table, JSON, CSV, and a self-contained HTML page.

Interpreter layer, output side: every function here turns the pure `ssegrade.report.Report`
into text (the terminal table is printed on a given rich `Console`). Nothing here decides a
number: shares, intervals and comparisons all come from the core.

The HTML page is one file with its style inline and its chart as inline SVG: no script, no font,
no image and no link is fetched, so it opens the same offline.
"""

from __future__ import annotations

import csv
import html
import io
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ssegrade.report import CHECKS, Comparison, Report, Row, Share, TaskRun
from ssegrade.stats import INTERVAL_NAME, TEST_NAME
from ssegrade.task import Check

__all__ = [
    "DETAIL_LIMIT",
    "render_csv",
    "render_html",
    "render_json",
    "render_table",
]

DETAIL_LIMIT = 300
"""The terminal table lists single runs only up to this many (the other formats list all)."""

_SHARES: tuple[tuple[str, str], ...] = (
    ("passed", "Passed"),
    ("build", "Build"),
    ("poc", "PoCs"),
    ("func", "Functional"),
    ("intent", "Intent"),
)
_CHECK_FIELD: dict[Check, str] = {
    "build": "build",
    "poc": "poc",
    "function_test": "func",
    "intent_test": "intent",
}
_COLOURS = {
    "passed": "#3b4cc0",
    "build": "#4e79a7",
    "poc": "#d1495b",
    "func": "#2a9d8f",
    "intent": "#e9a23b",
}


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def _money(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _minutes(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


# --------------------------------------------------------------------------- JSON and CSV


def _rounded_share(share: dict[str, Any]) -> dict[str, Any]:
    return {**share, **{k: _r(share[k]) for k in ("share", "low", "high")}}


def render_json(report: Report, comparison: Comparison | None = None) -> str:
    """The report as one JSON object (SPEC §11); shares, bounds, spend and minutes rounded to
    three decimals. With a comparison, its result is under `compare`."""
    doc = report.model_dump(mode="json")
    for group in ("rows", "by_task"):
        for row in doc[group]:
            for key, _ in _SHARES:
                row[key] = _rounded_share(row[key])
            if group == "rows":
                row["spend"] = _r(row["spend"])
                row["minutes"] = _r(row["minutes"])
    if comparison is not None:
        doc["compare"] = comparison.model_dump(mode="json")
    return json.dumps(doc, ensure_ascii=False) + "\n"


def render_csv(report: Report) -> str:
    """One CSV line per (model, agent) row: counts, share and Wilson bounds of every check."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["model", "agent", "runs", "spend", "minutes"]
    for key, _ in _SHARES:
        header += [f"{key}_passed", f"{key}_of", f"{key}_share", f"{key}_low", f"{key}_high"]
    writer.writerow(header)
    for row in report.rows:
        line: list[object] = [row.model, row.agent, row.runs, _r(row.spend), _r(row.minutes)]
        for key, _ in _SHARES:
            share: Share = getattr(row, key)
            line += [share.passed, share.of, _r(share.share), _r(share.low), _r(share.high)]
        writer.writerow(["" if v is None else v for v in line])
    return out.getvalue()


# --------------------------------------------------------------------------- terminal


def _share_text(share: Share) -> Text:
    if share.share is None:
        return Text("n/a", style="dim")
    text = Text(f"{_pct(share.share):>4} ", style="bold")
    text.append(f"{share.passed}/{share.of} ")
    text.append(f"({_pct(share.low)[:-1]}–{_pct(share.high)})", style="dim")
    return text


def _mark(run: TaskRun, check: Check) -> Text:
    if check not in run.checks:
        return Text("—", style="dim")
    value: bool | str | None = getattr(run, _CHECK_FIELD[check])
    if value is None:
        return Text("not run", style="yellow")
    if check == "poc":
        passed, _, total = str(value).partition("/")
        ok = passed == total and total != "0"
        return Text(f"{'✓' if ok else '✗'} {value}", style="green" if ok else "red")
    return Text("✓", style="green") if value else Text("✗", style="red")


def _status(status: str) -> Text:
    return Text(status, style={"passed": "green", "failed": "red"}.get(status, "yellow"))


def render_table(
    report: Report,
    console: Console,
    comparison: Comparison | None = None,
    detail_limit: int = DETAIL_LIMIT,
) -> None:
    """Print the report on `console`: the rows, the per-task table, the single runs (when there
    are at most `detail_limit`), the runs left out, and the comparison if any."""
    rows = Table(
        title=f"Pass shares per model and agent (runs: {report.runs})",
        caption=Text(
            "share passed/of (low–high): over the runs whose task has the check; "
            f"(low–high): {INTERVAL_NAME}. PoCs: every PoC passed; not run counts as not passed."
        ),
        caption_justify="left",
    )
    for name in ("Model", "Agent"):
        rows.add_column(name, overflow="fold")
    for name in ("Runs", "Spend", "Agent min"):
        rows.add_column(name, justify="right")
    for _, title in _SHARES:
        rows.add_column(title, no_wrap=True)
    for row in report.rows:
        rows.add_row(
            Text(row.model),
            Text(row.agent),
            str(row.runs),
            _money(row.spend),
            _minutes(row.minutes),
            *(_share_text(getattr(row, key)) for key, _ in _SHARES),
        )
    console.print(rows)

    if report.by_task:
        tasks = Table(title="Per task (every kept run, all models and agents)")
        tasks.add_column("Task", overflow="fold")
        tasks.add_column("Runs", justify="right")
        for _, title in _SHARES:
            tasks.add_column(title, no_wrap=True)
        for task in report.by_task:
            tasks.add_row(
                Text(task.task),
                str(task.runs),
                *(_share_text(getattr(task, key)) for key, _ in _SHARES),
            )
        console.print(tasks)

    if 0 < len(report.tasks) <= detail_limit:
        runs = Table(title="Runs (—: the task has no such check)")
        for name in (
            "Task",
            "Model",
            "Agent",
            "Trial",
            "Status",
            "Build",
            "PoCs",
            "Func",
            "Intent",
        ):
            runs.add_column(name, overflow="fold")
        for run in report.tasks:
            runs.add_row(
                Text(run.task),
                Text(run.model),
                Text(run.agent),
                str(run.trial),
                _status(run.status),
                *(_mark(run, check) for check in CHECKS),
            )
        console.print(runs)
    elif report.tasks:
        console.print(
            f"{len(report.tasks)} single runs not listed here: use --format json, csv or html."
        )

    if report.excluded:
        left = Table(title=f"Left out of the shares ({len(report.excluded)} runs)")
        for name in ("Task", "Model", "Agent", "Run", "Why"):
            left.add_column(name, overflow="fold")
        for ex in report.excluded[:detail_limit]:
            left.add_row(*(Text(v) for v in (ex.task, ex.model, ex.agent, ex.run_id, ex.why)))
        console.print(left)
        if len(report.excluded) > detail_limit:
            console.print(f"… and {len(report.excluded) - detail_limit} more.")

    if comparison is not None:
        console.print(Text(_comparison_text(comparison)))


def _comparison_text(c: Comparison) -> str:
    return (
        f"Paired comparison of {c.a} (A) and {c.b} (B) on the {c.tasks} tasks both ran: "
        f"both passed {c.both}, only A {c.only_a}, only B {c.only_b}, neither {c.neither}; "
        f"{c.test}: p = {_p(c.p_value)}."
    )


def _p(value: float) -> str:
    return f"{value:.3g}" if value >= 0.001 else f"{value:.1e}"


# --------------------------------------------------------------------------- HTML

_CSS = """
:root { color-scheme: light; --ink: #1d2330; --muted: #5c6475; --line: #e3e6ee;
  --pass: #1f8a4c; --fail: #c0392b; --warn: #b7791f; --bg: #f6f7fb; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 28px 24px 60px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 34px 0 10px; }
h3 { font-size: 15px; margin: 0 0 8px; }
p.lead, p.note { color: var(--muted); margin: 4px 0 14px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 10px;
  padding: 16px 18px; box-shadow: 0 1px 2px rgba(20, 30, 60, .04); }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); gap: 16px; }
.legend { display: flex; gap: 18px; flex-wrap: wrap; color: var(--muted); font-size: 13px;
  margin: 0 0 12px; }
.legend span::before { content: ""; display: inline-block; width: 22px; height: 8px;
  margin-right: 6px; vertical-align: middle; background: #9aa5c4; border-radius: 2px; }
.legend span.ci::before { height: 2px; background: #1d2330; }
table { border-collapse: collapse; width: 100%; background: #fff; font-size: 14px; }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: left;
  vertical-align: top; }
th { background: #eef0f6; font-weight: 600; position: sticky; top: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.wrap { overflow-x: auto; border: 1px solid var(--line); border-radius: 10px; }
.ci { color: var(--muted); font-size: 12px; }
.ok { color: var(--pass); font-weight: 600; }
.no { color: var(--fail); font-weight: 600; }
.nr { color: var(--warn); }
.na { color: #a0a7b8; }
.cell { display: inline-block; min-width: 46px; padding: 1px 7px; border-radius: 999px;
  font-size: 12px; font-weight: 600; text-align: center; }
.cell.passed { background: #dcf3e4; color: #17663a; }
.cell.failed { background: #fbe1de; color: #97281c; }
.cell.mixed { background: #fdf0d5; color: #8a5a00; }
.cell.none { background: #eef0f6; color: #8b93a7; }
details { background: #fff; border: 1px solid var(--line); border-radius: 10px;
  margin: 8px 0; padding: 8px 12px; }
details > summary { cursor: pointer; font-weight: 600; }
details table { margin-top: 8px; }
footer { color: var(--muted); font-size: 13px; margin-top: 40px; }
code { background: #eef0f6; padding: 0 4px; border-radius: 4px; }
"""

_BAR_H = 16
_GAP = 10
_LABEL_W = 270
_PLOT_W = 250
_TEXT_W = 110


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _chart(title: str, key: str, rows: Sequence[Row]) -> str:
    """One inline SVG panel: a bar per row for share `key`, with its Wilson interval."""
    height = 30 + len(rows) * (_BAR_H + _GAP) + 18
    width = _LABEL_W + _PLOT_W + _TEXT_W
    colour = _COLOURS[key]
    parts = [
        f'<svg role="img" aria-label="{_e(title)}" width="100%" viewBox="0 0 {width} {height}" '
        f'font-family="system-ui, sans-serif" font-size="12">',
        f"<title>{_e(title)}</title>",
        f'<text x="0" y="16" font-size="14" font-weight="600" fill="#1d2330">{_e(title)}</text>',
    ]
    top = 30
    bottom = height - 18
    for tick in (0, 25, 50, 75, 100):
        x = _LABEL_W + _PLOT_W * tick / 100
        parts.append(
            f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{bottom}" stroke="#e3e6ee"/>'
            f'<text x="{x:.1f}" y="{height - 4}" text-anchor="middle" fill="#5c6475">{tick}%</text>'
        )
    for i, row in enumerate(rows):
        share: Share = getattr(row, key)
        y = top + i * (_BAR_H + _GAP)
        mid = y + _BAR_H / 2
        label = row.label if len(row.label) <= 42 else "…" + row.label[-41:]
        parts.append(
            f'<text x="{_LABEL_W - 8}" y="{mid + 4:.1f}" text-anchor="end" fill="#1d2330">'
            f"<title>{_e(row.label)}</title>{_e(label)}</text>"
        )
        if share.share is None or share.low is None or share.high is None:
            parts.append(
                f'<text x="{_LABEL_W + 4}" y="{mid + 4:.1f}" fill="#a0a7b8">n/a (no run has '
                "this check)</text>"
            )
            continue
        w = _PLOT_W * share.share
        lo = _LABEL_W + _PLOT_W * share.low
        hi = _LABEL_W + _PLOT_W * share.high
        tip = (
            f"{row.label}: {share.passed}/{share.of} = {_pct(share.share)}, "
            f"95% interval {_pct(share.low)}–{_pct(share.high)}"
        )
        parts.append(
            f"<g><title>{_e(tip)}</title>"
            f'<rect x="{_LABEL_W}" y="{y}" width="{_PLOT_W}" height="{_BAR_H}" rx="3" '
            f'fill="#f0f2f7"/>'
            f'<rect x="{_LABEL_W}" y="{y}" width="{w:.1f}" height="{_BAR_H}" rx="3" '
            f'fill="{colour}" fill-opacity="0.85" class="bar"/>'
            f'<line x1="{lo:.1f}" y1="{mid}" x2="{hi:.1f}" y2="{mid}" stroke="#1d2330" '
            f'stroke-width="1.6"/>'
            f'<line x1="{lo:.1f}" y1="{y + 3}" x2="{lo:.1f}" y2="{y + _BAR_H - 3}" '
            f'stroke="#1d2330" stroke-width="1.6"/>'
            f'<line x1="{hi:.1f}" y1="{y + 3}" x2="{hi:.1f}" y2="{y + _BAR_H - 3}" '
            f'stroke="#1d2330" stroke-width="1.6"/>'
            f'<text x="{_LABEL_W + _PLOT_W + 8}" y="{mid + 4:.1f}" fill="#1d2330">'
            f'<tspan font-weight="600">{_pct(share.share)}</tspan> '
            f'<tspan fill="#5c6475">{share.passed}/{share.of}</tspan></text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _wrap(head: str, body: str) -> str:
    return (
        f'<div class="wrap"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def _share_cell(share: Share) -> str:
    if share.share is None:
        return '<td class="num na">n/a</td>'
    return (
        f'<td class="num"><b>{_pct(share.share)}</b> {share.passed}/{share.of}<br>'
        f'<span class="ci">{_pct(share.low)}–{_pct(share.high)}</span></td>'
    )


_NUMERIC = frozenset({"Runs", "Spend", "Agent min"})


def _share_table(first: Sequence[str], lines: Iterable[tuple[Sequence[str], Any]]) -> str:
    head = "".join(
        f'<th class="num">{_e(name)}</th>' if name in _NUMERIC else f"<th>{_e(name)}</th>"
        for name in first
    )
    head += "".join(f'<th class="num">{_e(title)}</th>' for _, title in _SHARES)
    body = []
    for cells, item in lines:
        tds = "".join(cells)
        tds += "".join(_share_cell(getattr(item, key)) for key, _ in _SHARES)
        body.append(f"<tr>{tds}</tr>")
    return _wrap(head, "".join(body))


def _html_mark(run: TaskRun, check: Check) -> str:
    if check not in run.checks:
        return '<td class="na" title="the task has no such check">—</td>'
    value: bool | str | None = getattr(run, _CHECK_FIELD[check])
    if value is None:
        return '<td class="nr">not run</td>'
    if check == "poc":
        passed, _, total = str(value).partition("/")
        ok = passed == total and total != "0"
        return f'<td class="{"ok" if ok else "no"}">{"✓" if ok else "✗"} {_e(value)}</td>'
    return '<td class="ok">✓</td>' if value else '<td class="no">✗</td>'


def _matrix(report: Report) -> str:
    labels = [row.label for row in report.rows]
    cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for run in report.tasks:
        tally = cells[(run.task, f"{run.model}/{run.agent}")]
        tally[0] += run.status == "passed"
        tally[1] += 1
    head = "<th>Task</th>" + "".join(f"<th>{_e(label)}</th>" for label in labels)
    body = []
    for task in report.by_task:
        tds = [f"<td>{_e(task.task)}</td>"]
        for label in labels:
            passed, total = cells.get((task.task, label), (0, 0))
            if total == 0:
                tds.append('<td><span class="cell none" title="no kept run">·</span></td>')
                continue
            kind = "passed" if passed == total else "failed" if passed == 0 else "mixed"
            text = ("passed" if passed else "failed") if total == 1 else f"{passed}/{total}"
            tds.append(f'<td><span class="cell {kind}">{_e(text)}</span></td>')
        body.append(f"<tr>{''.join(tds)}</tr>")
    return (
        f'<div class="wrap"><table class="matrix"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _task_details(report: Report) -> str:
    runs_of: dict[str, list[TaskRun]] = defaultdict(list)
    for run in report.tasks:
        runs_of[run.task].append(run)
    out = []
    names = ("Model", "Agent", "Trial", "Run", "Status", "Build", "PoCs", "Functional", "Intent")
    head = "".join(f"<th>{name}</th>" for name in names)
    for task in report.by_task:
        body = "".join(
            f"<tr><td>{_e(r.model)}</td><td>{_e(r.agent)}</td><td class='num'>{r.trial}</td>"
            f"<td>{_e(r.run_id)}</td>"
            f"<td class='{'ok' if r.status == 'passed' else 'no'}'>{_e(r.status)}</td>"
            + "".join(_html_mark(r, check) for check in CHECKS)
            + "</tr>"
            for r in runs_of[task.task]
        )
        summary = (
            f"{_e(task.task)} <span class='ci'>— {task.passed.passed} of {task.runs} "
            f"runs passed</span>"
        )
        out.append(
            f"<details><summary>{summary}</summary><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table></details>"
        )
    return "".join(out)


def _comparisons_table(comparisons: Sequence[Comparison]) -> str:
    head = "".join(
        f"<th{' class=num' if i > 1 else ''}>{name}</th>"
        for i, name in enumerate(
            ("A", "B", "Tasks both ran", "Both pass", "Only A", "Only B", "Neither", "p")
        )
    )
    body = "".join(
        f"<tr><td>{_e(c.a)}</td><td>{_e(c.b)}</td><td class=num>{c.tasks}</td>"
        f"<td class=num>{c.both}</td><td class=num>{c.only_a}</td><td class=num>{c.only_b}</td>"
        f"<td class=num>{c.neither}</td><td class=num><b>{_p(c.p_value)}</b></td></tr>"
        for c in comparisons
    )
    return _wrap(head, body)


def render_html(
    report: Report,
    comparisons: Sequence[Comparison] = (),
    title: str = "ssegrade report",
) -> str:
    """The report as one self-contained HTML page: a bar chart of every share with its interval,
    the table of rows, the per-task tables, the paired comparisons given, the runs left out."""
    rows = report.rows
    legend = (
        '<div class="legend"><span>share of runs passing</span>'
        f'<span class="ci">{_e(INTERVAL_NAME)}</span></div>'
    )
    charts = "".join(f'<div class="card">{_chart(name, key, rows)}</div>' for key, name in _SHARES)
    row_table = _share_table(
        ("Model", "Agent", "Runs", "Spend", "Agent min"),
        (
            (
                (
                    f"<td>{_e(r.model)}</td>",
                    f"<td>{_e(r.agent)}</td>",
                    f'<td class="num">{r.runs}</td>',
                    f'<td class="num">{_money(r.spend)}</td>',
                    f'<td class="num">{_minutes(r.minutes)}</td>',
                ),
                r,
            )
            for r in rows
        ),
    )
    task_table = _share_table(
        ("Task", "Runs"),
        (((f"<td>{_e(t.task)}</td>", f'<td class="num">{t.runs}</td>'), t) for t in report.by_task),
    )
    kept = len(report.tasks)
    which = "every run" if report.runs == "all" else "the latest run of each task, model and agent"
    sections = [
        f"<h1>{_e(title)}</h1>",
        f'<p class="lead">{kept} graded run{"s" if kept != 1 else ""} '
        f"({which})"
        f", {len(rows)} model/agent row{'s' if len(rows) != 1 else ''}, "
        f"{len(report.by_task)} task{'s' if len(report.by_task) != 1 else ''}; "
        f"{len(report.excluded)} run{'s' if len(report.excluded) != 1 else ''} left out "
        "(reference or error).</p>",
        "<h2>Pass shares</h2>",
        legend,
        f'<div class="charts">{charts}</div>',
        '<p class="note">Each share is taken over the runs whose task has the check. '
        "PoCs: every PoC of the task passed; a PoC check that did not run counts as not passed. "
        "Passed: the run's status is <code>passed</code>. The black whiskers are the "
        f"{_e(INTERVAL_NAME)}.</p>",
        "<h2>Per model and agent</h2>",
        row_table,
    ]
    if comparisons:
        sections += [
            "<h2>Paired comparisons</h2>",
            f'<p class="note">On the tasks both rows ran; a row passes a task when more than '
            f"half of its runs of it passed. p: {_e(TEST_NAME)}.</p>",
            _comparisons_table(comparisons),
        ]
    sections += [
        "<h2>Per task</h2>",
        task_table,
        "<h2>Tasks by model and agent</h2>",
        '<p class="note">Each cell: the status of the kept run, or passed/kept runs.</p>',
        _matrix(report),
        "<h2>Runs of each task</h2>",
        '<p class="note">— the task has no such check; not run: the task has it but it did '
        "not run (for instance after a failed build).</p>",
        _task_details(report),
    ]
    if report.excluded:
        body = "".join(
            f"<tr><td>{_e(x.task)}</td><td>{_e(x.model)}</td><td>{_e(x.agent)}</td>"
            f"<td>{_e(x.run_id)}</td><td>{_e(x.why)}</td></tr>"
            for x in report.excluded
        )
        sections += [
            f"<h2>Left out of the shares ({len(report.excluded)})</h2>",
            '<div class="wrap"><table><thead><tr><th>Task</th><th>Model</th><th>Agent</th>'
            f"<th>Run</th><th>Why</th></tr></thead><tbody>{body}</tbody></table></div>",
        ]
    sections.append("<footer>Made by <code>ssegrade report</code>.</footer>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>"
        f"<body><main>{''.join(sections)}</main></body></html>\n"
    )
