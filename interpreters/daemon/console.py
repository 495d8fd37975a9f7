"""How the daemon speaks: progress lines on stderr, and its version.

Interpreter layer; kept apart so that `commands` (loaded by every `ssegrade` run) and `startup`
(loaded only by `ssegrade daemon`, with the server libraries) share it.
"""

from __future__ import annotations

from importlib import metadata

import click

__all__ = ["say", "version"]


def say(message: str) -> None:
    """One progress line of the daemon on stderr."""
    click.echo(f"ssegrade daemon: {message}", err=True)


def version() -> str:
    """The installed version of ssegrade."""
    try:
        return metadata.version("ssegrade")
    except metadata.PackageNotFoundError:
        return "unknown"
