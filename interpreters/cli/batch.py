"""The `ssegrade verify` and `ssegrade batch` commands (SPEC §13, §14).

Interpreter layer: options are parsed here, the work is `verify_tasks` and `run_batch`. Bad
input is one line per problem on stderr and exit status 2; progress goes to stderr, the
verification report to stdout (or `-o FILE`). What grades is imported in each command's
body: `--help` and a usage error load click alone.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar

import click

from interpreters.cli.container_options import container_options, container_settings, on_ray
from interpreters.cli.options import (
    containment_options,
    positive,
    runner_option,
    script_env_options,
)
from interpreters.real import logs
from ssegrade.internal.text import inert_text

if TYPE_CHECKING:
    from interpreters.batch.verification import TaskVerification
    from interpreters.real.runner.options import ScriptOptions
    from ssegrade.guard import Flag
    from ssegrade.internal.result import ErrorKind

__all__ = ["batch", "verify"]

F = TypeVar("F", bound=Callable[..., Any])

_log = logging.getLogger(__name__)


def _show(*, quiet: bool = False, verbose: bool = False) -> None:
    """Show the log on stderr at the level `-q`/`-v` ask for."""
    shown = logs.console()
    if shown is not None:
        shown.show(logs.level_of(quiet=quiet, verbose=verbose))


def _engine_options(command: F) -> F:
    """`--workers`, `--engine`, `--ray-address`, `--timeout`, `--script-timeout`, the
    runner, and the scripts' environment and containment options."""
    for option in reversed(
        [
            click.option(
                "--workers",
                type=int,
                callback=positive,
                help="Gradings at a time (default: the number of CPUs).",
            ),
            click.option(
                "--engine",
                type=click.Choice(["local", "ray", "podman", "docker"]),
                default="local",
                show_default=True,
                help="Where gradings run: worker processes here, Ray tasks, or (batch only) "
                "a fresh container of each job's image.",
            ),
            click.option(
                "--ray-address",
                help="Ray cluster to submit to (default: a local Ray started for the run).",
            ),
            click.option(
                "--timeout",
                default=3600,
                show_default=True,
                type=int,
                callback=positive,
                help="Time limit of each grading, seconds.",
            ),
            click.option(
                "--script-timeout",
                type=int,
                callback=positive,
                help="Time limit of each script, seconds (default: the time left).",
            ),
            runner_option,
            script_env_options,
            containment_options,
        ]
    ):
        command = option(command)
    return command


EngineName = Literal["local", "ray"]
"""`--engine`: as `interpreters.batch.engines.EngineName`."""

ERROR_KINDS: tuple[ErrorKind, ...] = ("timeout", "task", "infrastructure", "grader")
"""`--retry-kinds`' choices: the kinds of an `error` grade
(`ssegrade.internal.result.ERROR_KINDS`)."""

RETRY_KINDS: frozenset[ErrorKind] = frozenset({"infrastructure", "grader"})
"""`--retry-kinds` unless given (`ssegrade.batch.RETRY_KINDS`)."""

CHEATS = (
    "sanitizer-drop",
    "entry-catcher",
    "function-catcher",
    "poc-early-return",
    "tests-removed",
    "test-hook",
)
"""`--cheat`'s names, in grading order (`ssegrade.batch.CHEATS`)."""


def _scripts(engine: EngineName, options: dict[str, Any]) -> ScriptOptions:
    """The scripts' options; with local workers, `InputError` at once when the containment
    asked for cannot be had here (rather than an `error` grade for every job)."""
    from interpreters.app.setup import InputError  # noqa: PLC0415
    from interpreters.real.runner import ContainmentRefused, choose  # noqa: PLC0415
    from interpreters.real.runner.options import ScriptOptions  # noqa: PLC0415

    scripts = ScriptOptions.of(**options)
    if engine == "local":
        try:
            choose(scripts.containment)
        except ContainmentRefused as exc:
            raise InputError(str(exc)) from None
    return scripts


def _refuse(problems: tuple[str, ...]) -> NoReturn:
    for problem in problems:
        click.echo(inert_text(f"ssegrade: error: {problem}"), err=True)
    raise click.exceptions.Exit(2)


@contextmanager
def _bad_input() -> Iterator[None]:
    from interpreters.app.setup import InputError  # noqa: PLC0415
    from interpreters.batch.engines import EngineUnavailable  # noqa: PLC0415
    from interpreters.batch.jobs import BadJobs  # noqa: PLC0415

    try:
        yield
    except BadJobs as exc:
        _refuse(exc.problems)
    except EngineUnavailable as exc:
        raise InputError(str(exc)) from None


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
@_engine_options
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
        _refuse(tuple(missing))
    from interpreters.app.setup import InputError  # noqa: PLC0415
    from interpreters.batch.verification import verify_tasks  # noqa: PLC0415

    scripts = _scripts(engine, options)
    _show(verbose=verbose)
    with _bad_input():
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


