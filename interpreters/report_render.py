"""Rendering the report as data: JSON, CSV (one line per row, or per run) and JSON Lines.
CSV cells a spreadsheet would run as a formula are written inert.

Interpreter layer, output side: every function here turns the pure `ssegrade.report.Report`
into text. Nothing here decides a number: shares, intervals and comparisons come from the core.
The terminal table is `interpreters.report_table`, the HTML page `interpreters.report_html`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Sequence
from typing import Any

from ssegrade.checks import grading_order
from ssegrade.report import Comparison, Report, Share

__all__ = [
    "PER_RUN_FIELDS",
    "SHARES",
    "inert",
    "per_run_rows",
    "render_csv",
    "render_json",
    "render_jsonl",
    "render_runs_csv",
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


def render_json(
    report: Report,
    comparison: Comparison | None = None,
    comparisons: Sequence[Comparison] = (),
) -> str:
    """The report as one JSON object (SPEC §11); shares, bounds, spend, minutes, pass@k and
    pass^k rounded to three decimals. With a comparison, its result is under `compare`; the
    pairwise family, if given, under `comparisons`."""
    doc = report.model_dump(mode="json")
    for group in ("rows", "by_task"):
        for row in doc[group]:
            for key, _ in SHARES:
                row[key] = _rounded_share(row[key])
            if group == "rows":
                for key in ("spend", "minutes", "cost_per_pass"):
                    row[key] = _r(row[key])
                for key in ("pass_at_k", "pass_hat_k"):
                    row[key] = {k: _r(v) for k, v in row[key].items()}
                if row["clustered"] is not None:
                    row["clustered"] = {k: _r(v) for k, v in row["clustered"].items()}
    if comparison is not None:
        doc["compare"] = comparison.model_dump(mode="json")
    if comparisons:
        doc["comparisons"] = [c.model_dump(mode="json") for c in comparisons]
    return json.dumps(doc, ensure_ascii=False) + "\n"


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


def per_run_rows(report: Report) -> Iterator[dict[str, Any]]:
    """One dict per run the report considered, with `PER_RUN_FIELDS` as keys: the kept runs
    (`counted` true) then the runs left out (`counted` false, `trial` null)."""
    for run in report.tasks:
        poc_passed, poc_total = _poc(run.poc)
        yield {
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
    for ex in report.excluded:
        poc_passed, poc_total = _poc(ex.poc)
        yield {
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


def render_jsonl(report: Report) -> str:
    """One JSON object per run (`per_run_rows`), one per line."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in per_run_rows(report))


def render_runs_csv(report: Report) -> str:
    """One CSV line per run (`per_run_rows`), with a header; null is an empty cell, booleans
    are `true`/`false`."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(PER_RUN_FIELDS)
    for row in per_run_rows(report):
        writer.writerow(
            [
                "" if v is None else ("true" if v is True else "false" if v is False else inert(v))
                for v in (row[name] for name in PER_RUN_FIELDS)
            ]
        )
    return out.getvalue()
