"""What `evaluate` checks before it loads the real interpreter: its task folder and its
recorded patch, each refused in the one line the grading API would give.

Interpreter layer (command line). A task folder that is missing or whose `config.yaml` is
rejected, or a `--patch` that is not a regular file, is said at the cost of reading those
files (`interpreters.real.taskfolder`, `interpreters.real.untrusted`: no git, no runner, no
copies); the grading checks them again, as the API does for every caller. A config whose
YAML, or a key's presence or type, is wrong is said by `ssegrade.internal.task_shape` in the model's
words before the task model (pydantic) loads; the model judges the rest.
"""

from __future__ import annotations

import os
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
    problem = _first_look(folder)
    if problem is not None:
        raise Refused(problem)
    from returns.pipeline import is_successful  # noqa: PLC0415 - see the module's docstring

    from interpreters.real.taskfolder import load_task  # noqa: PLC0415

    loaded = load_task(folder)
    if not is_successful(loaded):
        raise Refused(loaded.failure().message)


def _first_look(folder: Path) -> str | None:
    """What `ssegrade.internal.task_shape` finds wrong with the folder's `config.yaml`, read as
    `load_task` reads it, once no other user could replace the folder; None when it finds
    nothing or the file cannot be read (`load_task` then says why)."""
    from interpreters.real.trusted_paths import Unsafe, resolve_safe  # noqa: PLC0415
    from interpreters.real.untrusted import NotReadable, read_regular  # noqa: PLC0415
    from ssegrade.internal.task_shape import config_problem  # noqa: PLC0415

    try:
        resolve_safe(os.path.join(os.getcwd(), folder), sticky=True, entry=False)
        data = read_regular(folder / "config.yaml")
    except (Unsafe, NotReadable, OSError):
        return None
    return config_problem(data)


def read_patch(path: Path) -> bytes:
    """The bytes of a recorded patch file, as `interpreters.app.grading.read_patch` reads
    them (no link followed, a FIFO or a device refused); `Refused` when it cannot be."""
    from interpreters.real.untrusted import NotReadable, read_regular  # noqa: PLC0415

    try:
        return read_regular(path)
    except NotReadable as exc:
        raise Refused(f"--patch {exc.path}: {exc.why}") from None
