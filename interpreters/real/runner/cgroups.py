"""The cgroups of script runs: where they can be made, and making one under a name no other
process holds.

Interpreter layer (reads `/proc/self/cgroup` and `/proc/self/mountinfo`, makes folders under
`/sys/fs/cgroup`). A run's group is named `ssegrade-<owner tag>-<random token>` (see
`guardian`): the owner tag tells whether the process that made it is alive, the token makes
the name unused. A name found taken (`EEXIST`) is tried again with another token; any other
error is the kernel refusing, and is said as such.
"""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from interpreters.real.runner.guardian import GROUP_PREFIX, below
from interpreters.real.runner.guarding import guarded_tag

__all__ = ["Cgroups", "find_cgroups", "make_group"]

_CONTROLLERS = ("pids", "memory")
_TRIES = 16


@dataclass(frozen=True, slots=True)
class Cgroups:
    """Where run cgroups are made: `version` 1 or 2, and per controller the folder under
    which a run's group is created."""

    version: int
    parents: dict[str, Path]

    def describe(self) -> str:
        """E.g. `cgroup v1 (pids, memory)`."""
        return f"cgroup v{self.version} ({', '.join(self.parents)})"


def make_group(parent: Path, tag: str | None = None) -> Path:
    """A new cgroup under `parent`, named for the owner `tag` (default: this process, whose
    guardian is started first, so that a kill -9 at any moment leaves no group behind) and a
    random token, mode 0755. Raises `OSError` when the kernel refuses."""
    tag = guarded_tag() if tag is None else tag
    for _ in range(_TRIES):
        group = parent / f"{GROUP_PREFIX}{tag}-{_token()}"
        try:
            group.mkdir(mode=0o755)
        except FileExistsError:
            continue  # taken: another token
        return group
    raise OSError(errno.EEXIST, f"no free cgroup name after {_TRIES} tries", os.fspath(parent))


def _token() -> str:
    """The random part of a group's name."""
    return secrets.token_hex(6)


def find_cgroups(
    remap: Mapping[str, str] | None = None,
) -> tuple[Cgroups | None, str | None]:
    """Folders under which run cgroups can be made (tried by making one), or why not;
    `remap` gives a mount point another path to it (a writable clone, see `cgroupmount`)."""
    try:
        own = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError as exc:
        return None, f"cgroups unreadable: {exc.strerror}"
    paths: dict[str, str] = {}
    for line in own:
        _, names, path = line.split(":", 2)
        for name in names.split(",") if names else [""]:
            paths[name] = path
    v1: dict[str, Path] = {}
    v2: Path | None = None
    for line in mounts:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        root, point, kind, options = fields[3], fields[4], tail[0], tail[2].split(",")
        point = (remap or {}).get(point, point)
        if kind == "cgroup2" and "" in paths:
            v2 = below(point, root, paths[""])
        elif kind == "cgroup":
            for name in _CONTROLLERS:
                if name in options and name in paths:
                    v1[name] = below(point, root, paths[name])
    refused = "no cgroup hierarchy with the pids controller"
    if "pids" in v1:
        made = {}
        for name, parent in v1.items():
            why = _refusal(parent)
            if why is None:
                made[name] = parent
            elif name == "pids":
                refused = f"pids cgroup refused: {why}"
        if "pids" in made:
            return Cgroups(1, made), None
    if v2 is not None:
        try:
            enabled = (v2 / "cgroup.subtree_control").read_text().split()
        except OSError:
            enabled = []
        why = _refusal(v2) if "pids" in enabled else "pids is not delegated to our cgroup"
        if why is None:
            wanted = [name for name in _CONTROLLERS if name in enabled]
            return Cgroups(2, dict.fromkeys(wanted, v2)), None
        if "pids" not in v1:
            refused = f"cgroup v2: {why}"
    return None, refused


def _refusal(parent: Path) -> str | None:
    """Why no group can be made under `parent` (None: one was made and removed)."""
    try:
        trial = make_group(parent)
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        trial.rmdir()
    except OSError as exc:
        return f"cannot remove {trial}: {exc.strerror}"
    return None
