"""What a grading process leaves if it dies, and the guardian that removes it.

Interpreter layer (processes, `/proc`, cgroups, files); standard library only, because this
file is also run on its own as the guardian process (`python -I -S guardian.py`), which must
start in milliseconds.

Every process that grades (an evaluator, a daemon, a batch driver or worker) has an **owner
tag**: its PID namespace, pid and start time (`4026531836-1234-98765`). Pids are reused, start
times are not: a tag names one process for ever, and whether it is alive can be read from
`/proc` (a zombie is dead). Its run cgroups are named `ssegrade-<tag>-<token>`, its scratch
folders `ssegrade-[<kind>-]<tag>-<random>` in its temporary folder, and its scripts carry the
tag in `SSEGRADE_OWNER`. When the owner is dead, what carries its tag is garbage: any ssegrade
process may kill and remove it; what a live owner, another PID namespace, another user or
another program made is never touched.

A **guardian** is a small process of its own (own session, no parent-death signal), one per
process that makes scratch folders, started before the first of them. It reads a pipe whose
other end only that process holds: a line `-<folder>` asks it to remove that scratch folder
in the background (the grade is not kept waiting for it). When the pipe ends, the process is
gone (an exit, or a kill -9): the guardian kills what carries its tag (its cgroups' members,
the processes marked with its tag, the processes working in its scratch folders), removes
its cgroups and every scratch folder of its tag. When it starts, it removes the scratch
folders that dead owners left (a guardian killed too, a reboot without a fresh /tmp).
"""

from __future__ import annotations

import contextlib
import errno
import os
import queue
import re
import secrets
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

__all__ = [
    "GROUP_PREFIX",
    "OWNER_VAR",
    "cgroup_folders",
    "empty_group",
    "group_owner",
    "owner_alive",
    "owner_tag",
    "remove_dead_groups",
    "remove_dead_scratch",
    "scratch_owner",
]

OWNER_VAR = "SSEGRADE_OWNER"
"""The variable every script carries: the owner tag of the process that started it."""

GROUP_PREFIX = "ssegrade-"
_SCRATCH = re.compile(r"ssegrade-(?:[a-z]+-)?([0-9]+-[0-9]+-[0-9]+)-[A-Za-z0-9_]+\Z")
_KILL_SECONDS = 10.0
_TOOLS_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}


def _stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of `/proc/<pid>/stat` after the command name (state first)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            data = stat_file.read()
    except OSError:
        return None
    return data[data.rindex(b")") + 2 :].split()


