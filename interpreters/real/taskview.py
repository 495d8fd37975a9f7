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
from ssegrade.internal.effects import Staged, StageItem

__all__ = ["stage_folder_of", "stage_in_view", "stage_items"]


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


def stage_items(
    folder: Path,
    items: tuple[StageItem, ...],
    task: Path,
    owner: tuple[int, int] | None,
    check: Callable[[], None],
) -> Staged:
    """Stage `items` in a new `folder` (0700, `owner`'s), one slot each: a script inside its
    view of the `task` folder (`stage_in_view`), else a file alone, or a file with the folder
    it comes along with; `check` is called between files (a deadline, an interrupt)."""
    folder.mkdir(mode=0o700)
    staged: list[str] = []
    for index, item in enumerate(items):
        slot = folder / str(index)
        slot.mkdir(mode=0o700)
        viewed = None
        if item.along is None:  # a script finds its task folder from $0
            viewed = stage_in_view(task, Path(item.path), slot, owner, check)
        if viewed is not None:
            target = viewed
        elif item.along is None:
            target = slot / Path(item.path).name
            shutil.copy2(item.path, target, follow_symlinks=False)
            if owner is not None:
                os.chown(target, *owner, follow_symlinks=False)
        else:
            along = Path(item.along)
            files.fresh_copy(along, slot / along.name, owner, check=check)
            target = slot / along.name / Path(item.path).relative_to(along)
        if owner is not None:
            os.chown(slot, *owner)
        staged.append(str(target))
    if owner is not None:
        os.chown(folder, *owner)
    return Staged(str(folder), tuple(staged))


def stage_folder_of(scratch: Path, script: Path) -> tuple[Path, ...]:
    """The stage folder a staged script lies in, kept whole: its view of the task folder
    holds more than the script's own folder (none for a path outside `scratch`)."""
    if script == scratch or not script.is_relative_to(scratch):
        return ()
    return (scratch / script.relative_to(scratch).parts[0],)
