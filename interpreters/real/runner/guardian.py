"""What a grading leaves if its grader dies, and the guardian that removes it.

Interpreter layer (processes, `/proc`, cgroups, files); standard library only, because this
file is also run on its own as the guardian process (`python -I -S guardian.py`), which must
start in milliseconds.

Every process that grades (an evaluator, a daemon, a batch worker) has an **owner tag**: its
PID namespace, pid and start time (`4026531836-1234-98765`). Pids are reused, start times
are not: a tag names one process for ever, and whether it is alive can be read from `/proc`.
The cgroups of its script runs are named `ssegrade-<tag>-<token>`, and its scripts carry the
tag in `SSEGRADE_OWNER`. When the owner is dead, what carries its tag is garbage: any
ssegrade process may kill it and remove it (`remove_dead_groups`); a group whose owner lives,
or lives in another PID namespace, is never touched.

A **guardian** is a small process of its own (own session, no parent-death signal) started
for each grading's scratch folder. It waits for the end of a pipe whose other end only the
grader holds. When the grader says `done` and closes it, the guardian removes the scratch
folder (the grade is not kept waiting for that). When the pipe ends without `done`, the
grader died (kill -9): the guardian kills what carries the grader's tag (its cgroups'
members, the processes marked with its tag, the processes working in the scratch folder) and
then removes the scratch folder.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

__all__ = [
    "GROUP_PREFIX",
    "OWNER_VAR",
    "empty_group",
    "group_owner",
    "owner_alive",
    "owner_tag",
    "remove_dead_groups",
]

OWNER_VAR = "SSEGRADE_OWNER"
"""The variable every script carries: the owner tag of the process that started it."""

GROUP_PREFIX = "ssegrade-"
_DONE = b"done"
_KILL_SECONDS = 10.0
_TOOLS_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}


def process_start(pid: int) -> int | None:
    """The start time of `pid` (clock ticks after boot), or None when there is no such
    process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            data = stat_file.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2 :].split()
    return int(fields[19])


def pid_namespace() -> int:
    """The inode of our PID namespace: pids of two namespaces are not comparable."""
    return os.stat("/proc/self/ns/pid").st_ino


def owner_tag(pid: int | None = None) -> str:
    """The owner tag of `pid` (default: this process)."""
    pid = os.getpid() if pid is None else pid
    return f"{pid_namespace()}-{pid}-{process_start(pid)}"


def owner_alive(tag: str) -> bool | None:
    """Whether the process `tag` names is alive; None when it cannot be told (another PID
    namespace, or not a tag)."""
    parts = tag.split("-")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        return None
    ns, pid, start = (int(part) for part in parts)
    if ns != pid_namespace():
        return None
    return process_start(pid) == start


def group_owner(name: str) -> str | None:
    """The owner tag in a cgroup's name `ssegrade-<tag>-<token>`, else None (a group of
    another program, or of an older ssegrade that did not name its owner)."""
    if not name.startswith(GROUP_PREFIX):
        return None
    parts = name[len(GROUP_PREFIX) :].split("-")
    if len(parts) != 4 or not all(part.isdigit() for part in parts[:3]) or not parts[3]:
        return None
    return "-".join(parts[:3])


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
    those of that owner tag, which must be dead). Groups of live owners, of other PID
    namespaces and of other programs are left alone. Answers what could not be removed."""
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
            if owner_alive(tag) is not False:
                continue
            why = empty_group(parent / name, deadline)
            if why is not None:
                problems.append(f"{parent / name}: {why}")
    return problems


# ---------------------------------------------------------------------------- the guardian


def _environ_has(pid: str, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return marker in environ.read().split(b"\0")
    except OSError:
        return False


def _works_in(pid: str, folder: str) -> bool:
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False
    return cwd == folder or cwd.startswith(folder + "/")


def _table() -> dict[str, str]:
    """pid -> parent pid, of every live process."""
    table: dict[str, str] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat_file:
                data = stat_file.read()
        except OSError:
            continue
        fields = data[data.rindex(b")") + 2 :].split()
        if fields[0] not in (b"Z", b"X"):
            table[name] = fields[1].decode()
    return table


def sweep_grading(tag: str, scratch: str | None) -> int:
    """Kill, until none is left, the processes that carry `tag` or work in `scratch`, and
    their descendants (never this process). Answers how many were killed."""
    marker = f"{OWNER_VAR}={tag}".encode()
    me = str(os.getpid())
    killed: set[str] = set()
    deadline = time.monotonic() + _KILL_SECONDS
    while time.monotonic() < deadline:
        table = _table()
        hits = {
            pid
            for pid in table
            if pid != me
            and (_environ_has(pid, marker) or (scratch is not None and _works_in(pid, scratch)))
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


def remove_folder(folder: str) -> None:
    """Remove `folder` whatever its modes, following no link (GNU `chmod -R` and `rm -rf`
    never follow the links they meet)."""
    if not os.path.lexists(folder):
        return
    if os.geteuid() != 0:  # root needs no permission bits; an ordinary user may
        subprocess.run(["chmod", "-R", "u+rwx", "--", folder], env=_TOOLS_ENV, check=False)
    subprocess.run(["rm", "-rf", "--one-file-system", "--", folder], env=_TOOLS_ENV, check=False)


def guard(tag: str, scratch: str | None, parents: list[Path]) -> None:
    """The guardian's work: wait for the end of stdin; clean up after the grader."""
    said = b""
    while True:
        try:
            chunk = os.read(0, 64)
        except InterruptedError:
            continue
        except OSError:
            break
        if not chunk:
            break
        said += chunk
    if said.strip() != _DONE:  # the grader died: nothing of its gradings may go on
        remove_dead_groups(parents, only=tag)
        sweep_grading(tag, scratch)
        remove_dead_groups(parents, only=tag)
    if scratch is not None:
        remove_folder(scratch)


def main(argv: list[str]) -> int:
    """`guardian.py TAG SCRATCH|- [CGROUP_PARENT...]`, stdin the grader's pipe."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    tag, scratch, *parents = argv
    guard(tag, None if scratch == "-" else scratch, [Path(p) for p in parents])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