def process_start(pid: int) -> int | None:
    """The start time of `pid` (clock ticks after boot), or None when there is no such
    process."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[19])


def pid_namespace() -> int:
    """The inode of our PID namespace: pids of two namespaces are not comparable."""
    return os.stat("/proc/self/ns/pid").st_ino


def owner_tag(pid: int | None = None) -> str:
    """The owner tag of `pid` (default: this process)."""
    pid = os.getpid() if pid is None else pid
    return f"{pid_namespace()}-{pid}-{process_start(pid)}"


def owner_alive(tag: str) -> bool | None:
    """Whether the process `tag` names is alive (a zombie is not); None when it cannot be
    told (another PID namespace, or not a tag)."""
    parts = tag.split("-")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        return None
    ns, pid, start = (int(part) for part in parts)
    if ns != pid_namespace():
        return None
    fields = _stat_fields(pid)
    return fields is not None and int(fields[19]) == start and fields[0] not in (b"Z", b"X")


def group_owner(name: str) -> str | None:
    """The owner tag in a cgroup's name `ssegrade-<tag>-<token>`, else None (a group of
    another program, or of an older ssegrade that did not name its owner)."""
    if not name.startswith(GROUP_PREFIX):
        return None
    parts = name[len(GROUP_PREFIX) :].split("-")
    if len(parts) != 4 or not all(part.isdigit() for part in parts[:3]) or not parts[3]:
        return None
    return "-".join(parts[:3])


def scratch_owner(name: str) -> str | None:
    """The owner tag in a scratch folder's name `ssegrade-[<kind>-]<tag>-<random>`, else
    None."""
    found = _SCRATCH.match(name)
    return found.group(1) if found else None


def _members(group: Path) -> list[int]:
    try:
        return [int(pid) for pid in (group / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def empty_group(group: Path, deadline: float) -> str | None:
    """Kill every member of `group` until none is left, then remove it. Answers None when it
    is gone, else why not (by `deadline`, a `time.monotonic()` instant)."""
    delay = 0.001
    while True:
        for pid in _members(group):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            group.rmdir()
            return None
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                return exc.strerror or str(exc)
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def remove_dead_groups(parents: list[Path], only: str | None = None) -> list[str]:
    """Empty and remove, under each of `parents`, the run cgroups whose owner is dead (`only`:
    those of that owner tag, known dead). Groups of live owners, of other PID namespaces and
    of other programs are left alone. Answers what could not be removed."""
    problems: list[str] = []
    deadline = time.monotonic() + _KILL_SECONDS
    for parent in parents:
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for name in names:
            tag = group_owner(name)
            if tag is None or (only is not None and tag != only):
                continue
            if only is None and owner_alive(tag) is not False:
                continue
            why = empty_group(parent / name, deadline)
            if why is not None:
                problems.append(f"{parent / name}: {why}")
    return problems


def cgroup_folders() -> list[Path]:
    """The folder of our own cgroup in every cgroup hierarchy mounted here (where run
    cgroups are made)."""
    try:
        own = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    paths: dict[str, str] = {}
    for line in own:
        _, names, path = line.split(":", 2)
        for name in names.split(",") if names else [""]:
            paths[name] = path
    found: set[Path] = set()
    for line in mounts:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        root, point = fields[3], fields[4]
        controllers = [""] if tail[0] == "cgroup2" else tail[2].split(",")
        for name in controllers:
            if name in paths:
                found.add(below(point, root, paths[name]))
    return sorted(found)


def below(point: str, root: str, path: str) -> Path:
    """The folder of cgroup `path` in a hierarchy mounted at `point` from its `root`."""
    relative = os.path.relpath(path, root) if path.startswith(root) else path.lstrip("/")
    return Path(os.path.normpath(os.path.join(point, relative)))


# ---------------------------------------------------------------------------- scratch folders


def remove_folder(folder: str) -> None:
    """Remove `folder` whatever its modes, following no link (GNU `chmod -R` and `rm -rf`
    never follow the links they meet)."""
    if not os.path.lexists(folder):
        return
    if os.geteuid() != 0:  # root needs no permission bits; an ordinary user may
        subprocess.run(["chmod", "-R", "u+rwx", "--", folder], env=_TOOLS_ENV, check=False)
    subprocess.run(["rm", "-rf", "--one-file-system", "--", folder], env=_TOOLS_ENV, check=False)


def _ours(path: str) -> bool:
    """Whether `path` is a folder of ours (not a link, not another user's)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()


def remove_dead_scratch(parent: str, only: str | None = None) -> int:
    """Remove, in `parent`, the scratch folders of ours whose owner is dead (`only`: those of
    that owner tag, known dead). Each is first renamed to a name of this process, so that
    two removers never work on one folder and a remover that dies leaves a folder the next
    one removes. Answers how many were removed."""
    try:
        names = os.listdir(parent)
    except OSError:
        return 0
    mine, removed = None, 0
    for name in names:
        tag = scratch_owner(name)
        if tag is None or (only is not None and tag != only):
            continue
        if only is None and owner_alive(tag) is not False:
            continue
        path = os.path.join(parent, name)
        if not _ours(path):
            continue
        mine = mine or owner_tag()
        trash = os.path.join(parent, f"ssegrade-trash-{mine}-{secrets.token_hex(6)}")
        try:
            os.rename(path, trash)
        except OSError:
            continue  # another remover took it
        remove_folder(trash)
        removed += 1
    return removed


# ---------------------------------------------------------------------------- the guardian


def _environ_has(pid: str, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return marker in environ.read().split(b"\0")
    except OSError:
        return False


def _works_in(pid: str, folders: list[str]) -> bool:
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False
    return any(cwd == folder or cwd.startswith(folder + "/") for folder in folders)


def _table() -> dict[str, str]:
    """pid -> parent pid, of every live process."""
    table: dict[str, str] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fields = _stat_fields(name)
        if fields is not None and fields[0] not in (b"Z", b"X"):
            table[name] = fields[1].decode()
    return table


def sweep_grading(tag: str, folders: list[str]) -> int:
    """Kill, until none is left, the processes that carry `tag` or work in one of `folders`,
    and their descendants (never this process). Answers how many were killed."""
    marker = f"{OWNER_VAR}={tag}".encode()
    me = str(os.getpid())
    killed: set[str] = set()
    deadline = time.monotonic() + _KILL_SECONDS
    while time.monotonic() < deadline:
        table = _table()
        hits = {
            pid
            for pid in table
            if pid != me and (_environ_has(pid, marker) or _works_in(pid, folders))
        }
        todo = list(hits)
        while todo:
            parent = todo.pop()
            for pid, ppid in table.items():
                if ppid == parent and pid not in hits and pid != me:
                    hits.add(pid)
                    todo.append(pid)
        if not hits:
            break
        for pid in hits:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(pid), signal.SIGKILL)
        killed |= hits
        time.sleep(0.01)
    return len(killed)


def _tagged(parent: str, tag: str) -> list[str]:
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    return [os.path.join(parent, name) for name in names if scratch_owner(name) == tag]


def guard(tag: str, parent: str) -> None:
    """The guardian's work: remove dead owners' scratch in `parent`, then the folders it is
    asked to remove, until its pipe (stdin) ends; then clean up after the process `tag`."""
    removals: queue.SimpleQueue[str | None] = queue.SimpleQueue()

    def remover() -> None:
        remove_dead_scratch(parent)
        while (folder := removals.get()) is not None:
            if os.path.dirname(folder) == parent and scratch_owner(os.path.basename(folder)):
                remove_folder(folder)

    worker = threading.Thread(target=remover, name="remover")
    worker.start()
    pending = b""
    while True:
        try:
            chunk = os.read(0, 4096)
        except InterruptedError:
            continue
        except OSError:
            break
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.startswith(b"-"):
                removals.put(os.fsdecode(line[1:]))
    # The process is gone: nothing it started may go on.
    groups = cgroup_folders()
    remove_dead_groups(groups, only=tag)
    sweep_grading(tag, _tagged(parent, tag))
    remove_dead_groups(groups, only=tag)
    removals.put(None)
    remove_dead_scratch(parent, only=tag)
    worker.join()


def main(argv: list[str]) -> int:
    """`guardian.py TAG TMPDIR`, stdin the pipe of the process `TAG`."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    tag, parent = argv
    os.chdir("/")  # holds no folder of its parent's busy
    guard(tag, parent)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
