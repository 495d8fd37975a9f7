"""The report as rich tables on a terminal, readable from 80 columns up.

Interpreter layer, output side. Below `WIDE` columns (or when the labels are too long for one
line) the tables stack: model over agent in one column, runs, spend, minutes and cost in one
column, each share over its interval; every cell folds rather than being cut, so nothing
vanishes at any width.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from interpreters.report_render import SHARES, UNFLAGGED, flags_text
from ssegrade.checks import CheckSpec, grading_order
from ssegrade.report import DIFFERENCE, Comparison, Report, Row, Share, TaskRun
from ssegrade.report.stats import CLUSTERED_NAME, INTERVAL_NAME, TEST_NAME

__all__ = ["DETAIL_LIMIT", "WIDE", "render_table"]

DETAIL_LIMIT = 300
"""The terminal lists single runs only up to this many (the other formats list all)."""

WIDE = 120
"""From this console width on, one line per row; below, cells stack."""


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def _money(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _minutes(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def _table(title: str, wide: bool) -> Table:
    return Table(title=title, title_justify="left", show_lines=not wide, pad_edge=wide)


def _col(table: Table, name: str, right: bool = False, min_width: int | None = None) -> None:
    table.add_column(
        name, overflow="fold", justify="right" if right else "left", min_width=min_width
    )


def _share_text(share: Share, wide: bool) -> Text:
    # One plain span per cell: styled spans cost rich twice the time on long tables.
    if share.share is None:
        return Text("n/a", style="dim")
    gap = " " if wide else "\n"
    return Text(
        f"{_pct(share.share)} {share.passed}/{share.of}{gap}"
        f"({_pct(share.low)[:-1]}–{_pct(share.high)})"
    )


def _label(model: str, agent: str, wide: bool) -> list[Text]:
    if wide:
        return [Text(model), Text(agent)]
    return [Text(f"{model}\n") + Text(agent, style="bold")]


def _rows_table(report: Report, wide: bool) -> Table:
    table = _table(f"Pass shares per model and agent (runs: {report.runs})", wide)
    if report.rules == "ssebench":
        rule = (
            "share passed/of (low–high): over every kept run of the row, as SSEBench's report; "
            f"(low–high): {INTERVAL_NAME}. PoCs: every PoC ran and passed (PoCs that never "
            "ran, or a task without any, count as not passed). In SSEBench's order."
        )
    else:
        rule = (
            "share passed/of (low–high): over the kept runs whose task has the check; "
            f"(low–high): {INTERVAL_NAME}. PoCs: every PoC passed; not run counts as not "
            "passed. Sorted by pass share."
        )
    table.caption = Text(rule)
    table.caption_justify = "left"
    if wide:
        for name in ("Model", "Agent"):
            _col(table, name)
        for name in ("Runs", "Spend", "Agent min", "Cost/pass"):
            _col(table, name, right=True)
    else:
        _col(table, "Model / agent", min_width=14)
        _col(table, "Runs\nspend\nmin\ncost/pass", right=True)
    for key, title in SHARES:
        _col(table, title)
        if key == "passed":
            _col(table, UNFLAGGED[1])
    for row in report.rows:
        meta = [str(row.runs), _money(row.spend), _minutes(row.minutes), _money(row.cost_per_pass)]
        cells = [Text(v) for v in meta] if wide else [Text("\n".join(meta))]
        shares: list[Text] = []
        for key, _ in SHARES:
            shares.append(_share_text(getattr(row, key), wide))
            if key == "passed":
                unflagged = row.unflagged
                shares.append(
                    Text("—", style="dim") if unflagged is None else _share_text(unflagged, wide)
                )
        table.add_row(*_label(row.model, row.agent, wide), *cells, *shares)
    return table


def _guard_lines(report: Report) -> list[Text]:
    """The patch guard's counts per row: flags among passed runs, runs without a record."""
    lines = []
    for row in report.rows:
        if row.unguarded == row.runs:
            continue
        kinds = ", ".join(f"{kind} {n}" for kind, n in row.flagged.items()) or "none"
        missing = f"; {row.unguarded} without a guard record" if row.unguarded else ""
        lines.append(Text(f"  {row.label}: {kinds}{missing}"))
    if lines:
        head = "Patch guard, flags among passed runs (advisory: never part of the grade):"
        lines.insert(0, Text(head))
    return lines


