"""The `ssegrade replay` command: re-grade a recorded trace with the current rules.

Interpreter layer: reads the trace file, runs `ssegrade.trace.replay`, prints the verdict
and how it compares with the recorded `result.json`.
"""

from __future__ import annotations

import re
from pathlib import Path

import click

from interpreters.cli.early import Refused
from ssegrade.internal.text import inert_text

__all__ = ["MAX_BYTES", "MAX_DEPTH", "replay_command", "too_deep"]


MAX_BYTES = 256 << 20
"""The largest trace `replay` reads."""
MAX_DEPTH = 64
"""The deepest nesting of a trace line `replay` reads (a trace ssegrade writes nests a few
levels)."""

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKET = re.compile(rb"[\[\]{}]")


def too_deep(line: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON text `line` nests arrays and objects deeper than `limit`.

    >>> too_deep(b'{"a": [1, "[[[[", {}]}', 2), too_deep(b'{"a": [1, "]]", {}]}', 3)
    (True, False)
    >>> too_deep(b'{"a": ["[[[[", 1]}', 2), too_deep(b"[[[]]]", 2)
    (False, True)
    """
    if line.count(b"[") + line.count(b"{") <= limit:
        return False
    depth = 0
    for bracket in _BRACKET.finditer(_STRING.sub(b"", line)):
        depth += 1 if bracket.group() in (b"[", b"{") else -1
        if depth > limit:
            return True
    return False


def _read(path: Path) -> bytes:
    """The trace's bytes: a regular file (not a link, never waited on) of at most
    `MAX_BYTES`, no line nesting deeper than `MAX_DEPTH`; `Refused` otherwise."""
    from interpreters.real.untrusted import NotReadable, read_regular  # noqa: PLC0415

    try:
        data = read_regular(path, limit=MAX_BYTES)
    except NotReadable as exc:
        raise Refused(f"trace {exc}") from None
    for number, line in enumerate(data.split(b"\n"), start=1):
        if too_deep(line):
            raise Refused(
                f"{path}: trace line {number} nests deeper than {MAX_DEPTH} levels "
                "(not a trace ssegrade wrote)"
            )
    return data


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
    grading). A trace is read only when it is a regular file (not a link) of at most 256 MiB.

    \b
    Example:
      ssegrade evaluate --task tasks/gjson-196 --results out/r1 --trace out/r1.trace
      ssegrade replay out/r1.trace
    """
    data = _read(trace_file)  # a missing or unreadable trace is said before the rest loads
    from returns.pipeline import is_successful  # noqa: PLC0415 - the command's own modules

    from interpreters.app.setup import verdict_line  # noqa: PLC0415
    from ssegrade.trace import (  # noqa: PLC0415
        Diverged,
        parse_trace,
        replay,
    )

    try:
        parsed = parse_trace(data)
    except RecursionError:
        raise Refused(f"{trace_file}: nested too deeply to be a trace") from None
    if not is_successful(parsed):
        raise Refused(f"{trace_file}: {parsed.failure().message}")
    trace = parsed.unwrap()
    try:
        replayed = replay(trace)
    except Diverged as diverged:
        raise Refused(
            f"{trace_file}: {diverged}: the rules changed in a way that needs a new grading"
        ) from None
    click.echo(inert_text(verdict_line(replayed.result)))
    if not replayed.changes:
        click.echo("same as the recorded result.json")
        return
    was = inert_text(verdict_line(replayed.recorded))
    click.echo(f"differs from the recorded result.json ({was}):")
    for change in replayed.changes:
        click.echo(f"  {inert_text(change)}")
    ctx.exit(1)
