"""What containment the operator asks for (`ContainmentPolicy`) and what one script run gets
(`Mechanisms`), with the line its log says about it.

Interpreter layer (plain data; `probe` decides, `containment` applies). Three modes:

- `full`: a PID namespace (everything the script starts dies with it), a mount namespace
  where the host is read-only, with a private, size-limited `/tmp`, `/var/tmp` and
  `/dev/shm` (see `reach`), an IPC namespace, a network namespace with only loopback up
  (unless `network="host"`), a pids cgroup, and the runner's keyrings cleared around it (or
  no key call reachable at all: Docker's seccomp profile); all of it, or the script does not
  run;
- `container`: as root inside a container where `full` cannot be had: the container is the
  boundary. Its own session, as the runner; one grading at a time in the container, and after
  each script every process of the runner in the container killed and what it left in `/tmp`,
  `/var/tmp` and `/dev/shm` removed (see `residue`);
- `weak`: its own session and process group, and the sweep of its markers; chosen with
  `--containment weak`, and what runs when ssegrade is not root.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from interpreters.real.runner.cgroups import Cgroups
from ssegrade.internal.errors import SsegradeError

__all__ = [
    "DEFAULT_PIDS",
    "DEFAULT_TMP_SIZE",
    "ContainmentPolicy",
    "ContainmentRefused",
    "Mechanisms",
    "Mode",
    "Network",
    "size_text",
]

DEFAULT_PIDS = 4096
"""The default limit on processes and threads of one script run (a fork bomb stops there)."""

DEFAULT_TMP_SIZE = 1 << 30
"""The default size of a script's private `/tmp`, `/var/tmp` and `/dev/shm` (each)."""

Mode = Literal["full", "container", "weak"]
Network = Literal["loopback", "host"]


class ContainmentRefused(SsegradeError):
    """The containment asked for cannot be had here; the message is one line naming what is
    missing."""


@dataclass(frozen=True, slots=True)
class ContainmentPolicy:
    """What the operator asked for: `mode` (None, `--containment auto`: `full` as root where it
    can be had, else `container` inside a container; `weak` without root), the
    scripts' `network` (`loopback`: a namespace of their own; `host`: the host's) and the size
    of their private `/tmp`, `/var/tmp` and `/dev/shm` (bytes, each)."""

    mode: Mode | None = None
    network: Network = "loopback"
    tmp_size: int = DEFAULT_TMP_SIZE


@dataclass(frozen=True, slots=True)
class Mechanisms:
    """The containment a script run gets: `mode`, and for `full` the tools, the cgroups, the
    network, the size of `/tmp` and whether the runner can reach kernel keys at all (`keys`:
    its keyrings are then cleared); for `container` and `weak`, `weaker` says why not
    `full`."""

    mode: Mode
    weaker: str | None = None
    unshare: str = ""
    init: str = ""
    setpriv: str = ""
    cgroups: Cgroups | None = None
    network: Network = "loopback"
    tmp_size: int = DEFAULT_TMP_SIZE
    keys: bool = True

    @property
    def namespaces(self) -> bool:
        """Whether the run gets namespaces (`full`)."""
        return self.mode == "full"

    def describe(self) -> str:
        """The `containment:` line of a script's log."""
        if self.mode == "container":
            return (
                f"containment: container ({self.weaker}): the container is the boundary: its "
                "own session as the runner, one grading at a time in the container, and after "
                "each script every process of the runner in the container killed and what it "
                "left in /tmp, /var/tmp and /dev/shm removed; no PID, mount or network namespace "
                "of its own, no pids limit but the container's"
            )
        if self.mode == "weak":
            return (
                f"containment: weak ({self.weaker}): its own session and process group, and a "
                "sweep of what carries its run marker; /tmp, /var/tmp, /dev/shm and the network "
                "are shared, no pids limit"
            )
        spaces = (
            "PID, mount, IPC and network" if self.network == "loopback" else "PID, mount and IPC"
        )
        groups = self.cgroups.describe() if self.cgroups else "no cgroup"
        keys = (
            "the runner's keyrings cleared before and after"
            if self.keys
            else "no key system call for the runner (refused to ssegrade and all it starts)"
        )
        return (
            f"containment: full ({spaces} namespaces; the host read-only; private /tmp, "
            f"/var/tmp and /dev/shm of {size_text(self.tmp_size)} each; {groups}; {keys})"
        )

    def network_line(self) -> str:
        """The `network:` line of a script's log."""
        if self.mode == "container":
            return "network: the container's (container containment)"
        if self.mode == "weak" or self.network == "host":
            why = "--script-network host" if self.mode == "full" else "weak containment"
            return f"network: the host's ({why})"
        return "network: loopback only (a network namespace of its own)"


def size_text(size: int) -> str:
    """`1 GiB`, `512 MiB`, `4096 bytes`."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} bytes"
