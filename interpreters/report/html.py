"""The report as one self-contained HTML page, from a Jinja2 template with autoescape.

Interpreter layer, output side. The template (`interpreters/report/templates/report.html.j2`,
shipped as package data) holds the markup, the style and a few lines of script; this module
computes what it shows (the chart's geometry is `interpreters.report.chart`'s): as each task's
part is read (`HtmlSink`), the lines of the long tables (per task, the task × row grid, every
run), written into spools by hand with every value escaped, and streamed into the page at the
end. Names of tasks, models, agents and every message are escaped (autoescape in the template,
`markupsafe.escape` in the lines), so they cannot inject markup.

The page fetches nothing: style inline, chart as inline SVG, a short inline script that sorts
and filters the runs' table (the page reads whole without it). Its only links are relative
links to each run's files (`result.json`, `final.patch`, `guard.json`, `logs/`; for a cached
run, the logs of the run whose grade it reuses), given by `interpreters.report.links`. It says
which version of ssegrade made it, and when. Beside the pass share it shows the patch guard's
unflagged share (charted when a run carries a guard record), each row's flag counts, each
run's flags, and the scripts' containment modes.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator, Sequence
from datetime import datetime
from functools import cache, lru_cache
from typing import TextIO

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from interpreters.report.chart import charts
from interpreters.report.guard import (
    UNFLAGGED,
    containment_text,
    flags_text,
    guarded_rows,
    listed_text,
)
from interpreters.report.io import RunFiles
from interpreters.report.links import Linker
from interpreters.report.output import Ending, Reasons, Spool, write_report
from interpreters.report.render import SHARES
from interpreters.report.rows_text import errors_cell
from interpreters.report.text import minutes, money, p_value, percent
from ssegrade.guard import KINDS
from ssegrade.internal.checks import grading_order
from ssegrade.report import (
    CLUSTERED_NAME,
    DIFFERENCE,
    INTERVAL_NAME,
    TEST_NAME,
    Excluded,
    Report,
    Share,
    TaskPart,
    TaskRow,
    TaskRun,
)

__all__ = ["TEMPLATE", "HtmlSink", "render_html"]

TEMPLATE = "report.html.j2"
"""The page's template, in the `interpreters/report/templates` package data."""

REASONS = 10
"""The first failures the page lists, most frequent first."""


@cache
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("interpreters.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=False,
        keep_trailing_newline=True,
    )


@lru_cache(maxsize=256)
def _flags_cell(flags: tuple[str, ...] | None) -> str:
    """A run's guard flags (`—`: no guard record)."""
    return f'<td class="{"nr" if flags else "na"}">{_e(flags_text(flags))}</td>'


def _built(line: str) -> Markup:
    """A line this module built, every value in it escaped with `_e`."""
    return Markup(line)  # noqa: S704 (values escaped where the line is made)


def _e(value: object) -> str:
    return html.escape(str(value))


@lru_cache(maxsize=8192)
def _ec(value: str) -> str:
    """`_e` for the values many runs share (task, model, agent, status, first failure)."""
    return html.escape(value)


@lru_cache(maxsize=8192)
def _share_cell(share: Share) -> str:
    if share.share is None:
        return '<td class="num na">n/a</td>'
    return (
        f'<td class="num"><b>{percent(share.share)}</b> {share.passed}/{share.of}<br>'
        f'<span class="ci">{percent(share.low)}–{percent(share.high)}</span></td>'
    )


def _task_line(row: TaskRow) -> str:
    shares = "".join(_share_cell(getattr(row, key)) for key, _ in SHARES)
    return f'<tr><td>{_e(row.task)}</td><td class="num">{row.runs}</td>{shares}</tr>\n'


@lru_cache(maxsize=1024)
def _mark(value: bool | str | None, kind: str) -> str:
    """One check of a run: absent (the task has no such check), not run, passed, failed."""
    if kind == "absent":
        return '<td class="na" title="the task has no such check">—</td>'
    if value is None:
        return '<td class="nr">not run</td>'
    text = value if isinstance(value, str) else ""
    ok = value is True or (isinstance(value, str) and _poc_ok(value))
    return (
        f'<td class="{"ok" if ok else "no"}">{"✓" if ok else "✗"}{" " + text if text else ""}</td>'
    )


