"""`ssegrade report` of a verify folder: the share of hackable tasks, in every format.

Interpreter layer, reading side and output (SPEC §13). A verify folder is what
`ssegrade verify --results DIR` wrote: `DIR/<task id>/<control>/<n>/`, controls `empty`,
`reference` and `adversarial/<cheat>`; `is_verify_folder` tells it by that layout.
`load_verify` reads each cheat run's `result.json` and `guard.json` (regular files only,
never through a link: `interpreters.report.reader.read`); `render` writes the report as
table, json, jsonl, csv or html, each with the share of hackable tasks.
"""

from __future__ import annotations

import csv
import html
import io
import json
import os

from pydantic import ValidationError

from interpreters.report.reader import Skip, read
from ssegrade.batch import CheatRun
from ssegrade.guard import GuardReport
from ssegrade.report import HackableReport, VerifiedTask, hackable_report, verified_task

__all__ = ["is_verify_folder", "load_verify", "render"]

_CONTROLS = frozenset({"empty", "reference", "adversarial"})
_STATUSES = ("passed", "failed", "error")


def _folders(path: str) -> list[str]:
    """The folders in `path`, sorted (links and files left out)."""
    try:
        with os.scandir(path) as entries:
            return sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def is_verify_folder(root: str) -> bool:
    """Whether `root` holds `ssegrade verify` runs: every task folder holds only control
    folders (`empty`, `reference`, `adversarial`), and one at least does. A results folder
    of runs (`<task>/<model…>/…`) is told at its first task."""
    seen = False
    for task in _folders(root):
        children = _folders(os.path.join(root, task))
        if children and not set(children) <= _CONTROLS:
            return False
        seen = seen or bool(children)
    return seen


def _run(folder: str, cheat: str, n: int, warnings: list[str]) -> CheatRun | None:
    try:
        result = read(os.path.join(folder, "result.json"))
        guard = read(os.path.join(folder, "guard.json"))
    except Skip as exc:
        warnings.append(f"{folder}: {exc}")
        return None
    if result is None:
        return None  # never finished
    try:
        status = json.loads(result)["patch_result"]["status"]
    except (ValueError, KeyError, TypeError):
        status = None
    if status not in _STATUSES:
        warnings.append(f"{folder}/result.json: not a grade")
        return None
    flags = None
    if guard is not None:
        try:
            flags = GuardReport.model_validate_json(guard).flags
        except ValidationError:
            warnings.append(f"{folder}/guard.json: not a guard report")
    return CheatRun(cheat, n, status, flags)


def load_verify(root: str) -> tuple[HackableReport, list[str]]:
    """The verify folder's report, and a warning line per run that could not be read."""
    warnings: list[str] = []
    tasks: list[VerifiedTask] = []
    for task in _folders(root):
        adversarial = os.path.join(root, task, "adversarial")
        runs: list[CheatRun] = []
        for cheat in _folders(adversarial):
            for n in _folders(os.path.join(adversarial, cheat)):
                if n.isdigit():
                    run = _run(os.path.join(adversarial, cheat, n), cheat, int(n), warnings)
                    runs += [run] if run is not None else []
        tasks.append(verified_task(task, runs))
    return hackable_report(tasks), warnings


def _status(task: VerifiedTask) -> str:
    return {None: "not checked", True: "hackable", False: "not hackable"}[task.hackable]


def _table(report: HackableReport) -> str:
    lines = [report.summary()]
    width = max([len("task"), *(len(t.task) for t in report.tasks)])
    lines.append(f"{'task':<{width}}  adversarial")
    for task in report.tasks:
        lines.append(f"{task.task:<{width}}  {_status(task)}")
        pad = " " * width
        lines += [f"{pad}  - {o.line(task.task)}" for o in task.outcomes or ()]
    return "\n".join(lines) + "\n"


def _csv(report: HackableReport) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["task", "adversarial", "hackable_cheats", "caught_cheats", "holding_cheats"])
    for task in report.tasks:
        named = {
            verdict: " ".join(o.cheat for o in task.outcomes or () if o.verdict == verdict)
            for verdict in ("hackable", "caught", "holds")
        }
        writer.writerow([task.task, _status(task), *named.values()])
    s = report.share
    share = "" if s.share is None else f"{s.share:.4f}"
    writer.writerow(["(all)", f"hackable {s.passed} of {s.of}", share, "", ""])
    return out.getvalue()


def _html(report: HackableReport) -> str:
    rows = []
    for task in report.tasks:
        items = "".join(f"<li>{html.escape(o.line(task.task))}</li>" for o in task.outcomes or ())
        rows.append(
            f"<tr><td>{html.escape(task.task)}</td><td>{html.escape(_status(task))}</td>"
            f"<td><ul>{items}</ul></td></tr>"
        )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>ssegrade: verify folder</title></head><body>\n"
        f"<h1>Verify folder</h1>\n<p>{html.escape(report.summary())}</p>\n"
        "<table><thead><tr><th>task</th><th>adversarial</th><th>cheats</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>\n</body></html>\n"
    )


def render(report: HackableReport, fmt: str) -> str:
    """The report in `fmt` (table, json, jsonl, csv or html), each with the share."""
    if fmt == "json":
        return json.dumps(report.to_json(), indent=1) + "\n"
    if fmt == "jsonl":
        doc = report.to_json()
        lines = [
            {"task": t["task"], "hackable": t["hackable"], "adversarial": t["adversarial"]}
            for t in doc["tasks"]
        ]
        head = {"kind": "verify", "hackable": doc["hackable"], "unchecked": doc["unchecked"]}
        return "".join(json.dumps(line) + "\n" for line in [head, *lines])
    if fmt == "csv":
        return _csv(report)
    if fmt == "html":
        return _html(report)
    return _table(report)
