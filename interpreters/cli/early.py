"""What `evaluate` checks before it loads the real interpreter: its task folder and its
recorded patch, each refused in the one line the grading API would give.

Interpreter layer (command line). A task folder that is missing or whose `config.yaml` is
rejected, or a `--patch` that is not a regular file, is said at the cost of reading those
files (`interpreters.real.taskfolder`, `interpreters.real.untrusted`: the task model, no git,
no runner, no copies); the grading checks them again, as the API does for every caller.
"""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["Refused", "check_task", "read_patch"]


class Refused(click.ClickException):
    """Input a command cannot work with: one line on stderr, exit status 2, as the grading
    API's `InputError`."""

    exit_code = 2


def check_task(task_dir: Path) -> None:
    """`Refused` unless `task_dir` holds a `config.yaml` the grading would take."""
    folder = task_dir.absolute()
    if not folder.is_dir():
        raise Refused(f"task folder not found: {folder} (give --task DIR or set SSE_BENCH_PATH)")
    from returns.pipeline import is_successful  # noqa: PLC0415 - see the module's docstring

    from interpreters.real.taskfolder import load_task  # noqa: PLC0415

    loaded = load_task(folder)
    if not is_successful(loaded):
        raise Refused(loaded.failure().message)


def read_patch(path: Path) -> bytes:
    """The bytes of a recorded patch file, as `interpreters.app.grading.read_patch` reads
    them (no link followed, a FIFO or a device refused); `Refused` when it cannot be."""
    from interpreters.real.untrusted import NotReadable, read_regular  # noqa: PLC0415

    try:
        return read_regular(path)
    except NotReadable as exc:
        raise Refused(f"--patch {exc.path}: {exc.why}") from None
