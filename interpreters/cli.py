"""The `ssegrade` command: parses arguments, picks an interpreter, runs the pure program.

Bad input is one line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

import click
from returns.pipeline import is_successful
from rich.console import Console

from interpreters.daemon.commands import daemon, evaluate_through_daemon, test_patch
from interpreters.real import files, git
from interpreters.real.local import LocalSystem, Places
from interpreters.report_cli import report
from interpreters.setup import (
    BadInput,
    Inputs,
    Interrupted,
    graded,
    grading_repo,
    load_inputs,
    make_results,
    repo_option,
    results_option,
    runner_option,
    source_option,
    task_option,
    verdict_line,
)
from ssegrade import (
    BenchSession,
    EvaluationResult,
    GradeOptions,
    RuntimeResult,
    bencher_interpreter,
    grade,
    result_schema,
    run,
)

__all__ = ["cli", "main"]

_stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def _say(message: str) -> None:
    _stderr.print(message, markup=False)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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
def baseline(source: Path, into: Path) -> None:
    """Record the baseline of SOURCE before the agent runs (SPEC §4)."""
    recorded = git.record_baseline(source, into)
    if not is_successful(recorded):
        raise BadInput(recorded.failure().message)
    base = recorded.unwrap()
    click.echo(f"baseline recorded in {into}: commit {base.commit}, tree {base.base_tree}")


@cli.command()
def schema() -> None:
    """Print the JSON Schema of result.json."""
    click.echo(json.dumps(result_schema(), indent=2))


def _agent_runtime(duration: str | None, timed_out: bool, exit_code: str | None) -> RuntimeResult:
    def as_int(text: str | None) -> int | None:
        try:
            return int(text) if text is not None else None
        except ValueError:
            return None

    return RuntimeResult(
        agent_duration=max(as_int(duration) or 0, 0),
        agent_timeout=timed_out,
        agent_exit_code=as_int(exit_code),
    )


def _positive(_ctx: click.Context, _param: click.Parameter, value: int | None) -> int | None:
    if value is not None and value <= 0:
        raise click.BadParameter("must be a positive number of seconds")
    return value


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
    callback=_positive,
    help="Time limit of the whole evaluation, seconds [env TIMEOUT].",
)
@click.option(
    "--script-timeout",
    type=int,
    callback=_positive,
    help="Time limit of each script, seconds (default: the time left).",
)
@runner_option
@click.option(
    "--agent-duration",
    envvar="AGENT_DURATION",
    help="Agent run time, seconds [env AGENT_DURATION].",
)
@click.option(
    "--agent-timeout/--no-agent-timeout",
    default=None,
    help="The agent hit its time limit [default: env SSE_METRIC_AGENT_TIMEOUT is set].",
)
@click.option(
    "--agent-exit-code", envvar="AGENT_EXIT_STATUS", help="Agent exit code [env AGENT_EXIT_STATUS]."
)
@click.option(
    "--daemon",
    "daemon_socket",
    type=click.Path(path_type=Path),
    help="Grade through the task daemon's admin socket (SPEC §9) instead of locally.",
)
def evaluate(
    task_dir: Path,
    source: Path | None,
    baseline_dir: Path | None,
    repo: Path | None,
    results: Path,
    timeout: int,
    script_timeout: int | None,
    runner_user: str | None,
    agent_duration: str | None,
    agent_timeout: bool | None,
    agent_exit_code: str | None,
    daemon_socket: Path | None,
) -> None:
    """Grade the agent's patch and write RESULTS/result.json (SPEC §3).

    Prints one line per finished check on stderr and the verdict on stdout; exits 0 whenever
    result.json was written, whatever the verdict.
    """
    inputs = load_inputs(task_dir, source, runner_user)
    if agent_timeout is None:
        agent_timeout = "SSE_METRIC_AGENT_TIMEOUT" in os.environ
    runtime = _agent_runtime(agent_duration, bool(agent_timeout), agent_exit_code)
    results = make_results(results)
    if daemon_socket is not None:
        result = evaluate_through_daemon(
            daemon_socket,
            inputs,
            results,
            timeout=timeout,
            script_timeout=script_timeout,
            runtime=runtime,
            say=_say,
        )
    else:
        result = _evaluate_here(
            inputs, baseline_dir, repo, results, timeout, script_timeout, runtime
        )
    click.echo(verdict_line(result))


def _evaluate_here(
    inputs: Inputs,
    baseline_dir: Path | None,
    repo: Path | None,
    results: Path,
    timeout: int,
    script_timeout: int | None,
    runtime: RuntimeResult,
) -> EvaluationResult:
    scratch = Path(tempfile.mkdtemp(prefix="ssegrade-"))
    scratch.chmod(0o711)  # the runner reaches its copies inside, and nothing else
    try:
        base = _baseline(inputs.source, baseline_dir, scratch)
        places = Places(
            inputs.task_dir,
            inputs.source,
            base,
            grading_repo(repo, base, scratch),
            results,
            scratch / "work",
        )
        if inputs.runner.note is not None:
            _say(inputs.runner.note)
        task, folder = inputs.task, str(inputs.task_dir)

        def local() -> EvaluationResult:
            system = LocalSystem(
                places, inputs.runner, timeout=timeout, script_timeout=script_timeout, say=_say
            )
            options = GradeOptions(task=task, folder=folder, timeout=timeout, runtime=runtime)
            return run(grade(options), bencher_interpreter(BenchSession(task, folder), system))

        return graded(results, runtime, local)
    finally:
        files.remove_tree(scratch)


def _baseline(source: Path, given: Path | None, scratch: Path) -> git.Baseline:
    if given is not None:
        loaded = git.load_baseline(given)
        if not is_successful(loaded):
            raise BadInput(loaded.failure().message)
        return loaded.unwrap()
    _say(
        "warning: no baseline recorded before the agent ran: using the root commit of the "
        "source tree's history, which the agent could have rewritten"
    )
    recorded = git.record_baseline(source, scratch / "baseline", from_root=True)
    if not is_successful(recorded):
        raise BadInput(recorded.failure().message)
    return recorded.unwrap()


cli.add_command(report)
cli.add_command(daemon)
cli.add_command(test_patch)


def main(argv: list[str] | None = None) -> NoReturn:
    """Console entry point: run `cli`, turning every usage or input error into one line."""
    try:
        code = cli.main(args=argv, prog_name="ssegrade", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("ssegrade: aborted", err=True)
        sys.exit(130)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except Interrupted as interrupted:
        click.echo(f"ssegrade: {interrupted}", err=True)
        sys.exit(interrupted.exit_code)
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "ssegrade"
        click.echo(f"{where}: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"ssegrade: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
