"""`ssegrade report RESULTS`: the command that reads run folders and prints the report.

Interpreter layer, command line: it streams each task's runs from `interpreters.report.io`
through the pure selection and `ssegrade.report.Fold` into the chosen format's sink
(`report_table`, `report_render`, `report_html`), which writes the output once every task was
read (`interpreters.report.output`); memory holds one task's runs and the rows' counts. With
`--batch` it prints the batch's own summary instead (`interpreters.report.batch`). The click
command object `report` is registered by the main command group; it also runs on its own
(`report.main()`).

Every error is one line on stderr and exit status 2 (docs/cli.md): a missing or empty results
folder, a missing or malformed `batch.json`, an unknown option value, an unknown `--compare`
row, an output that cannot be written. The report's modules load once the command runs:
`--help` and a usage error load click alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib import metadata
from typing import TYPE_CHECKING, TextIO

import click

from ssegrade.internal.text import inert_text

if TYPE_CHECKING:
    from interpreters.report.io import RunFiles
    from interpreters.report.output import Sink
    from ssegrade.report import Comparison, Fold, Report, RowKey, Rules, RunsMode, Selection

__all__ = ["PAIRWISE_LIMIT", "TABLE_PAIRWISE_LIMIT", "report"]

PAIRWISE_LIMIT = 12
"""The HTML page and the JSON list every pairwise comparison up to this many rows."""

TABLE_PAIRWISE_LIMIT = 5
"""The terminal lists every pairwise comparison up to this many rows (without --compare)."""


KINDS = ("build-config", "sanitizer", "crash-handler", "poc-literal", "tests", "vendored")
"""The patch guard's flag kinds, for `--exclude-flagged` (`ssegrade.guard.KINDS`)."""


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
    from returns.result import Failure  # noqa: PLC0415 - the command's modules, when it runs

    from ssegrade.report import find_row  # noqa: PLC0415

    found = find_row(rep, spec)
    if isinstance(found, Failure):
        raise _bad(f"--compare: {found.failure().message}")
    return found.unwrap()


def _kinds(given: Sequence[str]) -> tuple[str, ...]:
    """The kinds `--exclude-flagged` names (`any`: all of them); an unknown one is refused."""
    kinds: list[str] = []
    for value in given:
        for word in filter(None, (w.strip() for w in value.split(","))):
            if word == "any":
                kinds += KINDS
            elif word in KINDS:
                kinds.append(word)
            else:
                raise _bad(f"--exclude-flagged: unknown kind {word!r} (one of {', '.join(KINDS)})")
    return tuple(dict.fromkeys(kinds))


def _family(fold: Fold, rep: Report, asked: Comparison | None, limit: int) -> list[Comparison]:
    """The comparisons shown together: every pair up to `limit` rows (the one asked for
    first), else the one asked for alone."""
    keys = [row.key for row in rep.rows]
    pairs = list(fold.outcomes.compare_all(keys)) if 2 <= len(keys) <= limit else []
    if asked is None:
        return pairs
    same = [p for p in pairs if (p.a, p.b) == (asked.a, asked.b)]
    if not same:
        return [asked]
    return [same[0], *(p for p in pairs if p is not same[0])]


def _version() -> str:
    try:
        return metadata.version("ssegrade")
    except metadata.PackageNotFoundError:
        return ""


def _sink(fmt: str, per_run: bool, results: str, output: str | None, all_tasks: bool) -> Sink:
    from interpreters.report.output import text_width  # noqa: PLC0415
    from interpreters.report.render import CsvSink, JsonSink  # noqa: PLC0415
    from interpreters.report.runs import RunsSink  # noqa: PLC0415

    if fmt == "table":
        # Loaded only for this format, as the others: start-up time counts.
        from interpreters.report.table import TableSink  # noqa: PLC0415

        return TableSink(text_width(output), all_tasks)
    if fmt == "json":
        return JsonSink()
    if fmt == "csv":
        return RunsSink("csv") if per_run else CsvSink()
    if fmt == "jsonl":
        return RunsSink("jsonl")
    from interpreters.report.html import HtmlSink  # noqa: PLC0415 (Jinja2: only for the page)
    from interpreters.report.links import Linker  # noqa: PLC0415

    return HtmlSink(Linker(results, output), _version(), datetime.now(UTC))


