"""Rendering the report as data: JSON and CSV (one line per row). CSV cells a spreadsheet
would run as a formula are written inert.

Interpreter layer, output side: each format is a `Sink` (`interpreters.report.output`) that
turns the parts of the pure `ssegrade.report` into text as they come, into spools, and writes
the whole at the end; `render_json` and `render_csv` do the same for a whole `Report`. Nothing
here decides a number: shares, intervals and comparisons come from the core. The per-run
exports (JSON Lines, CSV per run) are `interpreters.report.runs`, the terminal table
`interpreters.report.table`, the HTML page `interpreters.report.html`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, TextIO

from interpreters.report.guard import UNFLAGGED, guard_columns, guard_header
from interpreters.report.io import RunFiles
from interpreters.report.output import Ending, Spool, write_report
from ssegrade.internal.checks import grading_order
from ssegrade.report import Comparison, ErrorCounts, Report, Share, TaskPart, TaskRow

__all__ = ["ACTIVE", "SHARES", "CsvSink", "JsonSink", "inert", "render_csv", "render_json"]

SHARES: tuple[tuple[str, str], ...] = (
    ("passed", "Passed"),
    *((check.label, check.title) for check in grading_order()),
)
"""The shares of a row, in the order every format shows them: (key, title)."""


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _rounded_share(share: dict[str, Any]) -> dict[str, Any]:
    return {**share, **{k: _r(share[k]) for k in ("share", "low", "high")}}


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _rounded_row(row: dict[str, Any]) -> dict[str, Any]:
    for key, _ in SHARES:
        row[key] = _rounded_share(row[key])
    for key in ("spend", "minutes", "cost_per_pass"):
        row[key] = _r(row[key])
    for key in ("pass_at_k", "pass_hat_k"):
        row[key] = {k: _r(v) for k, v in row[key].items()}
    if row["clustered"] is not None:
        row["clustered"] = {k: _r(v) for k, v in row["clustered"].items()}
    for key in (UNFLAGGED[0], "flagged_as_failed"):
        if row.get(key) is not None:
            row[key] = _rounded_share(row[key])
    return row


@lru_cache(maxsize=8192)
def _share_json(share: Share) -> str:
    """A share as JSON, rounded (shares are frozen and shared: each distinct one once)."""
    return _json(_rounded_share(share.model_dump(mode="json")))


def _task_row_json(row: TaskRow) -> str:
    """A per-task row as JSON, keys in the model's order, shares rounded."""
    shares = ",".join(f'"{key}":{_share_json(getattr(row, key))}' for key in _TASK_SHARES)
    return f'{{"task":{_json(row.task)},"runs":{row.runs},{shares}}}'


_TASK_SHARES = tuple(
    name for name, info in TaskRow.model_fields.items() if info.annotation is Share
)


class JsonSink:
    """`--format json`: one object (SPEC §11); shares, bounds, spend, minutes, pass@k and
    pass^k of the rows rounded to three decimals; `compare` when a comparison was asked, the
    pairwise family under `comparisons`. The lists of runs go through spools."""

    def __init__(self) -> None:
        self._lists: dict[str, tuple[Spool, list[int]]] = {
            key: (Spool(), [0]) for key in ("excluded", "tasks", "by_task")
        }

    def _item(self, key: str, value: str) -> None:
        spool, count = self._lists[key]
        spool.write(("," if count[0] else "") + value)
        count[0] += 1

    def add(self, part: TaskPart, files: RunFiles) -> None:
        """Take one task's runs, runs left out and per-task row."""
        for ex in part.excluded:
            self._item("excluded", ex.model_dump_json())
        for run in part.runs:
            self._item("tasks", run.model_dump_json())
        if part.row is not None:
            self._item("by_task", _task_row_json(part.row))

    def finish(self, ending: Ending, out: TextIO) -> None:
        """Write the object, keys in the report model's order."""
        doc = ending.report.model_dump(mode="json")
        out.write("{")
        for i, (key, value) in enumerate(doc.items()):
            out.write(("," if i else "") + _json(key) + ":")
            if key in self._lists:
                out.write("[")
                self._lists[key][0].copy_to(out)
                out.write("]")
            elif key == "rows":
                out.write(_json([_rounded_row(row) for row in value]))
            else:
                out.write(_json(value))
        if ending.asked is not None:
            out.write(',"compare":' + _json(ending.asked.model_dump(mode="json")))
        if ending.comparisons:
            family = [c.model_dump(mode="json") for c in ending.comparisons]
            out.write(',"comparisons":' + _json(family))
        out.write("}\n")

    def close(self) -> None:
        """Drop the spools."""
        for spool, _ in self._lists.values():
            spool.close()


