"""The `ssegrade` command: parses arguments, picks an interpreter, runs the pure program.

Bad input is one line on stderr and a non-zero exit, never a traceback. Every line printed
that may quote a name a task, an agent or a script chose is inert
(`ssegrade.internal.text.inert_text`).
Only click and the standard library are loaded before a command runs: `--version`, `--help`
and a usage error cost no more; each command imports what it needs in its body, and
`evaluate` checks its task folder and patch file (`interpreters.cli.early`) before it loads
the real interpreter.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from interpreters.cli import early
from interpreters.cli.early import Refused
from interpreters.cli.group import LazyGroup
from interpreters.cli.options import (
    positive,
    quiet_option,
    repo_option,
    results_option,
    scripts_options,
    source_option,
    task_option,
    verbose_option,
)
from interpreters.real import logs
from ssegrade.internal.errors import SsegradeError
from ssegrade.internal.text import inert_text

__all__ = ["cli", "main"]

_log = logging.getLogger(__name__)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(package_name="ssegrade", prog_name="ssegrade")
def cli() -> None:
    """Grade coding agents' security patches: capture, apply, build, PoCs, tests, verdict."""


@cli.command()
@click.option(
    "--source", required=True, type=click.Path(path_type=Path), help="The tree the agent will edit."
)
@click.option(
    "--into", required=True, type=click.Path(path_type=Path), help="Folder for the baseline."
)
@click.option(
    "--no-repo",
    is_flag=True,
    help="Do not keep a copy of the whole tree (ignored files included) as INTO/repo.",
)
def baseline(source: Path, into: Path, no_repo: bool) -> None:
    """Record the baseline of the tree the agent will edit, before it runs.

    Also keeps a pristine copy of the whole tree, ignored files included (vendored modules),
    as INTO/repo: the grading repo whenever none is named; and the tree's archive, compressed
    by folder, as INTO/archive.cache: each grading's source.tar.gz reuses what did not change.

    \b
    Example:
      ssegrade baseline --source /src/proj --into /var/lib/sse/base
    """
    from returns.pipeline import is_successful  # noqa: PLC0415 - each command imports its own

    from interpreters.app.setup import InputError, keep_repo_copy  # noqa: PLC0415
    from interpreters.real import archive, files, git  # noqa: PLC0415

    recorded = git.record_baseline(source, into)
    if not is_successful(recorded):
        raise InputError(recorded.failure().message)
    base = recorded.unwrap()
    if not no_repo:
        try:
            keep_repo_copy(source.absolute(), base.path)
        except OSError as exc:
            files.remove_tree(base.path / git.REPO_COPY)
            raise InputError(
                f"cannot copy {source} into {base.path}: {exc.strerror or exc}"
            ) from exc
    cached = archive.record_archive_cache(source.absolute(), base.path, level=archive.ARCHIVE_LEVEL)
    if not is_successful(cached):
        _log.warning("%s (each archive will be written whole)", cached.failure())
    kept = "" if no_repo else f", tree copied to {base.path / git.REPO_COPY}"
    made = f"baseline recorded in {into}: commit {base.commit}, tree {base.base_tree}{kept}"
    click.echo(inert_text(made))


@cli.command()
@click.argument("document", type=click.Choice(["result", "guard"]), default="result")
def schema(document: str) -> None:
    """Print the JSON Schema of result.json (or of the patch guard's guard.json).

    \b
    Examples:
      ssegrade schema > result.schema.json
      ssegrade schema guard > guard.schema.json
    """
    import json  # noqa: PLC0415 - each command imports its own

    if document == "result":
        from ssegrade.internal.result import result_schema as schema_of  # noqa: PLC0415
    else:
        from ssegrade.internal.guard_document import guard_schema as schema_of  # noqa: PLC0415
    click.echo(json.dumps(schema_of(), indent=2))


