"""What containment this process can give scripts, found once by trying it (`probe`), and
the containment a run gets under a policy (`choose`).

Interpreter layer (runs `unshare` and `true` in trial containments, removes leftover
cgroups). The probe, once per process and as root only, first removes the run cgroups that
dead ssegrade processes left behind (a kill -9), then makes a trial containment with every
mechanism of `full` and runs `true` in it; a mechanism the kernel refuses is named with
the kernel's reason, and the others are tried without it. The programs (`unshare`,
`timeout`, `setpriv`, `true`) are found on the search path root trusts (`programs`); one
missing or refused there is named like a mechanism the kernel refuses. Its cgroups have names
no other process holds (see `cgroups`): two processes probing at once both get what the kernel
allows. It also tells where this process runs (`inside`: a container or not, and whether
it holds CAP_SYS_ADMIN), which `decide` needs for `--containment auto` and `container`.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field, replace

from interpreters.real.programs import ProgramError, ProgramMissing, program
from interpreters.real.runner.account import TOOL_ENV, Runner
from interpreters.real.runner.cgroupmount import read_only_cgroup_mounts, writable_clones
from interpreters.real.runner.cgroups import Cgroups, find_cgroups
from interpreters.real.runner.containment import Confinement
from interpreters.real.runner.guardian import remove_dead_groups
from interpreters.real.runner.inside import Whereabouts, has_sys_admin, judge, read_facts
from interpreters.real.runner.keyrings import out_of_reach
from interpreters.real.runner.policy import (
    ContainmentPolicy,
    ContainmentRefused,
    Mechanisms,
)

__all__ = ["Offer", "choose", "decide", "probe"]

_TOOLS = {
    "unshare": "util-linux unshare",
    "timeout": "coreutils timeout",
    "setpriv": "setpriv",
    "true": "coreutils true",
}


@dataclass(frozen=True, slots=True)
class Offer:
    """What this process can give: `root`, the tools, the cgroups, per mechanism of `full`
    that the kernel (or this host) refuses, why (`missing`: mechanism → reason), where it
    runs (`where`) and whether it holds CAP_SYS_ADMIN."""

    root: bool
    tools: dict[str, str] = field(default_factory=dict)
    cgroups: Cgroups | None = None
    missing: dict[str, str] = field(default_factory=dict)
    leftovers: tuple[str, ...] = ()
    where: Whereabouts = field(default_factory=lambda: Whereabouts(False))
    sys_admin: bool = False

    @property
    def namespaces(self) -> bool:
        """Whether `full` containment can be had (with the network namespace)."""
        return self.root and not self.missing

    def describe(self) -> str:
        """What `full` lacks here, in one line (empty when nothing)."""
        if not self.root:
            return "not root"
        return "; ".join(f"no {name} ({why})" for name, why in self.missing.items())


_lock = threading.Lock()
_probed: dict[int, Offer] = {}


def probe() -> Offer:
    """What this process can give scripts, found once per process (threads wait for the
    first probe; a forked child probes again)."""
    with _lock:
        found = _probed.get(os.getpid())
        if found is None:
            found = _probe()
            _probed.clear()
            _probed[os.getpid()] = found
        return found


def choose(policy: ContainmentPolicy) -> Mechanisms:
    """The containment a run gets here under `policy` (see `decide`)."""
    return decide(probe(), policy)


def decide(offer: Offer, policy: ContainmentPolicy) -> Mechanisms:
    """The containment a run gets under `policy` when `offer` is what can be had.

    `auto` (mode None): `weak` without root; `full` where it can be had; else `container`
    inside a container; else refused. A mode asked for is had or refused, never another one.
    Raises `ContainmentRefused` (one line naming what is missing); `weak` is only ever chosen
    or had without root, never fallen into as root."""
    mode = policy.mode
    if mode == "weak" or (mode is None and not offer.root):
        why = "chosen with --containment weak" if offer.root else "not root"
        return Mechanisms("weak", weaker=why)
    if not offer.root:
        raise ContainmentRefused(f"{mode} containment needs root; give --containment weak")
    missing = dict(offer.missing)
    if policy.network == "host":
        missing.pop("network namespace", None)
    lacking = "; ".join(f"no {name} ({' '.join(why.split())})" for name, why in missing.items())
    if mode == "container" or (mode is None and missing and offer.where.container):
        if not offer.where.container:
            raise ContainmentRefused(
                f"container containment cannot be had: {offer.where.describe()}; outside a "
                "container, killing every process of the runner account would reach the host's"
            )
        if mode == "container":
            why = "chosen with --containment container"
        else:
            without = "full cannot be had" if offer.sys_admin else "no CAP_SYS_ADMIN"
            why = f"{without}: {lacking}; {offer.where.describe()}"
        return Mechanisms("container", weaker=why, network="host")
    if missing:
        raise ContainmentRefused(
            f"full containment cannot be had: {lacking}; --containment weak runs scripts without it"
        )
    return Mechanisms(
        "full",
        unshare=offer.tools["unshare"],
        init=offer.tools["timeout"],
        setpriv=offer.tools["setpriv"],
        cgroups=offer.cgroups,
        network=policy.network,
        tmp_size=policy.tmp_size,
        keys=not out_of_reach(),
    )


def _probe() -> Offer:
    if os.geteuid() != 0:
        return Offer(root=False, sys_admin=has_sys_admin())
    facts = read_facts()
    tools: dict[str, str] = {}
    missing: dict[str, str] = {}
    for name, what in _TOOLS.items():
        try:
            tools[name] = program(name)
        except ProgramMissing:
            missing[what] = "not installed"
        except ProgramError as exc:
            missing[what] = str(exc)
    cgroups, why = find_cgroups()
    if cgroups is None and "Read-only file system" in (why or ""):
        cgroups, why = _writable_cgroups(why or "", facts.sys_admin)
    leftovers: list[str] = []
    if cgroups is None:
        missing["pids cgroup"] = why or "refused"
    else:
        leftovers = remove_dead_groups(sorted(set(cgroups.parents.values())))
    if len(tools) == len(_TOOLS):
        trial = Mechanisms(
            "full",
            unshare=tools["unshare"],
            init=tools["timeout"],
            setpriv=tools["setpriv"],
            cgroups=cgroups,
        )
        while True:
            failed = _trial(trial, tools["true"])
            if failed is None:
                break
            name, reason = failed
            missing[name] = reason
            if name != "network namespace" or trial.network == "host":
                break
            trial = replace(trial, network="host")  # the rest, without it
    return Offer(True, tools, cgroups, missing, tuple(leftovers), judge(facts), facts.sys_admin)


def _writable_cgroups(why: str, sys_admin: bool) -> tuple[Cgroups | None, str]:
    """The cgroups through writable clones of the read-only cgroup mounts (a container's),
    which CAP_SYS_ADMIN allows; else why not, said with the first refusal."""
    if not sys_admin:
        return None, f"{why} (a read-only cgroup mount: a container without CAP_SYS_ADMIN?)"
    clones, refused = writable_clones(read_only_cgroup_mounts())
    if refused is not None:
        return None, f"{why}; {refused}"
    cgroups, still = find_cgroups(clones)
    return cgroups, f"{why}; through a writable clone of the mount: {still}"


def _trial(mechanisms: Mechanisms, true: str) -> tuple[str, str] | None:
    """Run `true` contained by `mechanisms` (as ourselves); None when it ran, else the
    mechanism refused and the reason."""
    me = Runner(None, os.getuid(), os.getgid(), isolated=False)
    failure = ""
    confinement = Confinement(mechanisms, me, keep=[])
    with tempfile.TemporaryFile() as err:
        try:
            confinement.open()
            done = subprocess.run(
                confinement.command([true]),
                env=TOOL_ENV,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                preexec_fn=confinement.preexec(),  # system calls only: see Confinement.preexec
                timeout=30,
                check=False,
            )
            code: int | None = done.returncode
        except (OSError, subprocess.SubprocessError) as exc:
            code, failure = None, str(exc) or type(exc).__name__
        finally:
            confinement.close()
        err.seek(0)
        said = err.read().decode(errors="replace").strip().splitlines()
    if code == 0:
        return None
    last = said[-1] if said else (failure if code is None else f"exit code {code}")
    prefix = "ssegrade: cannot contain the script: "
    if last.startswith(prefix):  # our own step: "<step>: <reason>"
        step, _, reason = last.removeprefix(prefix).partition(": ")
        if step.startswith(("loopback", "network")):
            return "network namespace", reason
        if step.startswith(("private", "mount")):
            return "private /tmp, /var/tmp and /dev/shm", reason
        return step, reason
    return "PID namespace", last
