"""The options the commands share: the task, the agent's tree, the grading repo, the results
folder, the runner, how much to say; and those of the scripts (`interpreters.cli.script_options`).

Interpreter layer (command line), for `evaluate`, `daemon`, `verify` and `batch`. Click and
the standard library only: `--help` and a bad option are answered without loading what
grades (the defaults shown here are the real interpreter's, a test holds them equal).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from interpreters.cli.script_options import containment_options, script_env_options

__all__ = [
    "DEFAULT_RESULTS",
    "containment_options",
    "positive",
    "quiet_option",
    "repo_option",
    "results_option",
    "runner_option",
    "script_env_options",
    "scripts_options",
    "source_option",
    "task_option",
    "verbose_option",
]

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_RESULTS = "/var/lib/ssebench/results"
"""`--results` when neither it nor `SSE_RESULTS` is given (`interpreters.real.resultsfolder`)."""


def positive(_ctx: click.Context, _param: click.Parameter, value: int | None) -> int | None:
    """Option callback: the value, unless it is zero or less (one line, exit 2)."""
    if value is not None and value <= 0:
        raise click.BadParameter("must be a positive number")
    return value


def task_option(command: F) -> F:
    """`--task DIR` [env SSE_BENCH_PATH, default /ssebench]."""
    return click.option(
        "--task",
        "task_dir",
        envvar="SSE_BENCH_PATH",
        default="/ssebench",
        show_default=True,
        type=click.Path(path_type=Path),
        help="Task folder holding config.yaml [env SSE_BENCH_PATH].",
    )(command)


def source_option(command: F) -> F:
    """`--source DIR` (default: `source` of config.yaml)."""
    return click.option(
        "--source",
        type=click.Path(path_type=Path),
        help="The agent's source tree (default: `source` of config.yaml).",
    )(command)


def repo_option(command: F) -> F:
    """`--repo DIR` [env SSE_REPO_PATH]."""
    return click.option(
        "--repo",
        envvar="SSE_REPO_PATH",
        type=click.Path(path_type=Path),
        help="Grading repo to patch [env SSE_REPO_PATH; default /ssebench-repo if it exists, "
        "else a checkout of the baseline].",
    )(command)


def results_option(command: F) -> F:
    """`--results DIR` [env SSE_RESULTS, default /var/lib/ssebench/results]."""
    return click.option(
        "--results",
        envvar="SSE_RESULTS",
        default=DEFAULT_RESULTS,
        show_default=True,
        type=click.Path(path_type=Path),
        help="Results folder [env SSE_RESULTS].",
    )(command)


def runner_option(command: F) -> F:
    """`--runner-user NAME`."""
    return click.option(
        "--runner-user", help="User that runs task scripts when root (default sse-runner)."
    )(command)


def scripts_options(command: F) -> F:
    """How the task's scripts run: `--runner-user`, their environment and their containment."""
    return runner_option(script_env_options(containment_options(command)))


def verbose_option(help_text: str) -> Callable[[F], F]:
    """`-v/--verbose`: say more (the log's DEBUG records too)."""
    return click.option("-v", "--verbose", is_flag=True, help=help_text)


def quiet_option(help_text: str) -> Callable[[F], F]:
    """`-q/--quiet`: say only what must be said (the log's ERROR records)."""
    return click.option("-q", "--quiet", is_flag=True, help=help_text)
