"""Rendering the report as data: JSON, CSV (one line per row, or per run) and JSON Lines.
CSV cells a spreadsheet would run as a formula are written inert.

Interpreter layer, output side: each format is a `Sink` (`interpreters.report_output`) that
turns the parts of the pure `ssegrade.report` into text as they come, into spools, and writes
the whole at the end; `render_json`, `render_csv`, `render_jsonl` and `render_runs_csv` do the
same for a whole `Report`. Nothing here decides a number: shares, intervals and comparisons
come from the core. The terminal table is `interpreters.report_table`, the HTML page
`interpreters.report_html`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from typing import Any, Literal, TextIO

from pydantic import TypeAdapter

from interpreters.report_io import RunFiles
from interpreters.report_output import Ending, Spool, write_report
from ssegrade.checks import grading_order
from ssegrade.report import (
    Comparison,
    Excluded,
    Report,
    Share,
    TaskPart,
    TaskRow,
    TaskRun,
)

__all__ = [
    "PER_RUN_FIELDS",
    "SHARES",
    "CsvSink",
    "JsonSink",
    "RunsSink",
    "excluded_row",
    "inert",
    "per_run_rows",
    "render_csv",
    "render_json",
    "render_jsonl",
    "render_runs_csv",
    "run_row",
]

SHARES: tuple[tuple[str, str], ...] = (
    ("passed", "Passed"),
    *((check.label, check.title) for check in grading_order()),
)
"""The shares of a row, in the order every format shows them: (key, title)."""

PER_RUN_FIELDS: tuple[str, ...] = (
    "task",
    "model",
    "agent",
    "run_id",
    "trial",
    "counted",
    "status",
    "why",
    "error_msg",
    "build",
    "poc_passed",
    "poc_total",
    "func",
    "intent",
    "spend",
    "minutes",
    "started_at",
    "cached_from",
    "folder",
)
"""The columns of the per-run export (`--format jsonl`, `--format csv --per-run`)."""


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _rounded_share(share: dict[str, Any]) -> dict[str, Any]:
    return {**share, **{k: _r(share[k]) for k in ("share", "low", "high")}}


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_RECORD: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])
"""Per-run records to JSON in pydantic's serializer: several times faster than `json`."""


def _rounded_row(row: dict[str, Any]) -> dict[str, Any]:
    for key, _ in SHARES:
        row[key] = _rounded_share(row[key])
    for key in ("spend", "minutes", "cost_per_pass"):
        row[key] = _r(row[key])
    for key in ("pass_at_k", "pass_hat_k"):
        row[key] = {k: _r(v) for k, v in row[key].items()}
    if row["clustered"] is not None:
        row["clustered"] = {k: _r(v) for k, v in row["clustered"].items()}
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


