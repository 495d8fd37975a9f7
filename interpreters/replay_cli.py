"""The `ssegrade replay` command: re-grade a recorded trace with the current rules.

Interpreter layer: reads the trace file, runs `interpreters.replay.replay`, prints the verdict
and how it compares with the recorded `result.json`.
"""

from __future__ import annotations

from pathlib import Path

import click
from returns.pipeline import is_successful

from interpreters.replay import Diverged, replay
from interpreters.setup import BadInput, verdict_line
from ssegrade.trace import parse_trace

__all__ = ["replay_command"]


def _read(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise BadInput(f"trace {path}: {exc.strerror}") from exc


@click.command("replay")
@click.argument("trace_file", metavar="FILE", type=click.Path(path_type=Path))
@click.pass_context
def replay_command(ctx: click.Context, trace_file: Path) -> None:
    """Re-grade a trace recorded by `evaluate --trace` with the current rules, offline.

    The grading program runs against the recorded answers: no script runs, nothing is
    written. Prints the verdict the current rules derive, then whether it is the one of the
    recorded result.json, and if not, each field that differs. Exits 0 when the verdict is
    the same, 1 when it differs, 2 when the trace cannot be read or the grading program asks
    for an effect the trace does not hold (the rules changed in a way that needs a new
    grading).

    \b
    Example:
      ssegrade evaluate --task tasks/gjson-196 --results out/r1 --trace out/r1.trace
      ssegrade replay out/r1.trace
    """
    parsed = parse_trace(_read(trace_file))
    if not is_successful(parsed):
        raise BadInput(f"{trace_file}: {parsed.failure().message}")
    trace = parsed.unwrap()
    try:
        replayed = replay(trace)
    except Diverged as diverged:
        raise BadInput(
            f"{trace_file}: {diverged}: the rules changed in a way that needs a new grading"
        ) from None
    click.echo(verdict_line(replayed.result))
    if not replayed.changes:
        click.echo("same as the recorded result.json")
        return
    click.echo(f"differs from the recorded result.json ({verdict_line(replayed.recorded)}):")
    for change in replayed.changes:
        click.echo(f"  {change}")
    ctx.exit(1)
