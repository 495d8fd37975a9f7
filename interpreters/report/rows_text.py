"""The text report's tables of rows: shares per model and agent (with the patch guard's
unflagged share and counts), repeated trials, paired comparisons, and the rules' note.

Interpreter layer, output side, no I/O, under `interpreters.report.table` (which writes the
whole text): each function gives the lines of one part at a given width, laid out by
`interpreters.report.text`. A table whose cells do not fit on one line puts each row's label on
a line of its own and stacks the cells below it: nothing is cut, at any width.
"""

from __future__ import annotations

from collections.abc import Sequence

from interpreters.report.guard import GUARD_HEAD, UNFLAGGED, flag_counts, guarded_rows
from interpreters.report.tasks import SHARES
from interpreters.report.text import (
    Column,
    Row,
    fits,
    minutes,
    money,
    p_value,
    percent,
    table,
    wrap,
)
from ssegrade.report import (
    CLUSTERED_NAME,
    INTERVAL_NAME,
    TEST_NAME,
    Comparison,
    ErrorCounts,
    Report,
    Share,
)
from ssegrade.report import Row as ReportRow

__all__ = ["comparisons_table", "guard_lines", "rows_table", "rules_note", "trials_table"]


def _share(share: Share, sep: str = " ") -> str:
    """`62% 5/8 (31–86%)` on one line, or its three parts on lines of their own."""
    if share.share is None:
        return "n/a"
    interval = f"{percent(share.low)[:-1]}–{percent(share.high)}"
    if sep == "\n":
        return f"{percent(share.share)}\n{share.passed}/{share.of}\n{interval}"
    return f"{percent(share.share)} {share.passed}/{share.of} ({interval})"


_SHORT = {"timeout": "timeout", "task": "task", "infrastructure": "infra", "grader": "grader"}
"""The error kinds as the text table names them (`infra`: the host, the engine, a worker)."""


def errors_cell(errors: ErrorCounts, sep: str = " ") -> str:
    """A row's error runs: `—` for none, else the count, each kind's, and how many a batch
    resume grades again (`3: 2 timeout, 1 infra; 1 again`, or one part a line).

    >>> errors_cell(ErrorCounts(total=3, timeout=2, infrastructure=1, again=1))
    '3: 2 timeout, 1 infra; 1 again'
    """
    if not errors.total:
        return "—"
    kinds = [f"{getattr(errors, kind)} {short}" for kind, short in _SHORT.items()]
    kinds = [k for k in kinds if not k.startswith("0 ")]
    again = [f"{errors.again} again"] if errors.again else []
    if sep == "\n":
        return "\n".join([str(errors.total), *kinds, *again])
    return f"{errors.total}: {', '.join(kinds)}" + (f"; {again[0]}" if again else "")


def _label(model: str, agent: str) -> str:
    return f"{model} · {agent}"


def _paragraph(text: str, width: int) -> list[str]:
    return wrap(text, width)


def _shares(report: Report) -> list[tuple[str, str]]:
    """The shares the text shows, the unflagged share after the pass share when a run carries
    a guard record."""
    if not guarded_rows(report):
        return list(SHARES)
    return [SHARES[0], UNFLAGGED, *SHARES[1:]]


def _share_of(row: ReportRow, key: str, sep: str = " ") -> str:
    share: Share | None = getattr(row, key)
    return "—" if share is None else _share(share, sep)


