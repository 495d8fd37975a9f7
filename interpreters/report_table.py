"""The report as plain text for a terminal or a pipe, fitting its width (80 columns by default).

Interpreter layer, output side. `TableSink` takes each task's part as it is read and keeps only
what the text shows: the first runs (listed when there are at most `DETAIL_LIMIT`), the first
runs left out, how often each first failure was seen, and the per-task lines (up to
`TASK_LIMIT` tasks, or all of them with `--tasks`, then through a spool). Tables are laid out by
`interpreters.report_text`; the per-task lines are formatted directly, one line per task. When
a table's cells do not fit on one line, each row's label goes on a line of its own and the
cells below it stack and wrap: nothing is cut, at any width.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from interpreters.report_io import RunFiles
from interpreters.report_output import Ending, Reasons, write_report
from interpreters.report_tasks import SHARES, TASK_LIMIT, TaskLines
from interpreters.report_text import Column, Inert, Row, Writer, fits, table, wrap
from ssegrade.checks import CheckSpec, grading_order
from ssegrade.report import (
    DIFFERENCE,
    Comparison,
    Excluded,
    Report,
    Share,
    TaskPart,
    TaskRun,
)
from ssegrade.report import Row as ReportRow
from ssegrade.stats import CLUSTERED_NAME, INTERVAL_NAME, TEST_NAME

__all__ = ["DETAIL_LIMIT", "LEFT_OUT_LIMIT", "TASK_LIMIT", "TableSink", "render_table"]

DETAIL_LIMIT = 100
"""The single runs are listed up to this many (the other formats list them all)."""

LEFT_OUT_LIMIT = 20
"""The runs left out of the shares listed one by one, at most."""

REASONS = 5
"""The first failures listed, most frequent first."""


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def _money(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _minutes(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def _p(value: float) -> str:
    return f"{value:.3g}" if value >= 0.001 else f"{value:.1e}"


def _share(share: Share, sep: str = " ") -> str:
    """`62% 5/8 (31–86%)` on one line, or its three parts on lines of their own."""
    if share.share is None:
        return "n/a"
    interval = f"{_pct(share.low)[:-1]}–{_pct(share.high)}"
    if sep == "\n":
        return f"{_pct(share.share)}\n{share.passed}/{share.of}\n{interval}"
    return f"{_pct(share.share)} {share.passed}/{share.of} ({interval})"


def _label(model: str, agent: str) -> str:
    return f"{model} · {agent}"


def _paragraph(text: str, width: int) -> list[str]:
    return wrap(text, width)


def _rows_table(report: Report, width: int) -> list[str]:
    """The main table: one line per row when it fits, else each row's label on a line of its
    own (with its runs, spend, minutes and cost) above its shares, stacked."""
    wide_columns = [
        Column("Model"),
        Column("Agent"),
        Column("Runs", right=True),
        Column("Spend", right=True),
        Column("Min", right=True),
        Column("$/pass", right=True),
        *(Column(title) for _, title in SHARES),
    ]
    wide_rows = [
        Row(
            [
                row.model,
                row.agent,
                str(row.runs),
                _money(row.spend),
                _minutes(row.minutes),
                _money(row.cost_per_pass),
                *(_share(getattr(row, key)) for key, _ in SHARES),
            ]
        )
        for row in report.rows
    ]
    if fits(wide_columns, wide_rows, width):
        return table(wide_columns, wide_rows, width)
    columns = [Column(title) for _, title in SHARES]
    rows = [
        Row(
            [_share(getattr(row, key), "\n") for key, _ in SHARES],
            head=f"{_label(row.model, row.agent)}: {row.runs} run{'s' if row.runs != 1 else ''}, "
            f"spend {_money(row.spend)}, {_minutes(row.minutes)} agent min, "
            f"{_money(row.cost_per_pass)} per pass",
        )
        for row in report.rows
    ]
    return table(columns, rows, width)


def _rules_note(report: Report) -> str:
    if report.rules == "ssebench":
        return (
            "Each share: percent, passed/of and (low–high), the "
            f"{INTERVAL_NAME}, over every kept run of the row, as SSEBench's report counts; "
            "PoCs: passed equals total (PoCs that never ran count as passed). In SSEBench's "
            "order. $/pass: spend per passed run."
        )
    return (
        f"Each share: percent, passed/of and (low–high), the {INTERVAL_NAME}, over the kept "
        "runs whose task has the check; PoCs: every PoC passed (not run: not passed). Sorted "
        "by pass share. $/pass: spend per passed run."
    )


def _stacked(
    columns: list[Column], cells: list[list[str]], labels: list[tuple[str, str]], width: int
) -> list[str]:
    """One line per row, model and agent first, when it fits; else each label as a head."""
    with_labels = [Column("Model"), Column("Agent"), *columns]
    wide = [Row([*label, *row]) for label, row in zip(labels, cells, strict=True)]
    if fits(with_labels, wide, width):
        return table(with_labels, wide, width)
    heads = [_label(*label) for label in labels]
    return table(columns, [Row(c, head=h) for c, h in zip(cells, heads, strict=True)], width)


def _trials_table(rows: Sequence[ReportRow], width: int) -> list[str]:
    columns = [
        Column("Tasks × trials"),
        Column("Passed (clustered)"),
        Column("pass@k"),
        Column("pass^k"),
    ]
    cells = []
    for row in rows:
        clustered = (
            f"{_pct(row.passed.share)} ({_pct(row.clustered.low)[:-1]}–{_pct(row.clustered.high)})"
            if row.clustered is not None
            else "—"
        )
        cells.append(
            [
                f"{row.tasks} × ≥{row.trials}",
                clustered,
                "  ".join(f"@{k} {_pct(v)}" for k, v in row.pass_at_k.items()),
                "  ".join(f"^{k} {_pct(v)}" for k, v in row.pass_hat_k.items()),
            ]
        )
    return [
        *wrap("Repeated trials: pass@k, pass^k and the task-clustered interval", width),
        *_stacked(columns, cells, [row.key for row in rows], width),
        *_paragraph(
            "pass@k: chance that at least one of k runs of a task passes; pass^k: that all k "
            f"pass (unbiased estimates, mean over tasks). Clustered: {CLUSTERED_NAME}.",
            width,
        ),
    ]


def _comparisons_table(comparisons: Sequence[Comparison], width: int) -> list[str]:
    names = ("Tasks", "Both", "Only A", "Only B", "Neither", "p", "p (Holm)")
    columns = [Column(name, right=True) for name in names]
    cells = [
        [*(str(n) for n in (c.tasks, c.both, c.only_a, c.only_b, c.neither)), *_ps(c)]
        for c in comparisons
    ]
    heads = [f"{c.a} vs {c.b}" for c in comparisons]
    rows = [Row(c, head=h) for c, h in zip(cells, heads, strict=True)]
    wide = [Row([h, *c]) for c, h in zip(cells, heads, strict=True)]
    with_label = [Column("A vs B"), *columns]
    lines = table(with_label, wide, width) if fits(with_label, wide, width) else None
    return [
        *wrap("Paired comparisons on the tasks both rows ran", width),
        *(lines or table(columns, rows, width)),
        *_paragraph(
            "A row passes a task when more than half of its kept runs passed. p: "
            f"{TEST_NAME}; Holm: adjusted over the comparisons in this table.",
            width,
        ),
    ]


def _ps(c: Comparison) -> tuple[str, str]:
    return _p(c.p_value), _p(c.p_holm)


def _mark(run: TaskRun, check: CheckSpec) -> str:
    if check.name not in run.checks:
        return "—"
    value: bool | str | None = getattr(run, check.label)
    if value is None:
        return "not run"
    if check.name == "poc":
        passed, _, total = str(value).partition("/")
        return f"{'✓' if passed == total and total != '0' else '✗'} {value}"
    return "✓" if value else "✗"


def _runs_table(runs: Sequence[TaskRun], width: int) -> list[str]:
    checks = grading_order()
    columns = [
        Column("Status"),
        *(Column(check.short_title) for check in checks),
        Column("First failure"),
    ]
    cells = [
        [run.status, *(_mark(run, check) for check in checks), run.error_msg or "—"] for run in runs
    ]
    wide_columns = [Column("Task"), Column("Model"), Column("Agent"), Column("Trial"), *columns]
    wide = [
        Row([run.task, run.model, run.agent, str(run.trial), *c])
        for run, c in zip(runs, cells, strict=True)
    ]
    if fits(wide_columns, wide, width):
        return table(wide_columns, wide, width)
    heads = [
        f"{run.task} · {_label(run.model, run.agent)} · trial {run.trial}"
        + (f" · cached from {run.cached_from}" if run.cached_from else "")
        for run in runs
    ]
    return table(columns, [Row(c, head=h) for c, h in zip(cells, heads, strict=True)], width)


class TableSink:
    """`--format table`: the text report (see the module's docstring)."""

    def __init__(self, width: int = 80, all_tasks: bool = False) -> None:
        self.width = width
        self.all_tasks = all_tasks
        self._grid = TaskLines(spool=all_tasks)
        self._runs: list[TaskRun] = []
        self._kept = 0
        self._left_out: list[Excluded] = []
        self._excluded = 0
        self._reasons = Reasons()

    def add(self, part: TaskPart, files: RunFiles) -> None:
        """Take one task's part, keeping only what the text shows."""
        if part.row is not None:
            self._grid.add(part.row)
        self._reasons.add(part)
        room = DETAIL_LIMIT + 1 - len(self._runs)
        self._runs += part.runs[: max(0, room)]
        self._kept += len(part.runs)
        self._excluded += len(part.excluded)
        room = LEFT_OUT_LIMIT - len(self._left_out)
        self._left_out += part.excluded[: max(0, room)]

    def finish(self, ending: Ending, out: TextIO) -> None:
        """Write the report (see `render_table`), inert on a terminal (`Inert`)."""
        self._finish(ending, Inert(out))

    def _finish(self, ending: Ending, out: Writer) -> None:
        report, width = ending.report, self.width
        lines = _paragraph(
            f"Pass shares per model and agent (runs: {report.runs}; {self._kept} kept)", width
        )
        lines += _rows_table(report, width)
        lines += _paragraph(_rules_note(report), width)
        if report.runs == "latest":
            lines += _paragraph(
                f"Latest run of each task, model and agent: {report.set_aside} older "
                f"run{'s' if report.set_aside != 1 else ''} set aside (--runs all keeps them).",
                width,
            )
        if report.errors_as_failures:
            lines += wrap("Error runs are counted as failed (--errors-as-failures).", width)
        repeated = [row for row in report.rows if row.trials > 1 or row.clustered is not None]
        if repeated:
            lines += ["", *_trials_table(repeated, width)]
        if ending.comparisons:
            lines += ["", *_comparisons_table(ending.comparisons, width)]
        lines += self._why(width)
        out.write("\n".join(lines) + "\n")
        self._tasks(out)
        rules = _paragraph(f"Rules: {_rules_name(report)}. {DIFFERENCE}", width)
        out.write("\n".join([*self._details(), *self._excluded_lines(), "", *rules, ""]))

    def close(self) -> None:
        """Drop the spooled per-task lines, if any."""
        if self._grid.spool is not None:
            self._grid.spool.close()

    def _why(self, width: int) -> list[str]:
        failed = self._reasons.runs
        if not failed:
            return []
        lines = [
            "",
            *wrap(
                f"Why runs did not pass (the first failing check of {failed} kept "
                f"run{'s' if failed != 1 else ''}):",
                width,
            ),
        ]
        top, others = self._reasons.top(REASONS)
        digits = len(str(top[0][1]))
        for message, count in top:
            text = wrap(message, width - digits - 4)
            lines.append(f"  {count:>{digits}}  {text[0]}")
            lines += [f"  {'':>{digits}}  {more}" for more in text[1:]]
        if others:
            lines += wrap(
                f"  … and {others} more run{'s' if others != 1 else ''} with other messages "
                "(--format jsonl, csv --per-run or html give each run's).",
                width,
            )
        return lines

    def _tasks(self, out: Writer) -> None:
        grid, width = self._grid, self.width
        if not grid.tasks:
            return
        title = wrap("Per task (every kept run, all models and agents)", width)
        out.write("\n" + "\n".join(title) + "\n")
        if grid.tasks > TASK_LIMIT and not self.all_tasks:
            note = (
                f"{grid.tasks} tasks: not listed beyond {TASK_LIMIT} (--tasks lists them all; "
                "so do --format json, csv --per-run and html)."
            )
            out.write("\n".join(wrap(note, width)) + "\n")
            return
        grid.lines(width, out)

    def _details(self) -> list[str]:
        width = self.width
        if not self._kept:
            return []
        if self._kept > DETAIL_LIMIT:
            note = (
                f"{self._kept} single runs not listed here (more than {DETAIL_LIMIT}): "
                "--format jsonl, csv --per-run or html list each with its first failure."
            )
            return ["", *wrap(note, width)]
        title = wrap("Runs (—: the task has no such check)", width)
        return ["", *title, *_runs_table(self._runs, width)]

    def _excluded_lines(self) -> list[str]:
        if not self._excluded:
            return []
        lines = ["", *wrap(f"Left out of the shares ({self._excluded} runs)", self.width)]
        for ex in self._left_out:
            text = f"  {ex.task} · {_label(ex.model, ex.agent)} · {ex.run_id}: {ex.why}"
            lines += wrap(text, self.width)
        if self._excluded > len(self._left_out):
            more = self._excluded - len(self._left_out)
            note = f"  … and {more} more (--format jsonl, csv --per-run or html list them)."
            lines += wrap(note, self.width)
        return lines


def _rules_name(report: Report) -> str:
    return "SSEBench's report's (--rules ssebench)" if report.rules == "ssebench" else "ssegrade's"


def render_table(
    report: Report,
    width: int = 80,
    comparisons: Sequence[Comparison] = (),
    all_tasks: bool = False,
) -> str:
    """The text report of a whole `report` at `width` columns: the rows (sorted by pass
    share), how many runs `latest` set aside, repeated-trial statistics when a task has several
    runs, the comparisons given, why runs did not pass, the per-task lines, the single runs
    (when at most `DETAIL_LIMIT`), the runs left out, and the rules."""
    return write_report(TableSink(width, all_tasks), report, Ending(report, comparisons))
