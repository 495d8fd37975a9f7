"""The `ssegrade` console script: the command line, or one line that names the extra it needs.

Interpreter layer. The core installs alone (`pip install ssegrade`); the command line needs
the `cli` extra (click, rich), the daemon `daemon`, the report `report`, the Ray engine
`ray` (`pip install 'ssegrade[all]'` has every command). A command whose extra is missing
says so on one line of stderr, `ssegrade: error: …`, and exits 2, never with a traceback.
Nothing is imported here before the command line is: the archive's child of `evaluate` is
started by the real interpreter when the grading program says it may (`MayRunAhead`).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
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


_ended: list[object] = []
"""The status `evaluate` exited with, once it did."""


def _without_teardown() -> None:
    """The last exit handler of `evaluate`: once every other one ran (and every thread
    ended), leave with its status at once. Tearing down the modules a grading loaded costs
    more than the rest of the exit, and nothing it wrote waits for it: every file is closed by
    then. Measured from the last line a process importing what `evaluate` imports runs to its
    end, 9 runs each on 2 CPUs at load average 14: a median of 0.88 s through the usual
    teardown, 0.04 s through `os._exit` (tens of milliseconds on an idle host)."""
    if not _ended:
        return  # ended by an exception: the usual way, traceback and all
    code = _ended[0]
    if isinstance(code, str):
        print(code, file=sys.stderr)
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)


def main() -> NoReturn:
    """Run the command line (`interpreters.cli.main`); a missing extra is one line, exit 2.
    `evaluate` ends without the interpreter's teardown (`_without_teardown`); `daemon` binds
    its admin socket first and answers `GET /version` there until it serves
    (`interpreters.daemon.binding.bind_early`)."""
    arguments = sys.argv[1:]
    evaluating = arguments[:1] == ["evaluate"]
    if evaluating:
        atexit.register(_without_teardown)  # registered first, so run last
    if arguments[:1] == ["daemon"]:  # its admin socket takes connections at once
        from interpreters.daemon.binding import bind_early  # noqa: PLC0415

        bind_early(arguments[1:], os.environ)
    try:
        command_line = importlib.import_module("interpreters.cli.main").main
        command_line()
    except SystemExit as ended:
        _ended.append(ended.code)
        raise
    except ModuleNotFoundError as error:
        line = missing_extra(error)
        if line is None:
            raise
        print(line, file=sys.stderr)
        sys.exit(2)
    sys.exit(0)  # `interpreters.cli.main` always exits; this only satisfies NoReturn
