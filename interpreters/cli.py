"""The `ssegrade` command: parses arguments, picks an interpreter, runs the pure program.

Bad input is one line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import NoReturn

import click
from returns.pipeline import is_successful
from rich.console import Console

from interpreters.daemon.commands import daemon, evaluate_through_daemon, test_patch
from interpreters.grading import Sources, grade_here, keep_repo_copy, read_patch
from interpreters.real import files, git
from interpreters.report_cli import report
from interpreters.setup import (
    BadInput,
    load_inputs,
    make_results,
    repo_option,
    results_option,
    runner_option,
    source_option,
    task_option,
    verdict_line,
)
from ssegrade import RuntimeResult, result_schema

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
@click.option(
    "--no-repo",
    is_flag=True,
    help="Do not keep a copy of the whole tree (ignored files included) as INTO/repo.",
)
def baseline(source: Path, into: Path, no_repo: bool) -> None:
    """Record the baseline of the tree the agent will edit, before it runs.

    Also keeps a pristine copy of the whole tree, ignored files included (vendored modules),
    as INTO/repo: the grading repo whenever none is named.
    """
    recorded = git.record_baseline(source, into)
    if not is_successful(recorded):
        raise BadInput(recorded.failure().message)
    base = recorded.unwrap()
    if not no_repo:
        try:
            keep_repo_copy(source.absolute(), base.path)
        except OSError as exc:
            files.remove_tree(base.path / git.REPO_COPY)
            raise BadInput(f"cannot copy {source} into {base.path}: {exc.strerror or exc}") from exc
    kept = "" if no_repo else f", tree copied to {base.path / git.REPO_COPY}"
    click.echo(f"baseline recorded in {into}: commit {base.commit}, tree {base.base_tree}{kept}")


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
    patch_file: Path | None,
    force: bool,
) -> None:
    """Grade the agent's patch and write RESULTS/result.json (SPEC §3).

    Prints one line per finished check on stderr and the verdict on stdout; exits 0 whenever
    result.json was written, whatever the verdict.
    """
    if patch_file is not None and daemon_socket is not None:
        raise BadInput("--patch and --daemon cannot be used together")
    recorded = read_patch(patch_file) if patch_file is not None else None
    inputs = load_inputs(task_dir, source, runner_user, need_source=recorded is None)
    if agent_timeout is None:
        agent_timeout = "SSE_METRIC_AGENT_TIMEOUT" in os.environ
    runtime = _agent_runtime(agent_duration, bool(agent_timeout), agent_exit_code)
    results = make_results(results, force=force)
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
        result = grade_here(
            inputs,
            Sources(patch=recorded, repo=repo, baseline=baseline_dir),
            results,
            timeout=timeout,
            script_timeout=script_timeout,
            runtime=runtime,
            say=_say,
        )
    click.echo(verdict_line(result))


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
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "ssegrade"
        click.echo(f"{where}: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"ssegrade: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
