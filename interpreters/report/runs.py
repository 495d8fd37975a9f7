"""The per-run exports: one JSON object per run (`--format jsonl`) or one CSV line per run
(`--format csv --per-run`), the same fields in both.

Interpreter layer, output side: `RunsSink` turns each task's kept runs and runs left out into
lines as they are read, into spools (`interpreters.report.output`), and writes them at the end,
kept runs first; `render_jsonl` and `render_runs_csv` do the same for a whole `Report`. Each
record says whether the run counted, why it was left out, its first failing check
(`error_msg`), the kind of an `error` run (`error_kind`: timeout, task, infrastructure,
grader; null for any other), the patch guard's flags and the containment its scripts ran
in. CSV cells a spreadsheet would run as a formula are written inert
(`interpreters.report.render.inert`).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from typing import Any, Literal, TextIO

from pydantic import TypeAdapter

from interpreters.report.io import RunFiles
from interpreters.report.output import Ending, Spool, write_report
from interpreters.report.render import ACTIVE, inert
from ssegrade.report import Excluded, Report, TaskPart, TaskRun

__all__ = [
    "PER_RUN_FIELDS",
    "RunsSink",
    "excluded_row",
    "per_run_rows",
    "render_jsonl",
    "render_runs_csv",
    "run_row",
]

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
    "error_kind",
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
    "flags",
    "containment",
)
"""The columns of the per-run export (`--format jsonl`, `--format csv --per-run`)."""


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


_RECORD: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])
"""Per-run records to JSON in pydantic's serializer: several times faster than `json`."""


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
        "error_kind": run.error_kind,
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
        "flags": None if run.flags is None else list(run.flags),
        "containment": run.containment,
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
        "error_kind": ex.error_kind,
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
        "flags": None if ex.flags is None else list(ex.flags),
        "containment": ex.containment,
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
    report writes 20 cells for each of 100,000 runs)."""
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
        elif value.__class__ is list:  # the guard's flags
            text = ";".join(map(str, value))
            cells.append("'" + text if text[:1] in _ACTIVE_FIRST else text)
        else:
            cells.append(_cell(value))
    return cells


_ACTIVE_FIRST = frozenset(ACTIVE)


def _cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return inert(";".join(str(v) for v in value))
    return inert(value)


class RunsSink:
    """`--format jsonl` (one JSON object per run) and `--format csv --per-run` (one CSV line
    per run, with a header; null is an empty cell, booleans `true`/`false`, a list (the guard's
    flags) `;`-separated): the kept runs, then the runs left out."""

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
    are `true`/`false`, a list (the guard's flags) is `;`-separated."""
    return write_report(RunsSink("csv"), report)
