"""A task script's view of its task folder: `$(dirname "$0")/..` as under SSEBench.

Interpreter layer. SSEBench runs a task's scripts where they lie, so a script finds its task
folder from `$0` (`$(dirname "$0")/../build.pid`, `$(dirname "$0")/../harness`). ssegrade never
lets the runner at the task folder itself, which holds hidden material (SPEC §5); each script
runs from a staged copy instead. So the copy is staged inside a **view of the task folder**:
every file of the task but its hidden material (`config.yaml`, the scripts, the PoCs, the
hidden tests, the reference fix: `Task.hidden_files`), with the script put back at its own
place, so that `$(dirname "$0")/..` (for `scripts/build.sh`) is that view. The view is the
runner's, made for one check and removed with it: what a script writes there reaches neither
the task folder nor the next check.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from returns.pipeline import is_successful

from interpreters.real import files
from interpreters.real.taskfolder import load_task

__all__ = ["stage_in_view"]


def _parts(path: str) -> tuple[str, ...]:
    return tuple(p for p in PurePosixPath(path).parts if p not in (".", ""))


def _prune(top: Path, parts: tuple[str, ...]) -> None:
    """Remove `top/parts` from a tree of ours without following any link on the way: a link
    met before the last part is removed itself (whatever it leads to is not in the view)."""
    here = top
    for index, part in enumerate(parts):
        path = here / part
        try:
            info = path.lstat()
        except FileNotFoundError:
            return
        last = index == len(parts) - 1
        if stat.S_ISDIR(info.st_mode) and not last:
            here = path
            continue
        if stat.S_ISDIR(info.st_mode):
            files.remove_tree(path)
        else:
            path.unlink()
        return


def _hidden_places(folder: Path, hidden: tuple[str, ...]) -> set[tuple[str, ...]]:
    """Every place of the task folder that holds hidden material: each path as named, as it
    resolves (a link on the way), and every other name of the same file (a hard link)."""
    top = folder.resolve()
    places: set[tuple[str, ...]] = set()
    inodes: set[tuple[int, int]] = set()
    for path in hidden:
        places.add(_parts(path))
        resolved = (folder / path).resolve()
        if resolved.is_relative_to(top):
            places.add(resolved.relative_to(top).parts)
        try:
            info = resolved.lstat()
        except OSError:
            continue
        inodes.add((info.st_dev, info.st_ino))
    for here, _folders, names in os.walk(top):
        for name in names:
            try:
                info = os.lstat(os.path.join(here, name))
            except OSError:
                continue
            if (info.st_dev, info.st_ino) in inodes:
                places.add((Path(here) / name).relative_to(top).parts)
    return places


def _clear_way(top: Path, parts: tuple[str, ...]) -> None:
    """Leave only folders along `top/parts`: the first entry on the way that is not one (a
    link, a file) is removed, and the rest of the way is left to be made."""
    here = top
    for part in parts:
        here = here / part
        try:
            info = here.lstat()
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(info.st_mode):
            here.unlink()
            return


def stage_in_view(
    folder: Path,
    script: Path,
    slot: Path,
    owner: tuple[int, int] | None,
    check: Callable[[], None] | None = None,
) -> Path | None:
    """When `script` is one of the scripts of the task in `folder`: the view of the task
    folder made in `slot` (which only root may enter until the caller hands it over), the
    script at its place in it; answers the script's path there. None when `script` is not a
    script of that task (the caller stages it alone)."""
    folder, script = folder.absolute(), script.absolute()
    try:
        relative = _parts(str(script.relative_to(folder)))
    except ValueError:
        return None
    loaded = load_task(folder)
    if not is_successful(loaded):
        return None
    task = loaded.unwrap()
    scripts = {_parts(p) for p in (task.scripts.build, task.scripts.run, task.scripts.test) if p}
    if relative not in scripts or ".." in relative:
        return None
    view = slot / (folder.name or "task")
    files.fresh_copy(folder, view, owner, check=check)
    for hidden in _hidden_places(folder, ("config.yaml", *task.hidden_files())):
        _prune(view, hidden)
    target = view.joinpath(*relative)
    _clear_way(view, relative[:-1])
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(script, target, follow_symlinks=False)
    if owner is not None:
        here = target
        while here != view:
            os.chown(here, *owner, follow_symlinks=False)
            here = here.parent
    return target