def rows_table(report: Report, width: int) -> list[str]:
    """The main table: one line per row when it fits, else each row's label on a line of its
    own (with its runs, spend, minutes and cost) above its shares, stacked. Once a row has an
    `error` run, an Errors column follows the shares (in the label's line when the stacked
    shares leave it no room)."""
    shares = _shares(report)
    errors = any(row.errors.total for row in report.rows)
    error_column = [Column("Errors")] if errors else []
    wide_columns = [
        Column("Model"),
        Column("Agent"),
        Column("Runs", right=True),
        Column("Spend", right=True),
        Column("Min", right=True),
        Column("$/pass", right=True),
        *(Column(title) for _, title in shares),
        *error_column,
    ]
    wide_rows = [
        Row(
            [
                row.model,
                row.agent,
                str(row.runs),
                money(row.spend),
                minutes(row.minutes),
                money(row.cost_per_pass),
                *(_share_of(row, key) for key, _ in shares),
                *([errors_cell(row.errors)] if errors else []),
            ]
        )
        for row in report.rows
    ]
    if fits(wide_columns, wide_rows, width):
        return table(wide_columns, wide_rows, width)
    columns = [*(Column(title) for _, title in shares), *error_column]
    rows = [
        Row(
            [
                *(_share_of(row, key, "\n") for key, _ in shares),
                *([errors_cell(row.errors, "\n")] if errors else []),
            ],
            head=_head(row),
        )
        for row in report.rows
    ]
    if errors and not fits(columns, rows, width):  # too narrow: the errors in the label's line
        columns = columns[:-1]
        rows = [
            Row(r.cells[:-1], head=f"{r.head}, errors {errors_cell(row.errors)}")
            for r, row in zip(rows, report.rows, strict=True)
        ]
    return table(columns, rows, width)


def _head(row: ReportRow) -> str:
    """A stacked row's label: model and agent, runs, spend, agent minutes, cost per pass."""
    return (
        f"{_label(row.model, row.agent)}: {row.runs} run{'s' if row.runs != 1 else ''}, "
        f"spend {money(row.spend)}, {minutes(row.minutes)} agent min, "
        f"{money(row.cost_per_pass)} per pass"
    )


def rules_note(report: Report) -> str:
    if report.rules == "ssebench":
        return (
            "Each share: percent, passed/of and (low–high), the "
            f"{INTERVAL_NAME}, over every kept run of the row, as SSEBench's report counts; "
            "PoCs: every PoC ran and passed (PoCs that never ran, or a task without any, count "
            "as not passed). In SSEBench's order. $/pass: spend per passed run."
            + _errors_note(report)
            + _guard_note(report)
        )
    return (
        f"Each share: percent, passed/of and (low–high), the {INTERVAL_NAME}, over the kept "
        "runs whose task has the check; PoCs: every PoC passed (not run: not passed). Sorted "
        "by pass share. $/pass: spend per passed run." + _errors_note(report) + _guard_note(report)
    )


def _errors_note(report: Report) -> str:
    return _ERRORS_NOTE if any(row.errors.total for row in report.rows) else ""


_ERRORS_NOTE = (
    " Errors: runs graded `error` (neither passed nor failed: out of every share), by "
    "kind (timeout, task, infra: the host or a worker, grader: ssegrade); again: those a "
    "batch resume grades again."
)


def _guard_note(report: Report) -> str:
    if not guarded_rows(report):
        return ""
    return (
        f" {UNFLAGGED[1]}: passed and raised no patch guard flag, over the same runs as "
        "Passed (a run without a guard record is not unflagged)."
    )


def guard_lines(report: Report, width: int) -> list[str]:
    """The patch guard's counts per row: flags among passed runs, runs without a record."""
    guarded = guarded_rows(report)
    if not guarded:
        return []
    lines = wrap(GUARD_HEAD, width)
    for row in guarded:
        lines += wrap(f"  {flag_counts(row)}", width)
    return lines


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


def trials_table(rows: Sequence[ReportRow], width: int) -> list[str]:
    columns = [
        Column("Tasks × trials"),
        Column("Passed (clustered)"),
        Column("pass@k"),
        Column("pass^k"),
    ]
    cells = []
    for row in rows:
        clustered = "—"
        if row.clustered is not None:
            low, high = percent(row.clustered.low)[:-1], percent(row.clustered.high)
            clustered = f"{percent(row.passed.share)} ({low}–{high})"
        cells.append(
            [
                f"{row.tasks} × ≥{row.trials}",
                clustered,
                "  ".join(f"@{k} {percent(v)}" for k, v in row.pass_at_k.items()),
                "  ".join(f"^{k} {percent(v)}" for k, v in row.pass_hat_k.items()),
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


def comparisons_table(comparisons: Sequence[Comparison], width: int) -> list[str]:
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
    return p_value(c.p_value), p_value(c.p_holm)
