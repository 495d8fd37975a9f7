"""The containment of one script run (SPEC §5 "Containment"): made, entered, emptied and
removed.

Interpreter layer (Linux: namespaces, cgroups under `/sys/fs/cgroup`, `/proc`). In `full`
mode the child, before it runs anything, joins the run's cgroups, takes a parent-death signal
(it dies with the thread that started it), and enters a mount namespace of its own, where it
mounts its working folder's copy-on-write view first (when it works in one), with a
fresh, size-limited `/tmp`, `/var/tmp` and `/dev/shm` (the world-writable folders of the
host, where one script could leave something for another; the folders the script is given
bound back in at their own paths) and, unless the network is the host's, a network namespace
with only loopback up. It then runs util-linux `unshare`, which makes a PID namespace whose init is
coreutils `timeout 0` (it never times out: it waits for the script and passes its exit code
on, 128 + N for a signal, which a script as init could not), itself killed when `unshare`
dies; the script is started by `setpriv` as the runner. So every process the script starts
dies with the namespace, and the namespace dies with ssegrade. In `weak` mode the child only
takes the parent-death signal: its session, its process group and the sweep of its markers
are all the clean-up there is.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from interpreters.real.runner.account import Runner, isolated
from interpreters.real.runner.cgroups import make_group
from interpreters.real.runner.guardian import empty_group
from interpreters.real.runner.policy import DEFAULT_PIDS, ContainmentRefused, Mechanisms
from interpreters.real.runner.processes import SWEEP_SECONDS

__all__ = ["Confinement"]

_CLONE_NEWNS, _CLONE_NEWNET = 0x00020000, 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
_PR_SET_PDEATHSIG = 1
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 1
_AF_INET, _SOCK_DGRAM, _SOCK_CLOEXEC = 2, 2, 0o2000000
_PRIVATE = ("/tmp", "/var/tmp", "/dev/shm")

_libc = ctypes.CDLL(None, use_errno=True)
_unshare_call = _libc.unshare
_unshare_call.argtypes = [ctypes.c_int]
_mount_call = _libc.mount
_mount_call.argtypes = [
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_ulong,
    ctypes.c_char_p,
]
_prctl_call = _libc.prctl
_prctl_call.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_socket_call = _libc.socket
_socket_call.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
_ioctl_call = _libc.ioctl
_ioctl_call.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p]


@dataclass(frozen=True, slots=True)
class _Mount:
    """One mount the child makes: a fresh tmpfs at `target`, with `options`."""

    target: bytes
    options: bytes


@dataclass(slots=True)
class Confinement:
    """The containment of one script run: made by `open`, entered by `command` + `preexec`,
    emptied by `kill`, removed by `close`.

    `keep`: folders the script is given (its working folder, HOME, staged files, support
    folders) that must stay reachable at their own paths when `/tmp`, `/var/tmp` or `/dev/shm`
    is fresh. `view`, when given, mounts the script's working folder (a copy-on-write view,
    see `interpreters.real.files.views`) first thing in its mount namespace.
    """

    mechanisms: Mechanisms
    runner: Runner
    keep: Iterable[Path]
    pids: int = DEFAULT_PIDS
    memory: int | None = None
    view: Callable[[], None] | None = None
    notes: list[str] = field(default_factory=list)
    _groups: list[Path] = field(default_factory=list)
    _keep: list[bytes] = field(default_factory=list)
    _cwd: bytes = b""

    @property
    def contained(self) -> bool:
        """Whether the run gets namespaces (`full`; else session, process group and sweep)."""
        return self.mechanisms.namespaces

    def open(self, cwd: Path | None = None) -> None:
        """Make the run's cgroups and find the folders to keep; raises `OSError`, or
        `ContainmentRefused` when a memory limit is asked for and cannot be applied."""
        if not self.contained:
            if self.memory is not None:
                self.notes.append("warning: weak containment: the memory limit is not applied")
            return
        if cwd is not None:
            self._cwd = os.fsencode(cwd)
        self._open_cgroups()
        self._keep = [os.fsencode(folder) for folder in _outermost(self.keep)]

    def _open_cgroups(self) -> None:
        cgroups = self.mechanisms.cgroups
        if cgroups is None:
            return
        limits = {"pids": {"pids.max": str(self.pids)}}
        if self.memory is not None:
            if "memory" not in cgroups.parents:
                raise ContainmentRefused("no memory cgroup: the memory limit cannot be applied")
            name = "memory.limit_in_bytes" if cgroups.version == 1 else "memory.max"
            limits["memory"] = {name: str(self.memory)}
        made: dict[Path, Path] = {}
        for controller, parent in cgroups.parents.items():
            if controller not in limits:
                continue  # a memory group only when a memory limit is asked for
            group = made.get(parent)
            if group is None:  # v2: one group for every controller
                group = made[parent] = make_group(parent)
                self._groups.append(group)
            for name, value in limits[controller].items():
                (group / name).write_text(value)

    def command(self, argv: list[str]) -> list[str]:
        """`argv` wrapped in the PID namespace, as the runner (unchanged when not contained)."""
        if not self.contained:
            return argv
        m = self.mechanisms
        wrap = [m.unshare, "--pid", "--fork", "--kill-child", "--mount-proc", "--", m.init, "0"]
        if isolated(self.runner):
            uid, gid = str(self.runner.uid), str(self.runner.gid)
            wrap += [m.setpriv, "--reuid", uid, "--regid", gid, "--clear-groups", "--"]
        return [*wrap, *argv]

    def preexec(self) -> Callable[[], None]:
        """What the child does before it runs anything (see the module's docstring). Only
        system calls on data prepared beforehand: nothing that could wait on a lock another
        thread of ours held when we forked. A step that fails is named on the child's stderr
        (`ssegrade: cannot contain the script: <step>: <reason>`) and fails the start."""
        parent = os.getpid()
        procs = [os.fsencode(group / "cgroup.procs") for group in self._groups]
        full = self.contained
        network = full and self.mechanisms.network == "loopback"
        size = self.mechanisms.tmp_size
        data = b"mode=1777,size=%d,nr_inodes=%d" % (size, max(1024, size >> 12))
        mounts = [_Mount(os.fsencode(t), data) for t in _PRIVATE if os.path.isdir(t)]
        keep, cwd, view = list(self._keep), self._cwd, self.view
        ifreq = ctypes.create_string_buffer(b"lo", 40)
        flags = ctypes.c_short.from_buffer(ifreq, 16)

        def enter() -> None:
            step = "parent-death signal"
            try:
                _check(_prctl_call(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0))
                if os.getppid() != parent:  # the parent died before the signal was set
                    os.kill(os.getpid(), signal.SIGKILL)
                if not full:
                    return
                step = "pids cgroup"
                for path in procs:
                    fd = os.open(path, os.O_WRONLY)
                    try:
                        os.write(fd, str(os.getpid()).encode())
                    finally:
                        os.close(fd)
                step = "network namespace" if network else "mount namespace"
                _check(_unshare_call(_CLONE_NEWNS | (_CLONE_NEWNET if network else 0)))
                if network:
                    step = "loopback of the network namespace"
                    _loopback_up(ifreq, flags)
                step = "mount namespace"
                _check(_mount_call(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None))
                if view is not None:  # before the folders kept are held: they hold the view
                    step = "copy-on-write view"
                    view()
                # Held from inside the new namespace (a bind source must belong to it), before
                # the fresh /tmp hides them; closed when unshare starts.
                fds = [(os.open(f, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC), f) for f in keep]
                for mount in mounts:
                    step = f"private {mount.target.decode()}"
                    fstype, how = b"tmpfs", _MS_NOSUID | _MS_NODEV
                    _check(_mount_call(fstype, mount.target, fstype, how, mount.options))
                    for fd, folder in fds:
                        if folder.startswith(mount.target + b"/"):
                            os.makedirs(folder, 0o755, exist_ok=True)
                            source = b"/proc/self/fd/%d" % fd
                            _check(_mount_call(source, folder, None, _MS_BIND | _MS_REC, None))
                step = "working folder"
                if cwd:
                    os.chdir(cwd)  # the working folder as the script will see it
            except OSError as exc:
                said = f"ssegrade: cannot contain the script: {step}: {exc.strerror or exc}\n"
                os.write(2, said.encode(errors="replace"))
                raise

        return enter

    def kill(self, leader: int) -> None:
        """Kill everything of the run (`leader`: the process we started) and wait until the
        namespace is gone."""
        if not self.contained:
            return
        inits = _children(leader)
        waits = []
        for pid in inits:
            with contextlib.suppress(OSError):
                waits.append(os.pidfd_open(pid))
        for pid in (leader, *inits):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        self._kill_members()
        try:
            deadline = time.monotonic() + SWEEP_SECONDS
            for fd in waits:
                poller = select.poll()
                poller.register(fd, select.POLLIN)
                poller.poll(max(0, int((deadline - time.monotonic()) * 1000)))
        finally:
            for fd in waits:
                os.close(fd)

    def _kill_members(self) -> None:
        for group in self._groups:
            with contextlib.suppress(OSError, ValueError):
                for pid in (group / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(int(pid), signal.SIGKILL)

    def close(self) -> None:
        """Remove the run's cgroups (killing what is still in them); problems become notes."""
        deadline = time.monotonic() + SWEEP_SECONDS
        while self._groups:
            group = self._groups.pop()
            why = empty_group(group, deadline)
            if why is not None:
                self.notes.append(f"warning: cgroup {group} not removed: {why}")


def _check(status: int) -> None:
    if status < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def _loopback_up(ifreq: ctypes.Array[ctypes.c_char], flags: ctypes.c_short) -> None:
    """Bring the interface named in `ifreq` up (`flags` is its flags field)."""
    fd = _socket_call(_AF_INET, _SOCK_DGRAM | _SOCK_CLOEXEC, 0)
    _check(fd)
    try:
        _check(_ioctl_call(fd, _SIOCGIFFLAGS, ctypes.addressof(ifreq)))
        flags.value |= _IFF_UP
        _check(_ioctl_call(fd, _SIOCSIFFLAGS, ctypes.addressof(ifreq)))
    finally:
        os.close(fd)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as listing:
            return [int(child) for child in listing.read().split()]
    except OSError:
        return []


def _outermost(folders: Iterable[Path]) -> list[str]:
    """The folders under `/tmp`, `/var/tmp` or `/dev/shm`, resolved, without those inside
    another."""
    found = sorted(
        {
            os.path.realpath(folder)
            for folder in folders
            if any(os.path.realpath(folder).startswith(t + "/") for t in _PRIVATE)
            and os.path.isdir(folder)
        }
    )
    kept: list[str] = []
    for folder in found:
        if not any(folder.startswith(outer + "/") for outer in kept):
            kept.append(folder)
    return kept
