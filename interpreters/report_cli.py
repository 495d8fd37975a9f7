"""`ssegrade report RESULTS`: the command that reads run folders and prints the report.

Interpreter layer, command line: it reads with `interpreters.report_io`, aggregates with the pure
`ssegrade.report`, prints with `interpreters.report_render`. The click command object `report`
is registered by the main command group; it also runs on its own (`report.main()`).

Errors are one line on stderr and a non-zero exit: 1 when there is nothing to report or the
output cannot be written, 2 for bad usage (an unknown option value, an unknown `--compare` row).
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

import click
from returns.result import Failure
from rich.console import Console

from interpreters.report_io import NoRuns, load_runs, paused_gc
from interpreters.report_render import render_csv, render_html, render_json, render_table
from ssegrade.report import (
    Comparison,
    Report,
    RowKey,
    RunsMode,
    aggregate,
    compare,
    compare_all,
    find_row,
)

__all__ = ["report"]

PAIRWISE_LIMIT = 12
"""The HTML page lists every pairwise comparison when the report has at most this many rows."""


class _OneLineCommand(click.Command):
    """A command whose usage errors are one line on stderr (exit 2), without the usage text."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise _usage(exc.format_message()) from None


class _Usage(click.ClickException):
    """Bad usage: one line, exit status 2."""

    exit_code = 2


def _usage(message: str) -> click.ClickException:
    return _Usage(f"report: {message}")


def _row(rep: Report, spec: str) -> RowKey:
    found = find_row(rep, spec)
    if isinstance(found, Failure):
        raise _usage(f"--compare: {found.failure().message}")
    return found.unwrap()


def _write(text: str, output: str | None) -> None:
    if output is None or output == "-":
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            _quiet_pipe()
        return
    try:
        with open(output, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        raise click.ClickException(f"{output}: cannot write ({exc.strerror or exc}).") from None


def _quiet_pipe() -> None:
    """The reader went away (`| head`): stop quietly, as command line tools do."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(1)


def _table(rep: Report, comparison: Comparison | None, output: str | None) -> None:
    def console(file: TextIO) -> Console:
        plain = Console(file=file, highlight=False)
        if plain.is_terminal:
            return plain
        return Console(file=file, highlight=False, width=max(plain.width, 200))

    if output is None or output == "-":
        try:
            render_table(rep, console(sys.stdout), comparison)
        except BrokenPipeError:
            _quiet_pipe()
        return
    try:
        with open(output, "w", encoding="utf-8") as out:
            render_table(rep, console(out), comparison)
    except OSError as exc:
        raise click.ClickException(f"{output}: cannot write ({exc.strerror or exc}).") from None


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
    type=click.Choice(["table", "json", "csv", "html"]),
    default="table",
    show_default=True,
    help="table (terminal), json, csv (one line per model and agent), html (one page).",
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
    output: str | None,
    pair: tuple[str, str] | None,
) -> None:
    """Pass shares, intervals and per-task tables of the run folders under RESULTS.

    RESULTS holds RESULTS/<task>/<model…>/<agent>/<run-id>/summary.json (or result.json).
    Reference runs and error runs are left out of the shares and listed.
    """
    try:
        loaded = load_runs(results)
    except NoRuns as exc:
        raise click.ClickException(str(exc)) from None
    for warning in loaded.warnings:
        click.echo(f"warning: {warning}", err=True)
    mode: RunsMode = "all" if runs == "all" else "latest"
    with paused_gc():
        rep = aggregate(loaded.records, mode)
        comparison = None
        if pair is not None:
            comparison = compare(rep, _row(rep, pair[0]), _row(rep, pair[1]))
        if fmt == "table":
            _table(rep, comparison, output)
        elif fmt == "json":
            _write(render_json(rep, comparison), output)
        elif fmt == "csv":
            _write(render_csv(rep), output)
        else:
            pairs = list(compare_all(rep)) if len(rep.rows) <= PAIRWISE_LIMIT else []
            if comparison is not None:
                pairs = [
                    comparison,
                    *(p for p in pairs if (p.a, p.b) != (comparison.a, comparison.b)),
                ]
            _write(render_html(rep, pairs), output)