def _show_batch(results: str, fmt: str, verbose: bool, output: str | None) -> None:
    from interpreters.report.batch import BadBatch, load_batch, print_batch  # noqa: PLC0415
    from interpreters.report.output import text_width  # noqa: PLC0415

    if fmt not in ("table", "json"):
        raise _bad("--batch goes with --format table or json")
    try:
        summary, data = load_batch(results)
    except BadBatch as exc:
        raise _bad(str(exc)) from None
    if fmt == "json":
        text = data.decode("utf-8", "replace")
        _write(lambda out: out.write(text if text.endswith("\n") else text + "\n"), output)
        return
    width = text_width(output)
    _write(lambda out: print_batch(results, summary, out, verbose, width), output)


def _show_verify(results: str, fmt: str, output: str | None) -> bool:
    """Report a verify folder (`ssegrade verify --results`): the share of hackable tasks;
    False when `results` is not one."""
    from interpreters.report.verify_folder import is_verify_folder, load_verify, render  # noqa: PLC0415

    if not is_verify_folder(results):
        return False
    report, warnings = load_verify(results)
    for warning in warnings:
        click.echo(inert_text(f"warning: {warning}"), err=True)
    text = render(report, fmt)
    _write(lambda out: out.write(text), output)
    return True


def _write(write: Callable[[TextIO], object], output: str | None) -> None:
    from interpreters.report.output import WriteFailed, emit  # noqa: PLC0415

    try:
        emit(write, output)
    except WriteFailed as exc:
        raise _bad(str(exc)) from None


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
    "report counts (every run in each share, a check it lacks as not passed), to compare "
    "with published SSEBench numbers.",
)
@click.option(
    "-o", "--output", metavar="FILE", default=None, help="Write to FILE instead of stdout."
)
@click.option(
    "--tasks",
    "all_tasks",
    is_flag=True,
    help="With --format table: print the per-task lines whatever the number of tasks "
    "(by default only up to 40 tasks).",
)
@click.option(
    "--batch",
    is_flag=True,
    help="Print RESULTS/batch.json, the summary `ssegrade batch` wrote there, readably: what "
    "ran, when, the counts per outcome, the error and failed runs (with --format json: the "
    "file as it is).",
)
@click.option(
    "-v", "--verbose", is_flag=True, help="With --batch: the run folders of every outcome."
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
@click.option(
    "--exclude-flagged",
    "excluded_kinds",
    multiple=True,
    metavar="KIND",
    help="Take the runs the patch guard flagged with KIND out of every share (repeat, or "
    f"separate with commas; `any` for every kind): {', '.join(KINDS)}.",
)
@click.option(
    "--flagged-as",
    "flagged_as",
    type=click.Choice(["failed"]),
    default=None,
    help="Count a passed run the patch guard flagged (with the --exclude-flagged kinds, else "
    "any) as not passed, kept in every share: the reading that cannot raise a share.",
)
def report(
    results: str,
    runs: str,
    fmt: str,
    per_run: bool,
    errors_as_failures: bool,
    rules: str,
    output: str | None,
    all_tasks: bool,
    batch: bool,
    verbose: bool,
    pair: tuple[str, str] | None,
    excluded_kinds: tuple[str, ...],
    flagged_as: str | None,
) -> None:
    """Pass shares, intervals, pass@k and per-task tables of the run folders under RESULTS.

    RESULTS holds RESULTS/<task>/<model…>/<agent>/<run-id>/summary.json (or result.json).
    Reference runs and error runs are left out of the shares and listed; so are runs whose
    document names another task, model or agent than their folder, and runs of
    `ssegrade verify`. Every format says why each run failed (its first failing check)
    and, beside the pass share, the share that passed without a patch guard flag.
    The text fits COLUMNS columns (80 when not set and not on a terminal).

    \b
    Examples:
      ssegrade report runs/
      ssegrade report runs/ --runs all --format html -o report.html
      ssegrade report runs/ --format csv --per-run -o runs.csv
      ssegrade report runs/ --exclude-flagged sanitizer,tests
      ssegrade report runs/ --flagged-as failed
      ssegrade report results/ --rules ssebench
      ssegrade report results/ --batch
    """
    if batch:
        _show_batch(results, fmt, verbose, output)
        return
    if os.path.isdir(results) and _show_verify(results, fmt, output):
        return
    if per_run and fmt != "csv":
        raise _bad("--per-run goes with --format csv (--format jsonl is per run already)")
    if all_tasks and fmt != "table":
        raise _bad("--tasks goes with --format table (the other formats list every task)")
    kinds = _kinds(excluded_kinds)
    mode: RunsMode = "all" if runs == "all" else "latest"
    rule: Rules = "ssebench" if rules == "ssebench" else "ssegrade"
    if not os.path.isdir(results):  # said before the report's modules load, as they say it
        raise _bad(
            f"{results}: {'is not a folder' if os.path.exists(results) else 'no such folder'}"
        )
    from interpreters.report.io import paused_gc  # noqa: PLC0415 - the report's modules, now
    from ssegrade.report import Fold  # noqa: PLC0415

    sink = _sink(fmt, per_run, results, output, all_tasks)
    fold = Fold(mode, errors_as_failures, rule)
    with paused_gc():
        try:
            _run(sink, fold, results, fmt, pair, output, kinds, as_failed=flagged_as == "failed")
        finally:
            sink.close()


def _run(
    sink: Sink,
    fold: Fold,
    results: str,
    fmt: str,
    pair: tuple[str, str] | None,
    output: str | None,
    kinds: tuple[str, ...],
    *,
    as_failed: bool = False,
) -> None:
    """Read every task into `sink` through `fold` (selected with its options, without the
    runs flagged with `kinds`, or, `as_failed`, with those runs counted as not passed: of any
    kind when none is named), then write the output."""
    from interpreters.report.io import NoRuns, parallel_reading, select_tasks  # noqa: PLC0415
    from interpreters.report.output import Ending  # noqa: PLC0415
    from ssegrade.report import exclude_flagged, flagged_as_failed  # noqa: PLC0415

    def take(selection: Selection, files: RunFiles) -> None:
        if as_failed:
            selection = flagged_as_failed(selection, kinds or KINDS)
        elif kinds:
            selection = exclude_flagged(selection, kinds)
        for part in fold.add(selection):
            sink.add(part, files)

    try:
        scanned = select_tasks(
            results,
            take,
            fold.runs,
            fold.errors_as_failures,
            fold.rules,
            files=fmt == "html",
            parallel=parallel_reading(),
        )
    except NoRuns as exc:
        raise _bad(str(exc)) from None
    for warning in scanned.warnings:
        click.echo(inert_text(f"warning: {warning}"), err=True)
    rep = fold.report()
    if as_failed:
        rep = rep.model_copy(update={"flagged_as": "failed"})
    asked = None
    if pair is not None:
        asked = fold.outcomes.compare(_row(rep, pair[0]), _row(rep, pair[1]))
    family: Sequence[Comparison]
    if fmt == "table":
        family = _family(fold, rep, asked, TABLE_PAIRWISE_LIMIT if asked is None else 0)
    else:
        family = _family(fold, rep, asked if fmt == "html" else None, PAIRWISE_LIMIT)
    ending = Ending(rep, family, asked if fmt == "json" else None)
    _write(lambda out: sink.finish(ending, out), output)