def _trials_table(rows: Sequence[Row], wide: bool) -> Table:
    table = _table("Repeated trials: pass@k, pass^k and the task-clustered interval", wide)
    table.caption = Text(
        "pass@k: chance that at least one of k runs of a task passes; pass^k: that all k "
        f"pass (unbiased estimates, mean over tasks). Clustered: {CLUSTERED_NAME}."
    )
    table.caption_justify = "left"
    if wide:
        _col(table, "Model")
        _col(table, "Agent")
    else:
        _col(table, "Model / agent")
    _col(table, "Tasks × trials", right=True)
    _col(table, "Passed (clustered)")
    _col(table, "pass@k")
    _col(table, "pass^k")
    for row in rows:
        clustered = (
            f"{_pct(row.passed.share)} ({_pct(row.clustered.low)[:-1]}–{_pct(row.clustered.high)})"
            if row.clustered is not None
            else "—"
        )
        table.add_row(
            *_label(row.model, row.agent, wide),
            Text(f"{row.tasks} × ≥{row.trials}"),
            Text(clustered),
            Text("  ".join(f"@{k} {_pct(v)}" for k, v in row.pass_at_k.items())),
            Text("  ".join(f"^{k} {_pct(v)}" for k, v in row.pass_hat_k.items())),
        )
    return table


def _mark(run: TaskRun, check: CheckSpec) -> Text:
    if check.name not in run.checks:
        return Text("—", style="dim")
    value: bool | str | None = getattr(run, check.label)
    if value is None:
        return Text("not run", style="yellow")
    if check.name == "poc":
        passed, _, total = str(value).partition("/")
        ok = passed == total and total != "0"
        return Text(f"{'✓' if ok else '✗'} {value}", style="green" if ok else "red")
    return Text("✓", style="green") if value else Text("✗", style="red")


def _status(status: str) -> Text:
    return Text(status, style={"passed": "green", "failed": "red"}.get(status, "yellow"))


def _runs_table(report: Report, wide: bool) -> Table:
    table = _table("Runs (—: the task has no such check)", wide)
    names = ("Task", "Model", "Agent", "Trial") if wide else ("Task · model / agent · trial",)
    checks = (check.short_title for check in grading_order())
    for name in (*names, "Status", *checks, "Flags", "First failure"):
        _col(table, name)
    for run in report.tasks:
        if wide:
            where = [Text(run.task), Text(run.model), Text(run.agent), Text(str(run.trial))]
        else:
            where = [Text(f"{run.task}\n{run.model}/{run.agent}\ntrial {run.trial}")]
        table.add_row(
            *where,
            _status(run.status),
            *(_mark(run, check) for check in grading_order()),
            Text(flags_text(run.flags), style="yellow" if run.flags else "dim"),
            Text(run.error_msg or "—"),
        )
    return table


def _excluded_table(report: Report, wide: bool, limit: int) -> Table:
    table = _table(f"Left out of the shares ({len(report.excluded)} runs)", wide)
    names = ("Task", "Model", "Agent", "Run") if wide else ("Task · model / agent · run",)
    for name in (*names, "Why"):
        _col(table, name)
    for ex in report.excluded[:limit]:
        if wide:
            where = [Text(v) for v in (ex.task, ex.model, ex.agent, ex.run_id)]
        else:
            where = [Text(f"{ex.task}\n{ex.model}/{ex.agent}\n{ex.run_id}")]
        table.add_row(*where, Text(ex.why))
    return table


def _p(value: float) -> str:
    return f"{value:.3g}" if value >= 0.001 else f"{value:.1e}"