def _kinds(ctx: click.Context, param: click.Parameter, value: str) -> frozenset[ErrorKind]:
    """`--retry-kinds`: a comma-separated set of error kinds (empty: none)."""
    del ctx, param
    kinds: set[ErrorKind] = set()
    for word in filter(None, (part.strip() for part in value.split(","))):
        kind = next((k for k in ERROR_KINDS if k == word), None)
        if kind is None:
            raise click.BadParameter(f"{word!r} is not one of {', '.join(ERROR_KINDS)}")
        kinds.add(kind)
    return frozenset(kinds)


@click.command()
@click.argument("jobs", type=click.Path(path_type=Path))
@click.option(
    "--results",
    required=True,
    type=click.Path(path_type=Path),
    help="Write each run to RESULTS/<task id>/<model…>/<agent>/<run id>/.",
)
@_engine_options
@click.option("--no-cache", is_flag=True, help="Grade jobs whose digest was graded before.")
@click.option(
    "--force",
    is_flag=True,
    help="Grade every run again, also one graded before or holding another digest.",
)
@click.option(
    "--max-attempts",
    default=2,
    show_default=True,
    type=int,
    callback=positive,
    help="Grade a run graded `error` again on resume, up to this many attempts in all.",
)
@click.option("--no-retry", is_flag=True, help="Keep runs graded `error` as they are.")
@click.option(
    "--retry-kinds",
    default=",".join(sorted(RETRY_KINDS)),
    show_default=True,
    callback=_kinds,
    help=f"Kinds of `error` graded again on resume, comma-separated ({', '.join(ERROR_KINDS)}).",
)
@click.option("--label", help="A name for this batch, written in RESULTS/batch.json.")
@container_options
@click.option(
    "-v", "--verbose", is_flag=True, help="Also say each check of each grading, with its log."
)
@click.option("-q", "--quiet", is_flag=True, help="Say only the last line.")
def batch(
    jobs: Path,
    results: Path,
    workers: int | None,
    engine: EngineName,
    ray_address: str | None,
    timeout: int,
    script_timeout: int | None,
    runner_user: str | None,
    no_cache: bool,
    force: bool,
    max_attempts: int,
    no_retry: bool,
    retry_kinds: frozenset[ErrorKind],
    label: str | None,
    verbose: bool,
    quiet: bool,
    cluster: str | None,
    bundle: Path | None,
    container_memory: int,
    container_pids: int,
    container_tmp_size: int,
    image_budget: int | None,
    **options: Any,
) -> None:
    """Grade every recorded patch of the JSON Lines file JOBS, one job per line (`task` and
    `patch` required; `repo`, `model`, `agent`, `run_id`, `reference_run`, `agent_duration`,
    `agent_timeout`, `agent_exit_code`, `spend`, `started_at` optional; paths relative to
    JOBS; with --engine podman or docker each job names its `image`, and `task`, `repo` are
    paths in it), resuming what an earlier run did (and grading again what errored), reusing grades
    of identical jobs. Says one line per finished job (a live bar on a terminal) and a last
    line; RESULTS/batch.json says what the batch did.

    Exits 0 when every job was graded, 1 when one could not be (its error is in its
    result.json), 2 for bad input, 130 when interrupted.

    \b
    Examples:
      ssegrade batch jobs.jsonl --results results --workers 4
      ssegrade batch jobs.jsonl --results results --engine ray --ray-address head:6379
      ssegrade batch image-jobs.jsonl --results results --engine podman --workers 2
      ssegrade batch image-jobs.jsonl --results results --engine podman --ray-address head:6379
    """
    from interpreters.batch.progress import make_reporter  # noqa: PLC0415
    from interpreters.batch.run import run_batch  # noqa: PLC0415

    ray = on_ray(engine, cluster, ray_address)
    scripts = _scripts(engine, options)
    containers = None
    if engine in ("podman", "docker"):
        from ssegrade.batch import Limits  # noqa: PLC0415

        limits = Limits(container_memory, container_pids, container_tmp_size)
        containers = container_settings(engine, bundle, limits, image_budget)
    if verbose and quiet:
        raise click.UsageError("-v and -q cannot be used together")
    _show(quiet=quiet, verbose=verbose)
    with _bad_input():
        report = run_batch(
            jobs,
            results,
            workers=workers,
            engine=engine,
            ray_address=ray_address,
            cache=not no_cache,
            force=force,
            retry=not no_retry,
            max_attempts=max_attempts,
            retry_kinds=retry_kinds,
            label=label,
            timeout=timeout,
            script_timeout=script_timeout,
            runner_user=runner_user,
            scripts=scripts,
            reporter=make_reporter(quiet=quiet),
            checks=verbose,
            containers=containers,
            on_ray=ray,
        )
    raise click.exceptions.Exit(report.exit_code)