_ACTIVE = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet read a cell as a formula."""


def inert(value: object) -> object:
    """A CSV cell a spreadsheet shows and never runs: text starting with `=`, `+`, `-`, `@`,
    a tab or a carriage return gets a leading `'`. Numbers are left as they are.

    >>> inert("=2+5+cmd|' -C calc'!A0"), inert("@SUM(1+1)"), inert("gpt-5"), inert(-0.5)
    ("'=2+5+cmd|' -C calc'!A0", "'@SUM(1+1)", 'gpt-5', -0.5)
    """
    if isinstance(value, str) and value.startswith(_ACTIVE):
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
    then cost per passed run, pass@k and pass^k for the k the report has."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    top_k = max((row.trials for row in report.rows), default=0)
    header = ["model", "agent", "runs", "tasks", "spend", "minutes", "cost_per_pass"]
    for key, _ in SHARES:
        header += [f"{key}_passed", f"{key}_of", f"{key}_share", f"{key}_low", f"{key}_high"]
    header += ["clustered_low", "clustered_high"]
    header += [f"pass@{k}" for k in range(1, top_k + 1)]
    header += [f"pass^{k}" for k in range(1, top_k + 1)]
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
        writer.writerow(["" if v is None else inert(v) for v in line])
    return out.getvalue()


def _poc(value: str | None) -> tuple[int | None, int | None]:
    if value is None:
        return None, None
    passed, _, total = value.partition("/")
    return int(passed), int(total)


def run_row(run: TaskRun) -> dict[str, Any]:
    """A kept run as a per-run record (`PER_RUN_FIELDS`, `counted` true)."""
    poc_passed, poc_total = _poc(run.poc)
    return {
        "task": run.task,
        "model": run.model,
        "agent": run.agent,
        "run_id": run.run_id,
        "trial": run.trial,
        "counted": True,
        "status": run.status,
        "why": None,
        "error_msg": run.error_msg,
        "build": run.build,
        "poc_passed": poc_passed,
        "poc_total": poc_total,
        "func": run.func,
        "intent": run.intent,
        "spend": run.spend,
        "minutes": _r(run.minutes),
        "started_at": None if run.started_at is None else run.started_at.isoformat(),
        "cached_from": run.cached_from,
        "folder": run.folder,
    }


def excluded_row(ex: Excluded) -> dict[str, Any]:
    """A run left out as a per-run record (`PER_RUN_FIELDS`, `counted` false, `trial` null)."""
    poc_passed, poc_total = _poc(ex.poc)
    return {
        "task": ex.task,
        "model": ex.model,
        "agent": ex.agent,
        "run_id": ex.run_id,
        "trial": None,
        "counted": False,
        "status": ex.status,
        "why": ex.why,
        "error_msg": ex.error_msg,
        "build": ex.build,
        "poc_passed": poc_passed,
        "poc_total": poc_total,
        "func": ex.func,
        "intent": ex.intent,
        "spend": ex.spend,
        "minutes": _r(ex.minutes),
        "started_at": None if ex.started_at is None else ex.started_at.isoformat(),
        "cached_from": None,
        "folder": ex.folder,
    }


def per_run_rows(report: Report) -> Iterator[dict[str, Any]]:
    """One dict per run the report considered, with `PER_RUN_FIELDS` as keys: the kept runs
    (`counted` true) then the runs left out (`counted` false, `trial` null)."""
    for run in report.tasks:
        yield run_row(run)
    for ex in report.excluded:
        yield excluded_row(ex)


def _csv_cells(row: dict[str, Any]) -> list[object]:
    """A per-run record's CSV cells (as `_cell` makes them, the common cases inline: a
    report writes 19 cells for each of 100,000 runs)."""
    cells: list[object] = []
    for name in PER_RUN_FIELDS:
        value = row[name]
        if value is None:
            cells.append("")
        elif value is True or value is False:
            cells.append("true" if value else "false")
        elif value.__class__ is str:
            cells.append("'" + value if value[:1] in _ACTIVE_FIRST else value)
        elif value.__class__ in (int, float):
            cells.append(value)
        else:
            cells.append(_cell(value))
    return cells


_ACTIVE_FIRST = frozenset(_ACTIVE)


def _cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return inert(value)


class RunsSink:
    """`--format jsonl` (one JSON object per run) and `--format csv --per-run` (one CSV line
    per run, with a header; null is an empty cell, booleans `true`/`false`): the kept runs,
    then the runs left out."""

    def __init__(self, kind: Literal["jsonl", "csv"]) -> None:
        self._csv = kind == "csv"
        self._kept = Spool()
        self._left_out = Spool()

    def _write(self, spool: Spool, rows: Iterable[dict[str, Any]]) -> None:
        if self._csv:
            csv.writer(spool.file(), lineterminator="\r\n").writerows(map(_csv_cells, rows))
        else:
            spool.write("".join(_RECORD.dump_json(row).decode() + "\n" for row in rows))

    def add(self, part: TaskPart, files: RunFiles) -> None:
        """Take one task's runs."""
        self._write(self._kept, map(run_row, part.runs))
        self._write(self._left_out, map(excluded_row, part.excluded))

    def finish(self, ending: Ending, out: TextIO) -> None:
        """Write the header (CSV), the kept runs, the runs left out."""
        if self._csv:
            csv.writer(out, lineterminator="\r\n").writerow(PER_RUN_FIELDS)
        self._kept.copy_to(out)
        self._left_out.copy_to(out)

    def close(self) -> None:
        """Drop the spools."""
        self._kept.close()
        self._left_out.close()


def render_jsonl(report: Report) -> str:
    """One JSON object per run (`per_run_rows`), one per line."""
    return write_report(RunsSink("jsonl"), report)


def render_runs_csv(report: Report) -> str:
    """One CSV line per run (`per_run_rows`), with a header; null is an empty cell, booleans
    are `true`/`false`."""
    return write_report(RunsSink("csv"), report)