def _comparisons_table(comparisons: Sequence[Comparison], wide: bool) -> Table:
    table = _table("Paired comparisons on the tasks both rows ran", wide)
    table.caption = Text(
        f"A row passes a task when more than half of its kept runs passed. p: {TEST_NAME}; "
        "Holm: adjusted over the comparisons in this table."
    )
    table.caption_justify = "left"
    if wide:
        for name in ("A", "B"):
            _col(table, name)
        for name in ("Tasks", "Both", "Only A", "Only B", "Neither"):
            _col(table, name, right=True)
    else:
        _col(table, "A vs B")
        _col(table, "Tasks: both · only A · only B · neither")
    _col(table, "p", right=True)
    _col(table, "p (Holm)", right=True)
    for c in comparisons:
        counts = (c.tasks, c.both, c.only_a, c.only_b, c.neither)
        if wide:
            cells = [Text(c.a), Text(c.b), *(Text(str(n)) for n in counts)]
        else:
            cells = [
                Text(f"{c.a}\nvs {c.b}"),
                Text(f"{c.tasks}: {c.both} · {c.only_a} · {c.only_b} · {c.neither}"),
            ]
        table.add_row(*cells, Text(_p(c.p_value)), Text(_p(c.p_holm)))
    return table


def _natural_width(console: Console, table: Table) -> int:
    """How wide `table` would be with no line folded."""
    unbounded = console.options.update(width=1 << 16, max_width=1 << 16)
    return Measurement.get(console, unbounded, table).maximum


def render_table(
    report: Report,
    console: Console,
    comparisons: Sequence[Comparison] = (),
    detail_limit: int = DETAIL_LIMIT,
) -> None:
    """Print the report on `console`: the rows (sorted by pass share), how many runs `latest`
    set aside, repeated-trial statistics when a task has several runs, the per-task table, the
    single runs (when there are at most `detail_limit`), the runs left out, and the
    comparisons given."""
    wide = console.width >= WIDE
    rows = _rows_table(report, wide)
    if wide and _natural_width(console, rows) > console.width:
        rows = _rows_table(report, False)  # long labels: stack rather than fold
    console.print(rows)
    for line in _guard_lines(report):
        console.print(line)
    if report.runs == "latest":
        console.print(
            Text(
                f"Latest run of each task, model and agent: {report.set_aside} older "
                f"run{'s' if report.set_aside != 1 else ''} set aside (--runs all keeps them)."
            )
        )
    if report.errors_as_failures:
        console.print(Text("Error runs are counted as failed (--errors-as-failures)."))
    if set(report.containment) - {"unknown"}:
        counts = ", ".join(f"{n} {mode}" for mode, n in report.containment.items())
        console.print(Text(f"Containment of the runs' scripts: {counts}."))
    repeated = [row for row in report.rows if row.trials > 1 or row.clustered is not None]
    if repeated:
        console.print(_trials_table(repeated, wide))

    if report.by_task:
        tasks = _table("Per task (every kept run, all models and agents)", wide)
        _col(tasks, "Task")
        _col(tasks, "Runs", right=True)
        for _, title in SHARES:
            _col(tasks, title)
        for task in report.by_task:
            tasks.add_row(
                Text(task.task),
                Text(str(task.runs)),
                *(_share_text(getattr(task, key), wide) for key, _ in SHARES),
            )
        console.print(tasks)

    if 0 < len(report.tasks) <= detail_limit:
        console.print(_runs_table(report, wide))
    elif report.tasks:
        console.print(
            Text(
                f"{len(report.tasks)} single runs not listed here: use --format json, jsonl, "
                "csv --per-run or html."
            )
        )

    if report.excluded:
        console.print(_excluded_table(report, wide, detail_limit))
        if len(report.excluded) > detail_limit:
            console.print(Text(f"… and {len(report.excluded) - detail_limit} more."))

    if comparisons:
        console.print(_comparisons_table(comparisons, wide))
    which = "SSEBench's report's (--rules ssebench)" if report.rules == "ssebench" else "ssegrade's"
    console.print(Text(f"Rules: {which}. {DIFFERENCE}", style="dim"))