def _agent_int(
    *, minimum: int | None
) -> Callable[[click.Context, click.Parameter, str | None], int | None]:
    """A callback for agent facts: an integer (at least `minimum`). A bad value on the command
    line is refused; one from the environment (as a task container sets it) is ignored with a
    warning, as SSEBench's own evaluator does."""

    def check(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
        if value is None:
            return None
        try:
            number = int(value.strip())
        except ValueError:
            number = None
        if number is not None and (minimum is None or number >= minimum):
            return number
        want = "an integer" if minimum is None else f"an integer ≥ {minimum}"
        source = ctx.get_parameter_source(param.name or "")
        if source is click.core.ParameterSource.ENVIRONMENT:
            envvar = param.envvar if isinstance(param.envvar, str) else "environment"
            _log.warning("warning: %s=%r is not %s: ignored", envvar, value, want)
            return None
        raise click.BadParameter(f"{value!r} is not {want}")

    return check


@cli.command()
@task_option
@source_option
@click.option(
    "--baseline",
    "baseline_dir",
    envvar="SSE_BASELINE",
    type=click.Path(path_type=Path),
    help="Baseline recorded before the agent ran [env SSE_BASELINE].",
)
@repo_option
@results_option
@click.option(
    "--timeout",
    envvar="TIMEOUT",
    default=3600,
    show_default=True,
    type=int,
    callback=positive,
    help="Time limit of the whole evaluation, seconds [env TIMEOUT].",
)
@click.option(
    "--script-timeout",
    type=int,
    callback=positive,
    help="Time limit of each script, seconds (default: the time left, less 10% of --timeout "
    "for each script after it).",
)
@scripts_options
@click.option(
    "--agent-duration",
    envvar="AGENT_DURATION",
    callback=_agent_int(minimum=0),
    help="Agent run time, whole seconds [env AGENT_DURATION; default 0].",
)
@click.option(
    "--agent-timeout/--no-agent-timeout",
    default=None,
    help="The agent hit its time limit [default: env SSE_METRIC_AGENT_TIMEOUT is set].",
)
@click.option(
    "--agent-exit-code",
    envvar="AGENT_EXIT_STATUS",
    callback=_agent_int(minimum=None),
    help="Agent exit code, an integer [env AGENT_EXIT_STATUS].",
)
@click.option(
    "--daemon",
    "daemon_socket",
    type=click.Path(path_type=Path),
    help="Grade through the task daemon's admin socket instead of locally.",
)
@click.option(
    "--patch",
    "patch_file",
    type=click.Path(path_type=Path),
    help="Grade this recorded patch (e.g. an earlier final.patch) instead of capturing one: "
    "no source tree or baseline needed, only the grading repo.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Clear a results folder that already holds a grade (refused otherwise).",
)
@click.option(
    "--trace",
    "trace_file",
    metavar="FILE",
    type=click.Path(path_type=Path),
    help="Record every grading step and its answer in FILE, for `ssegrade replay`.",
)
@quiet_option("Say nothing on stderr but errors (the verdict is still printed).")
@verbose_option("Also say how the grading was set up.")
def evaluate(
    task_dir: Path,
    source: Path | None,
    baseline_dir: Path | None,
    repo: Path | None,
    results: Path,
    timeout: int,
    script_timeout: int | None,
    runner_user: str | None,
    script_env: tuple[tuple[str, str], ...],
    clean_env: bool,
    script_memory: int | None,
    agent_duration: int | None,
    agent_timeout: bool | None,
    agent_exit_code: int | None,
    daemon_socket: Path | None,
    patch_file: Path | None,
    force: bool,
    trace_file: Path | None,
    quiet: bool,
    verbose: bool,
    **containment: Any,
) -> None:
    """Grade the agent's patch and write RESULTS/result.json.

    Captures the agent's changes to its source tree against the baseline (or takes --patch),
    applies them to fresh copies of the grading repo, builds, runs every PoC, the functional
    and the hidden tests. Prints a line when each check starts and ends on stderr, the
    verdict on stdout; exits 0 whenever result.json was written, whatever the verdict, 2 for
    bad input, 130/143 when interrupted.

    \b
    Examples:
      ssegrade evaluate --task /ssebench --source /src/proj --baseline /var/lib/sse/base
      ssegrade evaluate --task tasks/gjson-196 --patch runs/r1/final.patch \\
          --repo repos/gjson-196 --results out/r1 --trace out/r1.trace
    """
    if quiet and verbose:
        raise click.UsageError("-v and -q cannot be used together")
    shown = logs.console()
    if shown is not None:
        shown.show(logs.level_of(quiet=quiet, verbose=verbose))
    if patch_file is not None and daemon_socket is not None:
        raise Refused("--patch and --daemon cannot be used together")
    if trace_file is not None and daemon_socket is not None:
        raise Refused("--trace and --daemon cannot be used together")
    recorded = early.read_patch(patch_file) if patch_file is not None else None
    early.check_task(task_dir)
    # The grading's own modules, only now that the command line holds together.
    from interpreters.app.grading import grade  # noqa: PLC0415
    from interpreters.app.setup import InputError, not_a_diff, verdict_line  # noqa: PLC0415
    from interpreters.real.runner.options import ScriptOptions  # noqa: PLC0415
    from ssegrade.internal.request import Limits, Request  # noqa: PLC0415
    from ssegrade.internal.result import RuntimeResult  # noqa: PLC0415

    scripts = ScriptOptions.of(
        script_env=script_env, clean_env=clean_env, script_memory=script_memory, **containment
    )
    if recorded is not None and (why := not_a_diff(recorded)) is not None:
        raise InputError(f"--patch {patch_file}: {why}")
    if agent_timeout is None:
        agent_timeout = "SSE_METRIC_AGENT_TIMEOUT" in os.environ
    runtime = RuntimeResult(
        agent_duration=agent_duration or 0,
        agent_timeout=bool(agent_timeout),
        agent_exit_code=agent_exit_code,
    )
    if daemon_socket is not None:
        from interpreters.app.setup import load_inputs, make_results  # noqa: PLC0415
        from interpreters.cli.daemon import evaluate_through_daemon  # noqa: PLC0415

        result = evaluate_through_daemon(
            daemon_socket,
            load_inputs(task_dir, source, runner_user),
            make_results(results, force=force, join=True),
            timeout=timeout,
            script_timeout=script_timeout,
            runtime=runtime,
        )
    else:
        request = Request(
            task_dir,
            results,
            scripts,
            patch=recorded,
            source=source if recorded is None else None,
            baseline=baseline_dir,
            repo=repo,
            limits=Limits(timeout, script_timeout),
            runtime=runtime,
            runner_user=runner_user,
            force=force,
            trace=trace_file,
        )
        result = grade(request).document
    if shown is not None:
        shown.settle()
    click.echo(inert_text(verdict_line(result)))


def main(argv: list[str] | None = None) -> NoReturn:
    """Console entry point: run `cli`, its log on stderr (`interpreters.real.logs`); every usage
    or input error is one line on stderr, `ssegrade: error: <message>`, with the exit status
    docs/cli.md gives."""
    from interpreters.cli.progress import CheckProgress  # noqa: PLC0415 - rich, when it runs

    with logs.speaking(logging.INFO, display=CheckProgress()):
        _main(argv)


def _main(argv: list[str] | None) -> NoReturn:
    try:
        code = cli.main(args=argv, prog_name="ssegrade", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
        sys.exit(0)
    except click.exceptions.Abort:
        click.echo("ssegrade: error: aborted", err=True)
        sys.exit(130)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "ssegrade"
        message = " ".join(exc.format_message().split())
        click.echo(inert_text(f"ssegrade: error: {message} (see '{where} --help')"), err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        _discard_made()
        click.echo(
            inert_text(f"ssegrade: error: {' '.join(exc.format_message().split())}"), err=True
        )
        sys.exit(exc.exit_code)
    except SsegradeError as exc:
        _refuse(exc)
    sys.exit(code if isinstance(code, int) else 0)


def _discard_made() -> None:
    """Remove the results folders a refused grading made (none unless the set-up ran)."""
    if "interpreters.app.setup.folders" in sys.modules:  # else nothing was made
        from interpreters.app.setup import discard_made  # noqa: PLC0415

        discard_made()  # a refused grading leaves no empty results folder


def _refuse(exc: SsegradeError) -> NoReturn:
    """One line on stderr for an error of the grading API, and its exit status: 2 for bad
    input, 1 for an output not written or a program missing, 128 + the signal's number when
    interrupted; any other error goes on as it is (a bug, said with its traceback)."""
    # Loaded already: the error came from there.
    from interpreters.app.setup import InputError, Interrupted, NotWritten  # noqa: PLC0415
    from interpreters.real.programs import ProgramError  # noqa: PLC0415

    if isinstance(exc, Interrupted):
        click.echo(inert_text(f"ssegrade: {exc}"), err=True)
        sys.exit(exc.exit_code)
    if not isinstance(exc, InputError | NotWritten | ProgramError):
        raise exc
    _discard_made()
    click.echo(inert_text(f"ssegrade: error: {' '.join(str(exc).split())}"), err=True)
    sys.exit(2 if isinstance(exc, InputError) else 1)
