"""Whether this process runs inside a container, told from the kernel's view (`read_facts`,
then `judge`), and whether it holds `CAP_SYS_ADMIN`.

Interpreter layer (reads `/proc` and two marker files; `judge` is plain data). No one file
decides. The kernel facts are the inodes of this process's namespaces: the kernel gives its
initial PID, UTS, IPC and cgroup namespaces fixed inode numbers, so a namespace with another
number is one a container engine (or someone) made; and a cgroup hierarchy mounted from a
subtree (the container sees its own cgroup as the root). Supporting evidence: the `container`
variable of PID 1 (podman, systemd-nspawn, LXC set it) and the engines' marker files
`/run/.containerenv` (podman) and `/.dockerenv` (Docker), which anyone can create and which a
host may carry (an image built into a VM's disk keeps its `/.dockerenv`).

The rule: inside a container when **the PID namespace is not the initial one** (without it,
killing every process of an account would reach the host's: `container` containment is never
had there) **and** at least one other sign, kernel fact or supporting evidence, is there.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

__all__ = ["INITIAL", "MARKERS", "Facts", "Whereabouts", "judge", "read_facts"]

INITIAL = {"pid": 0xEFFFFFFC, "uts": 0xEFFFFFFE, "ipc": 0xEFFFFFFF, "cgroup": 0xEFFFFFFB}
"""The inode numbers of the kernel's initial namespaces (`PROC_*_INIT_INO`), fixed since 3.8."""

MARKERS = ("/run/.containerenv", "/.dockerenv")
"""The files container engines leave in a container's root (supporting evidence only)."""

_CAP_SYS_ADMIN = 21


@dataclass(frozen=True, slots=True)
class Facts:
    """What the kernel (and the root file system) shows: per namespace kind of `INITIAL` the
    inode of ours (None: unreadable); whether a cgroup hierarchy is mounted from a subtree;
    PID 1's `container` variable; the marker files present; whether we hold CAP_SYS_ADMIN."""

    namespaces: dict[str, int | None]
    cgroup_subtree: bool = False
    pid1_container: str | None = None
    markers: tuple[str, ...] = ()
    sys_admin: bool = False


@dataclass(frozen=True, slots=True)
class Whereabouts:
    """Where this process runs: `container`, and the signs seen (each a short phrase)."""

    container: bool
    signs: tuple[str, ...] = ()

    def describe(self) -> str:
        """E.g. `inside a container (a PID namespace not the host's; container=podman …)`."""
        seen = "; ".join(self.signs) if self.signs else "no sign of one"
        return f"{'inside' if self.container else 'not inside'} a container ({seen})"


def judge(facts: Facts) -> Whereabouts:
    """Whether `facts` say a container (see the module's docstring for the rule)."""
    own = [
        kind
        for kind, initial in INITIAL.items()
        if facts.namespaces.get(kind) is not None and facts.namespaces[kind] != initial
    ]
    signs = [f"{kind} namespace not the host's" for kind in own]
    if facts.cgroup_subtree:
        signs.append("cgroups mounted from a subtree")
    if facts.pid1_container:
        signs.append(f"container={facts.pid1_container} in PID 1's environment")
    signs.extend(f"{marker} present" for marker in facts.markers)
    if "pid" not in own:
        signs.insert(0, "the host's PID namespace")
        return Whereabouts(False, tuple(signs))
    return Whereabouts(len(signs) >= 2, tuple(signs))


def read_facts() -> Facts:
    """The facts of this process, read now (what cannot be read counts as not seen)."""
    namespaces: dict[str, int | None] = {}
    for kind in INITIAL:
        try:
            namespaces[kind] = os.stat(f"/proc/self/ns/{kind}").st_ino
        except OSError:
            namespaces[kind] = None
    return Facts(
        namespaces=namespaces,
        cgroup_subtree=_cgroup_subtree(),
        pid1_container=_pid1_container(),
        markers=tuple(marker for marker in MARKERS if os.path.lexists(marker)),
        sys_admin=has_sys_admin(),
    )


def has_sys_admin() -> bool:
    """Whether this process's effective capabilities hold CAP_SYS_ADMIN."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"CapEff:"):
                    return bool(int(line.split()[1], 16) >> _CAP_SYS_ADMIN & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def _cgroup_subtree() -> bool:
    try:
        with open("/proc/self/mountinfo", "rb") as mountinfo:
            lines = mountinfo.read().splitlines()
    except OSError:
        return False
    for line in lines:
        left, _, right = line.partition(b" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and tail[:1] in ([b"cgroup"], [b"cgroup2"]) and fields[3] != b"/":
            return True
    return False


def _pid1_container() -> str | None:
    try:
        with open("/proc/1/environ", "rb") as environ:
            entries = environ.read().split(b"\0")
    except OSError:
        return None
    for entry in entries:
        if entry.startswith(b"container="):
            value = re.sub(rb"[^A-Za-z0-9._-]", b"?", entry.removeprefix(b"container="))
            return value[:40].decode() or None
    return None
