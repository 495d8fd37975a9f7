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
allows.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field, replace

from interpreters.real.programs import ProgramError, ProgramMissing, program
from interpreters.real.runner.account import TOOL_ENV, Runner
from interpreters.real.runner.cgroups import Cgroups, find_cgroups
from interpreters.real.runner.containment import Confinement
from interpreters.real.runner.guardian import remove_dead_groups
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
    """What this process can give: `root`, the tools, the cgroups, and per mechanism of
    `full` that the kernel (or this host) refuses, why (`missing`: mechanism → reason)."""

    root: bool
    tools: dict[str, str] = field(default_factory=dict)
    cgroups: Cgroups | None = None
    missing: dict[str, str] = field(default_factory=dict)
    leftovers: tuple[str, ...] = ()

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
    """The containment a run gets under `policy` when `offer` is what can be had; raises
    `ContainmentRefused` (one line naming what is missing) when `full` is asked for, or is
    the default as root, and cannot be had. `weak` is only ever chosen, never fallen into."""
    mode = policy.mode or ("full" if offer.root else "weak")
    if mode == "weak":
        why = "chosen with --containment weak" if offer.root else "not root"
        return Mechanisms("weak", weaker=why)
    if not offer.root:
        raise ContainmentRefused("full containment needs root; give --containment weak")
    missing = dict(offer.missing)
    if policy.network == "host":
        missing.pop("network namespace", None)
    if missing:
        what = "; ".join(f"no {name} ({' '.join(why.split())})" for name, why in missing.items())
        raise ContainmentRefused(
            f"full containment cannot be had: {what}; --containment weak runs scripts without it"
        )
    return Mechanisms(
        "full",
        unshare=offer.tools["unshare"],
        init=offer.tools["timeout"],
        setpriv=offer.tools["setpriv"],
        cgroups=offer.cgroups,
        network=policy.network,
        tmp_size=policy.tmp_size,
    )


def _probe() -> Offer:
    if os.geteuid() != 0:
        return Offer(root=False)
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
    return Offer(True, tools, cgroups, missing, tuple(leftovers))


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
