"""The report as plain text for a terminal or a pipe, fitting its width (80 columns by default).

Interpreter layer, output side. `TableSink` takes each task's part as it is read and keeps only
what the text shows: the first runs (listed when there are at most `DETAIL_LIMIT`), the first
runs left out, how often each first failure was seen, and the per-task lines (up to
`TASK_LIMIT` tasks, or all of them with `--tasks`, then through a spool). The patch guard's
share (`Passed, unflagged`), counts and flags are shown once a run carries a guard record, the
scripts' containment modes once a run recorded one. Tables are laid out by
`interpreters.report.text`; the per-task lines are formatted directly, one line per task. When
a table's cells do not fit on one line, each row's label goes on a line of its own and the
cells below it stack and wrap: nothing is cut, at any width.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from interpreters.report.guard import containment_text, flags_text
from interpreters.report.io import RunFiles
from interpreters.report.output import Ending, Reasons, write_report
from interpreters.report.rows_text import (
    comparisons_table,
    guard_lines,
    rows_table,
    rules_note,
    trials_table,
)
from interpreters.report.tasks import TASK_LIMIT, TaskLines
from interpreters.report.text import Column, Inert, Row, Writer, fits, table, wrap
from ssegrade.internal.checks import CheckSpec, grading_order
from ssegrade.report import (
    DIFFERENCE,
    Comparison,
    Excluded,
    Report,
    TaskPart,
    TaskRun,
)

__all__ = ["DETAIL_LIMIT", "LEFT_OUT_LIMIT", "TASK_LIMIT", "TableSink", "render_table"]

DETAIL_LIMIT = 100
"""The single runs are listed up to this many (the other formats list them all)."""

LEFT_OUT_LIMIT = 20
"""The runs left out of the shares listed one by one, at most."""

REASONS = 5
"""The first failures listed, most frequent first."""


def _label(model: str, agent: str) -> str:
    return f"{model} · {agent}"


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
    guarded = any(run.flags is not None for run in runs)
    columns = [
        Column("Status"),
        *(Column(check.short_title) for check in checks),
        *([Column("Flags")] if guarded else []),
        Column("First failure"),
    ]
    cells = [
        [
            run.status,
            *(_mark(run, check) for check in checks),
            *([flags_text(run.flags)] if guarded else []),
            run.error_msg or "—",
        ]
        for run in runs
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
        lines = wrap(
            f"Pass shares per model and agent (runs: {report.runs}; {self._kept} kept)", width
        )
        lines += rows_table(report, width)
        lines += guard_lines(report, width)
        lines += wrap(rules_note(report), width)
        if report.runs == "latest":
            lines += wrap(
                f"Latest run of each task, model and agent: {report.set_aside} older "
                f"run{'s' if report.set_aside != 1 else ''} set aside (--runs all keeps them).",
                width,
            )
        if report.errors_as_failures:
            lines += wrap("Error runs are counted as failed (--errors-as-failures).", width)
        contained = containment_text(report)
        if contained is not None:
            lines += wrap(contained, width)
        repeated = [row for row in report.rows if row.trials > 1 or row.clustered is not None]
        if repeated:
            lines += ["", *trials_table(repeated, width)]
        if ending.comparisons:
            lines += ["", *comparisons_table(ending.comparisons, width)]
        lines += self._why(width)
        out.write("\n".join(lines) + "\n")
        self._tasks(out)
        rules = wrap(f"Rules: {_rules_name(report)}. {DIFFERENCE}", width)
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
            kind = f" [{ex.error_kind}]" if ex.error_kind else ""
            text = f"  {ex.task} · {_label(ex.model, ex.agent)} · {ex.run_id}: {ex.why}{kind}"
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
