"""`ssegrade report RESULTS`: the command that reads run folders and prints the report.

Interpreter layer, command line: it streams the runs through the pure selection with
`interpreters.report_io`, aggregates with the pure `ssegrade.report`, prints with the renderers
(`report_table`, `report_render`, `report_html`). The click command object `report` is
registered by the main command group; it also runs on its own (`report.main()`).

Every error is one line on stderr and exit status 2 (docs/cli.md): a missing or empty results
folder, an unknown option value, an unknown `--compare` row, an output that cannot be written.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

import click
from returns.result import Failure

from interpreters.report_io import NoRuns, paused_gc, select_runs
from interpreters.report_render import render_csv, render_json, render_jsonl, render_runs_csv
from ssegrade.report import Comparison, Report, RowKey, compare, compare_all, find_row, summarize

__all__ = ["PAIRWISE_LIMIT", "TABLE_PAIRWISE_LIMIT", "report"]

PAIRWISE_LIMIT = 12
"""The HTML page and the JSON list every pairwise comparison up to this many rows."""

TABLE_PAIRWISE_LIMIT = 5
"""The terminal lists every pairwise comparison up to this many rows (without --compare)."""


class _Bad(click.ClickException):
    """Bad input or usage: one line, exit status 2."""

    exit_code = 2


class _OneLineCommand(click.Command):
    """A command whose usage errors are one line on stderr (exit 2), without the usage text."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise _bad(exc.format_message()) from None


def _bad(message: str) -> click.ClickException:
    return _Bad(f"report: {message}")


def _row(rep: Report, spec: str) -> RowKey:
    found = find_row(rep, spec)
    if isinstance(found, Failure):
        raise _bad(f"--compare: {found.failure().message}")
    return found.unwrap()


def _quiet_pipe() -> None:
    """The reader went away (`| head`): stop quietly, as command line tools do."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(1)


def _emit(write: Callable[[TextIO], object], output: str | None) -> None:
    """Run `write` on stdout or on the file `output`; a write failure is one line."""
    if output is None or output == "-":
        try:
            write(sys.stdout)
            sys.stdout.flush()
        except BrokenPipeError:
            _quiet_pipe()
        return
    try:
        with open(output, "w", encoding="utf-8") as out:
            write(out)
    except OSError as exc:
        raise _bad(f"{output}: cannot write ({exc.strerror or exc})") from None


def _table(rep: Report, comparisons: Sequence[Comparison], out: TextIO) -> None:
    # Loaded only for this format: start-up time counts (benchmarks/bench_report.py).
    from rich.console import Console  # noqa: PLC0415

    from interpreters.report_table import render_table  # noqa: PLC0415

    console = Console(file=out, highlight=False)
    if not console.is_terminal:
        console = Console(file=out, highlight=False, width=max(console.width, 200))
    render_table(rep, console, comparisons)


def _family(rep: Report, asked: Comparison | None, limit: int) -> list[Comparison]:
    """The comparisons shown together: every pair up to `limit` rows (the one asked for
    first), else the one asked for alone."""
    pairs = list(compare_all(rep)) if 2 <= len(rep.rows) <= limit else []
    if asked is None:
        return pairs
    same = [p for p in pairs if (p.a, p.b) == (asked.a, asked.b)]
    if not same:
        return [asked]
    return [same[0], *(p for p in pairs if p is not same[0])]


@click.command("report", cls=_OneLineCommand)
@click.argument("results", metavar="RESULTS", type=click.Path(path_type=str))
@click.option(
    "--runs",
    type=click.Choice(["latest", "all"]),
    default="latest",
    show_default=True,
    help="latest: the newest run of each (task, model, agent); all: every run, as trials.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv", "jsonl", "html"]),
    default="table",
    show_default=True,
    help="table (terminal), json, csv (one line per model and agent; --per-run: per run), "
    "jsonl (one line per run), html (one page).",
)
@click.option("--per-run", is_flag=True, help="With --format csv: one line per run.")
@click.option(
    "--errors-as-failures",
    is_flag=True,
    help="Count error runs as failed instead of leaving them out.",
)
@click.option(
    "--rules",
    type=click.Choice(["ssegrade", "ssebench"]),
    default="ssegrade",
    show_default=True,
    help="ssegrade: each share over the runs whose task has the check; ssebench: as SSEBench's "
    "report counts (every run in each share, PoCs that never ran as passed), to compare "
    "with published SSEBench numbers.",
)
@click.option(
    "-o", "--output", metavar="FILE", default=None, help="Write to FILE instead of stdout."
)
@click.option(
    "--compare",
    "pair",
    nargs=2,
    metavar="A B",
    default=None,
    help="Compare two rows, each named model/agent (e.g. openai/gpt-5/codex), on the tasks "
    "both ran: exact McNemar test.",
)
def report(
    results: str,
    runs: str,
    fmt: str,
    per_run: bool,
    errors_as_failures: bool,
    rules: str,
    output: str | None,
    pair: tuple[str, str] | None,
) -> None:
    """Pass shares, intervals, pass@k and per-task tables of the run folders under RESULTS.

    RESULTS holds RESULTS/<task>/<model…>/<agent>/<run-id>/summary.json (or result.json).
    Reference runs and error runs are left out of the shares and listed; so are runs whose
    document names another task, model or agent than their folder, and runs of
    `ssegrade verify`.

    \b
    Examples:
      ssegrade report runs/
      ssegrade report runs/ --runs all --format html -o report.html
      ssegrade report runs/ --format csv --per-run -o runs.csv
      ssegrade report results/ --rules ssebench
    """
    if per_run and fmt != "csv":
        raise _bad("--per-run goes with --format csv (--format jsonl is per run already)")
    try:
        selection, scanned = select_runs(
            results,
            "all" if runs == "all" else "latest",
            errors_as_failures,
            "ssebench" if rules == "ssebench" else "ssegrade",
        )
    except NoRuns as exc:
        raise _bad(str(exc)) from None
    for warning in scanned.warnings:
        click.echo(f"warning: {warning}", err=True)
    with paused_gc():
        rep = summarize(selection)
        del selection
        asked = None
        if pair is not None:
            asked = compare(rep, _row(rep, pair[0]), _row(rep, pair[1]))
        if fmt == "table":
            limit = TABLE_PAIRWISE_LIMIT if asked is None else 0
            shown = _family(rep, asked, limit)
            _emit(lambda out: _table(rep, shown, out), output)
        elif fmt == "json":
            family = _family(rep, None, PAIRWISE_LIMIT)
            text = render_json(rep, asked, family)
            _emit(lambda out: out.write(text), output)
        elif fmt == "csv":
            text = render_runs_csv(rep) if per_run else render_csv(rep)
            _emit(lambda out: out.write(text), output)
        elif fmt == "jsonl":
            text = render_jsonl(rep)
            _emit(lambda out: out.write(text), output)
        else:
            # Jinja2 is loaded only for the page: start-up time counts.
            from interpreters.report_html import render_html  # noqa: PLC0415
            from interpreters.report_links import run_links  # noqa: PLC0415

            folders = [run.folder for run in rep.tasks] + [x.folder for x in rep.excluded]
            links = run_links(results, folders, output)
            page = render_html(rep, _family(rep, asked, PAIRWISE_LIMIT), links=links)
            _emit(lambda out: out.write(page), output)
