"""The `ssegrade verify` command (SPEC §13): each task graded with the empty patch and with its
reference patch (and, with `--adversarial`, with canonical cheats).

Interpreter layer: options are parsed here, the work is `verify_tasks`. Bad input is one line
per problem on stderr and exit status 2; progress goes to stderr, the verification report to
stdout (or `-o FILE`). What grades is imported in the command's body: `--help` and a usage
error load click alone.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from interpreters.cli.grading_options import (
    EngineName,
    bad_input,
    engine_options,
    refuse,
    scripts_of,
    show,
)
from interpreters.cli.options import positive
from ssegrade.internal.text import inert_text

if TYPE_CHECKING:
    from interpreters.batch.verification import TaskVerification
    from ssegrade.guard import Flag

__all__ = ["CHEATS", "verify"]

_log = logging.getLogger(__name__)

CHEATS = (
    "sanitizer-drop",
    "entry-catcher",
    "function-catcher",
    "poc-early-return",
    "tests-removed",
    "test-hook",
)
"""`--cheat`'s names, in grading order (`ssegrade.batch.CHEATS`)."""


@click.command()
@click.argument("tasks", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--repo",
    type=click.Path(path_type=Path),
    help="The pristine project of the one TASK given (default: `source` of each task's "
    "config.yaml).",
)
@click.option(
    "--repeat",
    default=1,
    show_default=True,
    type=int,
    callback=positive,
    help="Grade each control this many times (finds flaky checks).",
)
@engine_options
@click.option(
    "--results",
    type=click.Path(path_type=Path),
    help="Keep every run as RESULTS/<task id>/<control>/<n>/ (default: a scratch folder).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="Output format.",
)
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write the report here.")
@click.option(
    "-v", "--verbose", is_flag=True, help="Also say each check of each run, with its log."
)
@click.option(
    "--adversarial",
    is_flag=True,
    help="Also grade the canonical cheats written for each task (sanitizer dropped, crash "
    "catchers, early return on the PoC's bytes, tests removed, a test hook): a task where "
    "one passes and the patch guard does not flag it is hackable.",
)
@click.option(
    "--cheat",
    "cheats",
    multiple=True,
    metavar="NAME",
    help=f"With --adversarial: grade only this cheat (repeat): {', '.join(CHEATS)}.",
)
def verify(
    tasks: tuple[Path, ...],
    repo: Path | None,
    repeat: int,
    workers: int | None,
    engine: EngineName,
    ray_address: str | None,
    timeout: int,
    script_timeout: int | None,
    runner_user: str | None,
    results: Path | None,
    fmt: str,
    output: Path | None,
    verbose: bool,
    adversarial: bool,
    cheats: tuple[str, ...],
    **options: Any,
) -> None:
    """Check that each TASK tells a fix from no fix: grade it with the empty patch and with
    its reference patch; `ok`, `broken` or `flaky`, one sentence per problem. With
    --adversarial, also grade canonical cheats: `hackable` when one passes unflagged.

    Exits 0 when every task is ok, 1 when one is not, 2 for bad input.

    \b
    Examples:
      ssegrade verify tasks/gjson-196 tasks/tlv-001
      ssegrade verify tasks/* --repeat 3 --format json -o verify.json
      ssegrade verify examples/tlv/task --repo examples/tlv/project
    """
    if engine in ("podman", "docker"):
        raise click.BadParameter("verify runs on local or ray", param_hint="--engine")
    missing = [f"task folder not found: {t.absolute()}" for t in tasks if not t.is_dir()]
    if missing:  # said before what grades loads, in `load_task`'s words
        refuse(tuple(missing))
    from interpreters.app.setup import InputError  # noqa: PLC0415
    from interpreters.batch.verification import verify_tasks  # noqa: PLC0415

    scripts = scripts_of(engine, options)
    show(verbose=verbose)
    with bad_input():
        report = verify_tasks(
            list(tasks),
            results,
            repo=repo,
            repeat=repeat,
            workers=workers,
            engine=engine,
            ray_address=ray_address,
            timeout=timeout,
            script_timeout=script_timeout,
            runner_user=runner_user,
            scripts=scripts,
            checks=verbose,
            adversarial=adversarial,
            cheats=cheats or None,
        )
    if fmt == "json":
        text = json.dumps({"tasks": [t.to_json() for t in report.tasks]}, indent=1) + "\n"
    else:
        text = _table(report.tasks)
    if output is not None:
        try:
            output.write_text(text)
        except OSError as exc:
            raise InputError(f"-o {output}: {exc.strerror}") from None
    else:
        click.echo("".join(inert_text(line) + "\n" for line in text.splitlines()), nl=False)
    for task in report.tasks:  # what makes the exit status 1, said on stderr too
        for outcome in task.adversarial or ():
            if outcome.verdict == "hackable":
                click.echo(inert_text(outcome.line(task.task)), err=True)
    if report.interrupted:
        _log.warning("interrupted: tasks whose runs did not all finish are not reported")
    raise click.exceptions.Exit(report.exit_code)


def _table(tasks: tuple[TaskVerification, ...]) -> str:
    """The verdict of each task; under it each problem and flaky check, with the log of the
    check that failed and its first lines."""
    if not tasks:
        return ""
    width = max(len("task"), *(len(t.task) for t in tasks))
    pad = " " * width
    lines = [f"{'task':<{width}}  verdict"]
    for t in tasks:
        v = t.verification
        lines.append(f"{t.task:<{width}}  {t.verdict}")
        shown = {e.about: (e, head) for e, head in zip(v.evidence, t.heads, strict=True)}
        for flaky, about in [(False, p) for p in v.problems] + [(True, f) for f in v.flaky]:
            lines.append(f"{pad}  - {'flaky: ' if flaky else ''}{about}")
            if about in shown:
                evidence, head = shown[about]
                where = f"{evidence.control} run {evidence.n}, {evidence.check}"
                lines.append(f"{pad}    log ({where}): {evidence.log or 'none'}")
                lines += [f"{pad}    | {line}" for line in head]
        lines += [f"{pad}  - {_flag_line(flag)}" for flag in t.reference_flags]
        lines += [f"{pad}  - {outcome.line(t.task)}" for outcome in t.adversarial or ()]
    return "\n".join(lines) + "\n"


def _flag_line(flag: Flag) -> str:
    """How `verify` names a flag the reference patch raises (advisory, never a problem)."""
    shown = ", ".join(flag.paths[:3]) + (", …" if len(flag.paths) > 3 else "")
    where = f" [{shown}]" if shown else ""
    return f"the reference patch raises the guard's {flag.kind} flag: {flag.why}{where}"
