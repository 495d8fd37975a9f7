"""The `ssegrade` command: parses arguments, picks an interpreter, runs the pure program.

Bad input is one line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

import click
from returns.pipeline import is_successful
from rich.console import Console

from interpreters.daemon.commands import daemon, evaluate_through_daemon, test_patch
from interpreters.real import files, git
from interpreters.real.local import LocalSystem, Places
from interpreters.real.runner import Runner, resolve_runner
from interpreters.report_cli import report
from interpreters.taskfolder import load_task, resolve_source
from ssegrade import (
    BenchSession,
    EvaluationResult,
    GradeOptions,
    PatchResult,
    RuntimeResult,
    Task,
    bencher_interpreter,
    grade,
    result_schema,
    run,
)

__all__ = ["cli", "main"]

_stderr = Console(stderr=True, highlight=False, soft_wrap=True)


class BadInput(click.ClickException):
    """Input the command cannot work with: printed as one line, exit 2."""

    exit_code = 2


class Interrupted(Exception):
    """SIGTERM or SIGINT arrived while grading."""


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
@click.option(
    "--task",
    "task_dir",
    envvar="SSE_BENCH_PATH",
    default="/ssebench",
    show_default=True,
    type=click.Path(path_type=Path),
    help="Task folder holding config.yaml [env SSE_BENCH_PATH].",
)
@click.option(
    "--source",
    type=click.Path(path_type=Path),
    help="The agent's source tree (default: `source` of config.yaml).",
)
@click.option(
    "--baseline",
    "baseline_dir",
    envvar="SSE_BASELINE",
    type=click.Path(path_type=Path),
    help="Baseline recorded before the agent ran [env SSE_BASELINE].",
)
@click.option(
    "--repo",
    envvar="SSE_REPO_PATH",
    type=click.Path(path_type=Path),
    help="Grading repo to patch [env SSE_REPO_PATH; default /ssebench-repo if it exists, "
    "else a checkout of the baseline].",
)
@click.option(
    "--results",
    envvar="SSE_RESULTS",
    default="/var/lib/ssebench/results",
    show_default=True,
    type=click.Path(path_type=Path),
    help="Results folder [env SSE_RESULTS].",
)
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
@click.option("--runner-user", help="User that runs task scripts when root (default sse-runner).")
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
    task_dir = task_dir.absolute()
    loaded = load_task(task_dir)
    if not is_successful(loaded):
        raise BadInput(loaded.failure().message)
    task = loaded.unwrap()
    found = resolve_source(task, task_dir, source)
    if not is_successful(found):
        raise BadInput(found.failure().message)
    source = found.unwrap()
    runner = resolve_runner(runner_user)
    if not is_successful(runner):
        raise BadInput(runner.failure().message)
    who = runner.unwrap()
    if agent_timeout is None:
        agent_timeout = "SSE_METRIC_AGENT_TIMEOUT" in os.environ
    runtime = _agent_runtime(agent_duration, bool(agent_timeout), agent_exit_code)
    try:
        results.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"results folder {results}: {exc.strerror}") from exc
    if daemon_socket is not None:
        result = evaluate_through_daemon(
            daemon_socket,
            task,
            task_dir,
            source,
            results.absolute(),
            timeout=timeout,
            script_timeout=script_timeout,
            runtime=runtime,
            say=_say,
        )
        patch = result.patch_result
        click.echo(
            patch.status if patch.error_msg is None else f"{patch.status}: {patch.error_msg}"
        )
        return
    scratch = Path(tempfile.mkdtemp(prefix="ssegrade-"))
    scratch.chmod(0o711)  # the runner reaches its copies inside, and nothing else
    try:
        base = _baseline(source, baseline_dir, scratch)
        grading_repo = _grading_repo(repo, base, scratch)
        if who.note is not None:
            _say(who.note)
        places = Places(task_dir, source, base, grading_repo, results.absolute(), scratch / "work")
        result = _grade(places, who, task, timeout, script_timeout, runtime)
    finally:
        files.remove_tree(scratch)
    patch = result.patch_result
    click.echo(patch.status if patch.error_msg is None else f"{patch.status}: {patch.error_msg}")


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


def _grading_repo(given: Path | None, base: git.Baseline, scratch: Path) -> Path:
    if given is None and Path("/ssebench-repo").is_dir():
        given = Path("/ssebench-repo")
    if given is not None:
        if not given.is_dir():
            raise BadInput(f"grading repo not found: {given}")
        return given.absolute()
    checkout = scratch / "repo"
    made = git.checkout_baseline(base, checkout)
    if not is_successful(made):
        raise BadInput(made.failure().message)
    return checkout


def _raise_interrupted(signum: int, _frame: FrameType | None) -> NoReturn:
    raise Interrupted(f"interrupted by {signal.strsignal(signum) or signum}")


def _grade(
    places: Places,
    runner: Runner,
    task: Task,
    timeout: int,
    script_timeout: int | None,
    runtime: RuntimeResult,
) -> EvaluationResult:
    previous: dict[signal.Signals, Callable[..., Any] | int | None] = {}
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous[sig] = signal.signal(sig, _raise_interrupted)
    try:
        system = LocalSystem(
            places, runner, timeout=timeout, script_timeout=script_timeout, say=_say
        )
        session = BenchSession(task=task, folder=str(places.task))
        options = GradeOptions(task=task, folder=str(places.task), timeout=timeout, runtime=runtime)
        try:
            return run(grade(options), bencher_interpreter(session, system))
        except Exception as exc:  # noqa: BLE001 - the grade must still be written
            return _write_fallback(places.results, runtime, exc)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _write_fallback(results: Path, runtime: RuntimeResult, exc: Exception) -> EvaluationResult:
    patch = PatchResult(
        status="error",
        error_msg=f"Exception: {exc}",
        error_log="".join(traceback.format_exception(exc)),
    )
    result = EvaluationResult(patch_result=patch, runtime_result=runtime)
    try:
        files.atomic_write(results / "result.json", result.to_json())
    except OSError as write_error:
        raise click.ClickException(f"result.json not written: {write_error}") from exc
    return result


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
