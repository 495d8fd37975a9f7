"""The containment of one script run (SPEC §5 "Containment"): made, entered, emptied and
removed.

Interpreter layer (Linux: namespaces, cgroups under `/sys/fs/cgroup`, `/proc`). In `full`
mode the child, before it runs anything, joins the run's cgroups, takes a parent-death signal
(it dies with the thread that started it), and enters a mount namespace of its own, where it
mounts its working folder's copy-on-write view first (when it works in one), then makes
the host read-only, with a fresh, size-limited `/tmp`, `/var/tmp` and `/dev/shm` and the
folder of the gradings' scratch folders hidden, and gives back at their own paths the folders
the script is given (writable, read-only or copy-on-write: see `reach`); it enters an IPC
namespace of its own and, unless the network is the host's, a network namespace with only
loopback up. The runner's keyrings are cleared before and after (`keyrings`).
It then runs util-linux `unshare`, which makes a PID namespace whose init is
coreutils `timeout 0` (it never times out: it waits for the script and passes its exit code
on, 128 + N for a signal, which a script as init could not), itself killed when `unshare`
dies; the script is started by `setpriv` as the runner. So every process the script starts
dies with the namespace, and the namespace dies with ssegrade. In `weak` mode the child only
takes the parent-death signal: its session, its process group and the sweep of its markers
are all the clean-up there is, and its log says what that leaves open. In `container` mode
(the container is the boundary) the same, and when the run ends every process of the runner
in the container is killed and what it left in `/tmp`, `/var/tmp` and `/dev/shm` removed
(`residue`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from interpreters.real.files.removal import remove_tree
from interpreters.real.runner.account import Runner, isolated
from interpreters.real.runner.cgroups import make_group
from interpreters.real.runner.guardian import empty_group
from interpreters.real.runner.guarding import scratch_parent
from interpreters.real.runner.keyrings import clear_keyrings
from interpreters.real.runner.policy import DEFAULT_PIDS, ContainmentRefused, Mechanisms
from interpreters.real.runner.processes import SWEEP_SECONDS
from interpreters.real.runner.reach import Mounts, plan
from interpreters.real.runner.residue import clear_runner

__all__ = ["Confinement"]

_CLONE_NEWNS, _CLONE_NEWIPC, _CLONE_NEWNET = 0x00020000, 0x08000000, 0x40000000
_MS_REC, _MS_PRIVATE = 16384, 1 << 18
_PR_SET_PDEATHSIG = 1
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 1
_AF_INET, _SOCK_DGRAM, _SOCK_CLOEXEC = 2, 2, 0o2000000
_WEAK_OPEN = (
    "not prevented (weak containment): the script may write wherever the runner may on the "
    "host (folders on PATH and other toolchain folders, other gradings' scratch folders "
    "reached through /tmp or TMPDIR), and leave System V IPC objects and keys in the "
    "runner's keyrings for later scripts"
)

_CONTAINER_OPEN = (
    "not prevented (container containment): the script may write wherever the runner may in "
    "the container (folders on PATH and other toolchain folders, the task's support folders), "
    "which later scripts of this grading see; it has the container's network and no pids or "
    "memory limit but the container's; System V IPC objects it makes outlive it"
)

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


@dataclass(slots=True)
class Confinement:
    """The containment of one script run: made by `open`, entered by `command` + `preexec`,
    emptied by `kill`, removed by `close`.

    `keep`: folders the script may write (its working folder, HOME); `readable`: folders it
    reads (its own script's, its staged files'); `toolchain`: the folders its environment
    names (folder → the variables naming it); `shared`: the support folders, which it may
    change for itself alone. In `full` containment
    the rest of the host is read-only, and these are given at their own paths (see `reach`);
    copy-on-write layers go in a root-only folder in `layers_in` (default: the temporary
    folder), removed by `close`. `view`, when given, mounts the script's working folder (a
    copy-on-write view, see `interpreters.real.files.views`) first thing in its mount
    namespace.
    """

    mechanisms: Mechanisms
    runner: Runner
    keep: Iterable[Path]
    pids: int = DEFAULT_PIDS
    memory: int | None = None
    view: Callable[[], None] | None = None
    readable: Iterable[Path] = ()
    toolchain: Mapping[str, Sequence[str]] = field(default_factory=dict)
    shared: Iterable[Path] = ()
    layers_in: Path | None = None
    notes: list[str] = field(default_factory=list)
    _groups: list[Path] = field(default_factory=list)
    _mounts: Mounts | None = None
    _layers: Path | None = None
    _opened: bool = False
    _cwd: bytes = b""

    @property
    def contained(self) -> bool:
        """Whether the run gets namespaces (`full`; else session, process group and sweep)."""
        return self.mechanisms.namespaces

    def open(self, cwd: Path | None = None) -> None:
        """Make the run's cgroups, plan its mount namespace and clear the runner's keyrings;
        raises `OSError`, or `ContainmentRefused` when a memory limit is asked for and cannot
        be applied."""
        if not self.contained:
            mode = self.mechanisms.mode
            if self.memory is not None:
                self.notes.append(f"warning: {mode} containment: the memory limit is not applied")
            self.notes.append(_CONTAINER_OPEN if mode == "container" else _WEAK_OPEN)
            self._opened = True
            return
        if cwd is not None:
            self._cwd = os.fsencode(cwd)
        self._open_cgroups()
        size = self.mechanisms.tmp_size
        reach = plan(
            writable=self.keep,
            readable=self.readable,
            toolchain=self.toolchain,
            shared=self.shared,
            parent=scratch_parent(),
            tmp_options=b"mode=1777,size=%d,nr_inodes=%d" % (size, max(1024, size >> 12)),
            runner=(self.runner.uid, self.runner.gid),
            layers=self._layer_folder,
        )
        self.notes.extend(reach.lines)
        self._mounts = reach.mounts()
        self._opened = True
        self._clear_keyrings("before")

    def _layer_folder(self) -> Path:
        """The run's root-only folder of copy-on-write layers, made on first use."""
        if self._layers is None:
            self._layers = Path(tempfile.mkdtemp(prefix="toolchain-", dir=self.layers_in))
        return self._layers

    def _clear_keyrings(self, when: str) -> None:
        if isolated(self.runner) and os.geteuid() == 0:
            why = clear_keyrings(self.runner, self.mechanisms.init)
            if why is not None:
                raise OSError(f"the runner's keyrings not cleared {when} the script: {why}")

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
        mounts, cwd, view = self._mounts, self._cwd, self.view
        spaces = _CLONE_NEWNS | _CLONE_NEWIPC | (_CLONE_NEWNET if network else 0)
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
                _check(_unshare_call(spaces))
                if network:
                    step = "loopback of the network namespace"
                    _loopback_up(ifreq, flags)
                step = "mount namespace"
                _check(_mount_call(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None))
                if view is not None:  # before the folders given are cloned: they hold it
                    step = "copy-on-write view"
                    view()
                if mounts is not None:
                    step = "mounts"
                    mounts()
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
        """Remove the run's cgroups (killing what is still in them) and its copy-on-write
        layers, and clear the runner's keyrings; problems become notes."""
        deadline = time.monotonic() + SWEEP_SECONDS
        while self._groups:
            group = self._groups.pop()
            why = empty_group(group, deadline)
            if why is not None:
                self.notes.append(f"warning: cgroup {group} not removed: {why}")
        layers, self._layers = self._layers, None
        if layers is not None:
            remove_tree(layers)
        opened, self._opened = self._opened, False
        if not opened:
            return
        if self.mechanisms.mode == "container":
            if isolated(self.runner) and os.geteuid() == 0:
                self.notes.extend(clear_runner(self.runner))
            return
        if not self.contained:
            return
        try:
            self._clear_keyrings("after")
        except OSError as exc:
            self.notes.append(f"warning: {exc}")


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