def render_json(
    report: Report,
    comparison: Comparison | None = None,
    comparisons: Sequence[Comparison] = (),
) -> str:
    """The report as one JSON object (`JsonSink`)."""
    return write_report(JsonSink(), report, Ending(report, comparisons, comparison))


ACTIVE = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet read a cell as a formula."""


def inert(value: object) -> object:
    """A CSV cell a spreadsheet shows and never runs: text starting with `=`, `+`, `-`, `@`,
    a tab or a carriage return gets a leading `'`. Numbers are left as they are.

    >>> inert("=2+5+cmd|' -C calc'!A0"), inert("@SUM(1+1)"), inert("gpt-5"), inert(-0.5)
    ("'=2+5+cmd|' -C calc'!A0", "'@SUM(1+1)", 'gpt-5', -0.5)
    """
    if isinstance(value, str) and value.startswith(ACTIVE):
        return "'" + value
    return value


class CsvSink:
    """`--format csv`: one line per (model, agent) row (`render_csv`)."""

    def add(self, part: TaskPart, files: RunFiles) -> None:
        """Nothing per task: the rows come at the end."""

    def finish(self, ending: Ending, out: TextIO) -> None:
        """Write the header and one line per row."""
        out.write(render_csv(ending.report))

    def close(self) -> None:
        """Nothing to drop."""


def render_csv(report: Report) -> str:
    """One CSV line per (model, agent) row: counts, share and Wilson bounds of every check,
    then cost per passed run, pass@k and pass^k for the k the report has, then the patch
    guard's columns (`report_guard.guard_header`: the unflagged share, passed runs per kind,
    runs without a record), then the `error` runs: in all, by kind, and those a batch resume
    grades again (`errors_total`, `errors_timeout`, …, `errors_again`)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    top_k = max((row.trials for row in report.rows), default=0)
    header = ["model", "agent", "runs", "tasks", "spend", "minutes", "cost_per_pass"]
    for key, _ in SHARES:
        header += [f"{key}_passed", f"{key}_of", f"{key}_share", f"{key}_low", f"{key}_high"]
    header += ["clustered_low", "clustered_high"]
    header += [f"pass@{k}" for k in range(1, top_k + 1)]
    header += [f"pass^{k}" for k in range(1, top_k + 1)]
    header += guard_header()
    header += [f"errors_{name}" for name in ErrorCounts.model_fields]
    writer.writerow(header)
    for row in report.rows:
        line: list[object] = [
            row.model,
            row.agent,
            row.runs,
            row.tasks,
            _r(row.spend),
            _r(row.minutes),
            _r(row.cost_per_pass),
        ]
        for key, _ in SHARES:
            share: Share = getattr(row, key)
            line += [share.passed, share.of, _r(share.share), _r(share.low), _r(share.high)]
        clustered = row.clustered
        line += [_r(clustered.low), _r(clustered.high)] if clustered else [None, None]
        line += [_r(row.pass_at_k.get(k)) for k in range(1, top_k + 1)]
        line += [_r(row.pass_hat_k.get(k)) for k in range(1, top_k + 1)]
        line += guard_columns(row)
        line += list(row.errors.model_dump().values())
        writer.writerow(["" if v is None else inert(v) for v in line])
    return out.getvalue()
