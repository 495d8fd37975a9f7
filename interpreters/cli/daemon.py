"""The daemon's commands: `ssegrade daemon`, `ssegrade test-patch`, and grading through the
admin socket for `ssegrade evaluate --daemon`.

Interpreter layer: arguments and the environment are read here, then the pure programs run with
the interpreters of `interpreters.daemon`. Bad input is one line on stderr and exit status 2.
What serves, grades or asks a daemon is imported in the body of the command that needs it.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

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
from ssegrade.internal.text import inert_text

if TYPE_CHECKING:  # what serves, grades or asks a daemon loads only in the command that runs
    from interpreters.app.setup import Inputs
    from interpreters.daemon.client import DaemonClient
    from ssegrade.internal.result import EvaluationResult, RuntimeResult
    from ssegrade.internal.task import Task

for _needed in ("fastapi", "uvicorn", "httpx"):  # the 'daemon' extra, named when missing
    if importlib.util.find_spec(_needed) is None:
        raise ModuleNotFoundError(f"No module named {_needed!r}", name=_needed)

__all__ = [
    "DEFAULT_ADMIN_SOCKET",
    "DEFAULT_AGENT_SOCKET",
    "daemon",
    "evaluate_through_daemon",
    "test_patch",
]

DEFAULT_AGENT_SOCKET = "/run/ssebench/daemon.sock"
DEFAULT_ADMIN_SOCKET = "/run/ssebench-admin/admin.sock"

F = TypeVar("F", bound=Callable[..., Any])


# ---------------------------------------------------------------------------- ssegrade daemon


def _port(_ctx: click.Context, _param: click.Parameter, value: int | None) -> int | None:
    if value is not None and not 1 <= value <= 65535:
        raise click.BadParameter("must be a TCP port, 1 to 65535")
    return value


def _socket_option(flag: str, envvar: str, default: str, what: str) -> Callable[[F], F]:
    return click.option(
        flag,
        envvar=envvar,
        default=default,
        show_default=True,
        type=click.Path(path_type=Path),
        help=f"{what} [env {envvar}].",
    )


@click.command("daemon")
@task_option
@source_option
@repo_option
@results_option
@_socket_option(
    "--agent-socket", "SSE_DAEMON_SOCKET", DEFAULT_AGENT_SOCKET, "Agent-facing socket, mode 0666"
)
@_socket_option(
    "--admin-socket",
    "SSE_ADMIN_SOCKET",
    DEFAULT_ADMIN_SOCKET,
    "Admin socket, mode 0600 in a 0700 folder",
)
@click.option(
    "--http-port",
    envvar="SSE_HTTP_PORT",
    type=int,
    callback=_port,
    help="Also serve the agent-facing API on 127.0.0.1:PORT [env SSE_HTTP_PORT; off].",
)
@click.option(
    "--baseline",
    "baseline_dir",
    envvar="SSE_BASELINE",
    type=click.Path(path_type=Path),
    help="Keep the baseline here, and reuse it when the daemon starts again "
    "[env SSE_BASELINE; default: a private folder removed at exit].",
)
@click.option(
    "--script-timeout",
    default=3600,
    show_default=True,
    type=int,
    callback=positive,
    help="Longest an agent's script may run, seconds; the evaluator sets its own.",
)
@scripts_options
@click.option(
    "--agent-user",
    envvar="SSE_AGENT_USER",
    default="model",
    show_default=True,
    help="The account the agent's bash tool runs as (root only; never root) [env SSE_AGENT_USER].",
)
@click.option(
    "--archive",
    envvar="SSE_ARCHIVE",
    default="/tmp/sse-archive",
    show_default=True,
    type=click.Path(path_type=Path),
    help="The agent side's archive folder, whose dialog.jsonl GET /agent/dialog serves "
    "[env SSE_ARCHIVE].",
)
@click.option("--openapi", is_flag=True, help="Print the OpenAPI document of the API and exit.")
@quiet_option("Say only errors on stderr.")
@verbose_option("Also say how the grading was set up.")
def daemon(
    *,
    task_dir: Path,
    source: Path | None,
    repo: Path | None,
    results: Path,
    agent_socket: Path,
    admin_socket: Path,
    http_port: int | None,
    baseline_dir: Path | None,
    script_timeout: int,
    runner_user: str | None,
    agent_user: str,
    archive: Path,
    openapi: bool,
    quiet: bool,
    verbose: bool,
    **scripts: Any,
) -> None:
    """Run the task daemon: record the baseline, then serve the agent's checks on the
    agent-facing socket (gated by SSE_DIFFICULTY, 0-4, default 2) and grading on the admin
    socket, until SIGTERM or SIGINT.

    \b
    Example:
      SSE_DIFFICULTY=1 ssegrade daemon --task /ssebench --source /src/proj \\
          --agent-socket /run/ssebench/daemon.sock --admin-socket /run/sse-admin/admin.sock
    """
    if openapi:
        from interpreters.daemon.app import openapi_document  # noqa: PLC0415 - see below

        click.echo(json.dumps(openapi_document(), indent=2))
        return
    if quiet and verbose:
        raise click.UsageError("-v and -q cannot be used together")
    # The server libraries load only for this command, not for every `ssegrade` run.
    from interpreters.daemon.startup import Settings, run_daemon  # noqa: PLC0415
    from interpreters.daemon.workers import worker_count  # noqa: PLC0415
    from interpreters.real.runner.options import ScriptOptions  # noqa: PLC0415

    shown = logs.console()
    if shown is not None:
        shown.prefix("ssegrade daemon: ")
        shown.show(logs.level_of(quiet=quiet, verbose=verbose))
    workers, ignored = worker_count(os.environ.get("SSE_DAEMON_WORKERS"))
    if ignored is not None:
        logging.getLogger(__name__).warning("%s", ignored)

    run_daemon(
        Settings(
            task_dir=task_dir,
            source=source,
            repo=repo,
            results=results,
            agent_socket=agent_socket,
            admin_socket=admin_socket,
            http_port=http_port,
            baseline_dir=baseline_dir,
            script_timeout=script_timeout,
            runner_user=runner_user,
            agent_user=agent_user,
            archive=archive,
            workers=workers,
            scripts=ScriptOptions.of(**scripts),
        )
    )


# ---------------------------------------------------------------------------- evaluate --daemon


def _preflight(client: DaemonClient, task: Task) -> None:
    from interpreters.app.setup import InputError  # noqa: PLC0415
    from interpreters.daemon.client import DaemonError  # noqa: PLC0415 - see the imports

    try:
        project = client.project()
        asked = client.capabilities()
    except DaemonError as exc:
        raise InputError(str(exc)) from exc
    if project.id != task.id:
        raise InputError(
            f"the daemon at {client.where} serves task {project.id!r}, not {task.id!r}"
        )
    if asked.listener != "admin":
        raise InputError(
            f"{client.where} is an agent-facing socket: grading needs the admin socket"
        )


def evaluate_through_daemon(
    admin_socket: Path,
    inputs: Inputs,
    results: Path,
    *,
    timeout: int,
    script_timeout: int | None,
    runtime: RuntimeResult,
) -> EvaluationResult:
    """Grade with the pure grading program within `timeout` seconds, the bencher effects
    answered by the daemon on `admin_socket`, the others locally (the source tree is
    archived, `results` written); progress and notes are `logging` records.

    A daemon that cannot be reached, or serves another task, is bad input (`InputError`, exit
    2); a failure once grading started ends as an `error` grade, written like any other.
    """
    from interpreters.app.setup import graded  # noqa: PLC0415
    from interpreters.daemon.client import DaemonClient  # noqa: PLC0415 - see the imports
    from interpreters.daemon.remote import RemoteGrading  # noqa: PLC0415
    from interpreters.real.resultsfolder.writer import ResultsWriter  # noqa: PLC0415
    from ssegrade.internal.program import GradeOptions, Seen, grade  # noqa: PLC0415
    from ssegrade.internal.run import Deadline, run  # noqa: PLC0415

    with DaemonClient(admin_socket) as client:
        _preflight(client, inputs.task)
        deadline = Deadline.starting(timeout, time.monotonic)
        writer = ResultsWriter(inputs.source, results, check=deadline.check)
        interpreter = RemoteGrading(client, writer, deadline, script_timeout=script_timeout)
        options = GradeOptions(task=inputs.task, folder=str(inputs.task_dir), runtime=runtime)
        seen = Seen()  # a check that failed decides the grade, even if grading breaks after
        return graded(
            results, runtime, lambda: run(grade(options, seen), interpreter, deadline), seen
        )


# ---------------------------------------------------------------------------- test-patch


@click.command("test-patch")
@click.option(
    "--socket",
    "where",
    envvar="SSE_DAEMON_SOCKET",
    default=DEFAULT_AGENT_SOCKET,
    show_default=True,
    help="The daemon's agent-facing socket, or http://127.0.0.1:PORT [env SSE_DAEMON_SOCKET].",
)
@click.option(
    "--log-dir",
    envvar="MCP_LOG_DIR",
    type=click.Path(path_type=Path),
    help="Where a long log is written whole: a folder you own [env MCP_LOG_DIR; default: a "
    "new private folder in the temporary folder].",
)
def test_patch(where: str, log_dir: Path | None) -> None:
    """Check the patch on your live source tree with the checks the difficulty level allows,
    and print what they found. Exit 0 when every check that ran passed, 1 otherwise.

    \b
    Example:
      ssegrade test-patch --socket /run/ssebench/daemon.sock
    """
    from interpreters.daemon.client import DaemonClient, DaemonError  # noqa: PLC0415
    from interpreters.daemon.remote import PreviewInterpreter  # noqa: PLC0415
    from ssegrade.internal.run import run  # noqa: PLC0415
    from ssegrade.preview import INTERNAL_FAILURE, preview  # noqa: PLC0415
    from ssegrade.protocol import LEVELS  # noqa: PLC0415

    with DaemonClient(where, timeout=60.0) as client:
        try:
            asked = client.capabilities()
        except DaemonError as exc:
            click.echo(INTERNAL_FAILURE)
            click.echo(inert_text(f"test-patch: {exc}"), err=True)
            sys.exit(1)
        if not 0 <= asked.level < len(LEVELS):
            click.echo(INTERNAL_FAILURE)
            click.echo(f"test-patch: the daemon reports an unknown level {asked.level}", err=True)
            sys.exit(1)
        interpreter = PreviewInterpreter(client, log_dir)
        found = run(
            preview(LEVELS[asked.level], frozenset(asked.checks), tuple(asked.pocs)), interpreter
        )
    click.echo(found.text)
    for error in interpreter.errors:
        click.echo(inert_text(f"test-patch: {error}"), err=True)
    sys.exit(0 if found.passed else 1)
