"""What `ssegrade verify` and `ssegrade batch` share on the command line: the options of where
and how gradings run, the scripts' options checked at once, and bad input said one line per
problem (exit 2).

Interpreter layer: click and the standard library at import; what grades is imported inside
each function, so `--help` and a usage error load click alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar

import click

from interpreters.cli.options import (
    containment_options,
    positive,
    runner_option,
    script_env_options,
)
from interpreters.real import logs
from ssegrade.internal.text import inert_text

if TYPE_CHECKING:
    from interpreters.real.runner.options import ScriptOptions

__all__ = ["EngineName", "bad_input", "engine_options", "refuse", "scripts_of", "show"]

F = TypeVar("F", bound=Callable[..., Any])

_log = logging.getLogger(__name__)


def show(*, quiet: bool = False, verbose: bool = False) -> None:
    """Show the log on stderr at the level `-q`/`-v` ask for."""
    shown = logs.console()
    if shown is not None:
        shown.show(logs.level_of(quiet=quiet, verbose=verbose))


def engine_options(command: F) -> F:
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


def scripts_of(engine: EngineName, options: dict[str, Any]) -> ScriptOptions:
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


def refuse(problems: tuple[str, ...]) -> NoReturn:
    for problem in problems:
        click.echo(inert_text(f"ssegrade: error: {problem}"), err=True)
    raise click.exceptions.Exit(2)


@contextmanager
def bad_input() -> Iterator[None]:
    from interpreters.app.setup import InputError  # noqa: PLC0415
    from interpreters.batch.engines import EngineUnavailable  # noqa: PLC0415
    from interpreters.batch.jobs import BadJobs  # noqa: PLC0415

    try:
        yield
    except BadJobs as exc:
        refuse(exc.problems)
    except EngineUnavailable as exc:
        raise InputError(str(exc)) from None