def _poc_ok(value: str) -> bool:
    passed, _, total = value.partition("/")
    return passed == total and total != "0"


def _files(links: Sequence[tuple[str, str]], extra: str = "") -> str:
    # The shown names are RUN_FILES' own and an address is quoted (`report_links`): neither
    # holds a character to escape.
    anchors = "".join(f'<a href="{href}">{name}</a>' for name, href in links)
    return f'<td class="files">{anchors}{extra}</td>'


_CHECKS = tuple((check.name, check.label) for check in grading_order())

_SECTIONS = ("task_lines", "grid_lines", "run_lines", "left_out_lines")
_MARK = re.compile(r"<!--ssegrade:(task_lines|grid_lines|run_lines|left_out_lines)-->")


def _kind(kind: str | None) -> str:
    """The short label of an `error` run's kind, beside its reason (nothing for other runs)."""
    if kind is None:
        return ""
    return f' <span class="kind" title="error kind">{_ec(kind)}</span>'


class HtmlSink:
    """`--format html`: the page (see the module's docstring)."""

    def __init__(
        self,
        linker: Linker | None = None,
        version: str = "",
        made_at: datetime | None = None,
        title: str = "ssegrade report",
    ) -> None:
        self.linker = linker
        self.version = version
        self.made_at = made_at
        self.title = title
        self._tasks = Spool()
        self._grid = Spool()
        self._runs = Spool()
        self._left_out = Spool()
        self._reasons = Reasons()
        self.kept = 0
        self.excluded = 0
        self.task_count = 0

    def _links(self, folder: str, files: RunFiles) -> list[tuple[str, str]]:
        if self.linker is None:
            return []
        return self.linker.links(folder, files.get(folder, ()))

    def _run_line(self, run: TaskRun, files: RunFiles) -> str:
        has = run.checks
        marks = "".join(
            _mark(getattr(run, label), "given" if name in has else "absent")
            for name, label in _CHECKS
        )
        ident = _e(run.run_id)
        extra = ""
        if run.cached_from:
            source = _e(run.cached_from)
            ident += f' <span class="ci" title="grade reused from {source}">cached</span>'
            logs = self.linker.cached_logs(run.cached_from) if self.linker else None
            if logs is not None:
                extra = f'<a href="{_e(logs)}" title="the logs of {source}">logs of {source}</a>'
        status = "ok" if run.status == "passed" else "no"
        return (
            f"<tr><td>{_ec(run.task)}</td><td>{_ec(run.model)}</td><td>{_ec(run.agent)}</td>"
            f'<td class="num">{run.trial}</td><td>{ident}</td>'
            f'<td class="{status}">{run.status}</td>{marks}{_flags_cell(run.flags)}'
            f"<td>{_ec(run.error_msg or '—')}{_kind(run.error_kind)}</td>"
            f"{_files(self._links(run.folder, files), extra)}"
            "</tr>\n"
        )

    def _left_out_line(self, ex: Excluded, files: RunFiles) -> str:
        marks = "".join(
            _mark(getattr(ex, label), "given")
            if getattr(ex, label) is not None
            # a run left out does not say which checks its task has
            else '<td class="na">—</td>'
            for _, label in _CHECKS
        )
        return (
            f'<tr class="out"><td>{_ec(ex.task)}</td><td>{_ec(ex.model)}</td>'
            f'<td>{_ec(ex.agent)}</td><td class="num">—</td><td>{_e(ex.run_id)}</td>'
            f'<td class="nr">{ex.status}, left out</td>{marks}{_flags_cell(ex.flags)}'
            f"<td>{_ec(ex.why)}{_kind(ex.error_kind)}</td>"
            f"{_files(self._links(ex.folder, files))}</tr>\n"
        )

    def add(self, part: TaskPart, files: RunFiles) -> None:
        """Write one task's lines into the spools."""
        if part.row is not None:
            self.task_count += 1
            self._tasks.write(_task_line(part.row))
            cells: dict[str, list[int]] = {}
            for run in part.runs:
                tally = cells.setdefault(json.dumps([run.model, run.agent]), [0, 0, 0])
                tally[0] += run.status == "passed"
                tally[1] += 1
                tally[2] += run.status == "passed" and bool(run.flags)
            self._grid.write(json.dumps([part.task, cells]) + "\n")
        self._reasons.add(part)
        self.kept += len(part.runs)
        self.excluded += len(part.excluded)
        self._runs.write("".join(self._run_line(run, files) for run in part.runs))
        self._left_out.write("".join(self._left_out_line(ex, files) for ex in part.excluded))

    def _grid_lines(self, report: Report) -> Iterator[str]:
        """The task × row grid, in the rows' final order."""
        order = [json.dumps([row.model, row.agent]) for row in report.rows]
        for line in self._grid.lines():
            task, cells = json.loads(line)
            out = [f"<tr><td>{_e(task)}</td>"]
            for key in order:
                out.append(_grid_cell(*cells.get(key, (0, 0, 0))))
            yield "".join(out) + "</tr>\n"

    def finish(self, ending: Ending, out: TextIO) -> None:
        """Stream the page onto `out`."""
        report = ending.report
        top, others = self._reasons.top(REASONS)
        context = {
            "title": self.title,
            "report": report,
            "kept": self.kept,
            "excluded": self.excluded,
            "task_count": self.task_count,
            "version": self.version,
            "made_at": self.made_at.strftime("%Y-%m-%d %H:%M UTC") if self.made_at else "",
            "which": (
                "every run"
                if report.runs == "all"
                else "the latest run of each task, model and agent"
            ),
            "shares": SHARES,
            "unflagged_title": UNFLAGGED[1],
            "guarded": guarded_rows(report),
            "listed_text": listed_text,
            "kinds": KINDS,
            "containment": containment_text(report),
            "check_titles": [check.title for check in grading_order()],
            "charts": charts(report),
            "repeated": [r for r in report.rows if r.trials > 1 or r.clustered is not None],
            "comparisons": list(ending.comparisons),
            "reasons": top,
            "other_reasons": others,
            "failed": self._reasons.runs,
            **{name: _built(f"<!--ssegrade:{name}-->") for name in _SECTIONS},
            "difference": DIFFERENCE,
            "interval_name": INTERVAL_NAME,
            "clustered_name": CLUSTERED_NAME,
            "test_name": TEST_NAME,
            "errors": errors_cell,
            "pct": percent,
            "money": money,
            "minutes": minutes,
            "p": p_value,
        }
        sections = {
            "task_lines": lambda: self._tasks.copy_to(out),
            "grid_lines": lambda: out.writelines(self._grid_lines(report)),
            "run_lines": lambda: self._runs.copy_to(out),
            "left_out_lines": lambda: self._left_out.copy_to(out),
        }
        # The long tables go straight from their spools where the template marks them (no
        # value the template escapes can look like a mark: it holds no `<`).
        for chunk in _environment().get_template(TEMPLATE).generate(context):
            at = 0
            for mark in _MARK.finditer(chunk):
                out.write(chunk[at : mark.start()])
                sections[mark.group(1)]()
                at = mark.end()
            out.write(chunk[at:])

    def close(self) -> None:
        """Drop the spools."""
        for spool in (self._tasks, self._grid, self._runs, self._left_out):
            spool.close()


def render_html(
    report: Report,
    ending: Ending | None = None,
    linker: Linker | None = None,
    version: str = "",
    made_at: datetime | None = None,
    files: RunFiles | None = None,
) -> str:
    """The page of a whole `report` (`HtmlSink`); with a `linker`, links to the files `files`
    says each run folder holds."""
    return write_report(HtmlSink(linker, version, made_at), report, ending, files)


def _grid_cell(passed: int, total: int, flagged: int = 0) -> str:
    """One cell of the task grid: the kept run's status, or passed/kept runs; a pass the patch
    guard flagged is marked (never a plain green), with how many in its title."""
    if total == 0:
        return '<td><span class="cell none" title="no kept run">·</span></td>'
    kind = "passed" if passed == total else "failed" if passed == 0 else "mixed"
    text = ("passed" if passed else "failed") if total == 1 else f"{passed}/{total}"
    if not flagged:
        return f'<td><span class="cell {kind}">{text}</span></td>'
    title = f"{flagged} of the passes flagged by the patch guard"
    return f'<td><span class="cell {kind} flagged" title="{title}">{text} ⚑</span></td>'
