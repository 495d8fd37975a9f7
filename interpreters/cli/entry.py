"""The `ssegrade` console script: the command line, or one line that names the extra it needs.

Interpreter layer. The core installs alone (`pip install ssegrade`); the command line needs
the `cli` extra (click, rich), the daemon `daemon`, the report `report`, the Ray engine
`ray` (`pip install 'ssegrade[all]'` has every command). A command whose extra is missing
says so on one line of stderr, `ssegrade: error: …`, and exits 2, never with a traceback.
Nothing is imported here before the command line is.
"""

from __future__ import annotations

import importlib
import sys
from typing import NoReturn

__all__ = ["EXTRAS", "main", "missing_extra"]

EXTRAS = {
    "click": "cli",
    "rich": "cli",
    "fastapi": "daemon",
    "starlette": "daemon",
    "uvicorn": "daemon",
    "httpx": "daemon",
    "jinja2": "report",
    "markupsafe": "report",
    "ray": "ray",
}
"""The extra that installs each module a command may need beyond the core."""


def missing_extra(error: ModuleNotFoundError) -> str | None:
    """The line that says which extra to install for the module `error` did not find, or
    None when the module is none of an extra's (a broken install, said as it is).

    >>> print(missing_extra(ModuleNotFoundError("No module named 'uvicorn'", name="uvicorn")))
    ssegrade: error: the 'daemon' extra is not installed: pip install 'ssegrade[daemon]'
    >>> missing_extra(ModuleNotFoundError("No module named 'pydantic'", name="pydantic")) is None
    True
    """
    top = (error.name or "").partition(".")[0]
    extra = EXTRAS.get(top)
    if extra is None:
        return None
    return f"ssegrade: error: the '{extra}' extra is not installed: pip install 'ssegrade[{extra}]'"


def main() -> NoReturn:
    """Run the command line (`interpreters.cli.main`); a missing extra is one line, exit 2."""
    try:
        command_line = importlib.import_module("interpreters.cli.main").main
        command_line()
    except ModuleNotFoundError as error:
        line = missing_extra(error)
        if line is None:
            raise
        print(line, file=sys.stderr)
        sys.exit(2)
    sys.exit(0)  # `interpreters.cli.main` always exits; this only satisfies NoReturn
