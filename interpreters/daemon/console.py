"""The version the daemon reports.

Interpreter layer; kept apart so that `interpreters.cli.daemon` (the daemon's commands) and
`startup` (loaded only by `ssegrade daemon`, with the server libraries) share it. The daemon speaks
through `logging` (`interpreters.real.logs`), its lines on stderr after `ssegrade daemon: `.
"""

from __future__ import annotations

from importlib import metadata

__all__ = ["version"]


def version() -> str:
    """The installed version of ssegrade."""
    try:
        return metadata.version("ssegrade")
    except metadata.PackageNotFoundError:
        return "unknown"
