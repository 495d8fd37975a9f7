"""How the daemon's commands speak: progress lines on stderr, and the one-line failure.

Interpreter layer; kept apart so that `commands` (loaded by every `ssegrade` run) and `startup`
(loaded only by `ssegrade daemon`, with the server libraries) share it.
"""

from __future__ import annotations

from importlib import metadata

import click

__all__ = ["Unusable", "say", "version"]


class Unusable(click.ClickException):
    """Input the command cannot work with: printed as one line, exit 2."""

    exit_code = 2


def say(message: str) -> None:
    """One progress line of the daemon on stderr."""
    click.echo(f"ssegrade daemon: {message}", err=True)


def version() -> str:
    """The installed version of ssegrade."""
    try:
        return metadata.version("ssegrade")
    except metadata.PackageNotFoundError:
        return "unknown"
