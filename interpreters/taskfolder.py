"""Reading a task folder from disk: `config.yaml` parsed by the core, named files checked here."""

from __future__ import annotations

from pathlib import Path

from returns.pipeline import is_successful
from returns.result import Failure, Result, Success

from ssegrade import Task, TaskError, parse_task

__all__ = ["load_task", "resolve_source"]


def load_task(folder: Path) -> Result[Task, TaskError]:
    """Parse `folder/config.yaml` and check that every file it names exists."""
    if not folder.is_dir():
        return Failure(TaskError(f"task folder not found: {folder}"))
    try:
        data = (folder / "config.yaml").read_bytes()
    except FileNotFoundError:
        return Failure(TaskError(f"config.yaml: no such file in {folder}"))
    except OSError as exc:
        return Failure(TaskError(f"config.yaml: cannot read it ({exc.strerror})"))
    parsed = parse_task(data)
    if not is_successful(parsed):
        return parsed
    task = parsed.unwrap()
    for key, path in task.named_files():
        if not (folder / path).is_file():
            return Failure(TaskError.missing_file(key, path))
    return Success(task)


def resolve_source(task: Task, folder: Path, given: Path | None) -> Result[Path, TaskError]:
    """The source tree: the command line's, else the config's (relative to the task folder)."""
    if given is not None:
        source = given
    elif task.source is not None:
        source = folder / task.source
    else:
        return Failure(TaskError("no source tree: give --source or set `source` in config.yaml"))
    if not source.is_dir():
        return Failure(TaskError(f"source tree not found: {source}"))
    return Success(source.resolve())
