"""Containment of one script run: what the kernel offers, probed once per process, and how a
run is enclosed in it and emptied afterwards (SPEC §5 "Containment").

Interpreter layer (Linux: namespaces through util-linux `unshare`, cgroups under
`/sys/fs/cgroup`, `/proc`). As root a script runs in its own PID namespace, whose init is
coreutils `timeout 0` (it never times out: it only waits for the script and passes its exit
code on, 128 + N for a signal, which a script as init could not), so every process it starts
dies with the namespace; in its own mount namespace, with a fresh `/tmp` and `/dev/shm` where
the paths it is given stay reachable at their own paths; and in a cgroup where one can be made
(a pids limit, an optional memory limit, a kill of every member). Without root, or when the
probe fails, it runs in its own session and process group, and the sweep of its markers is
all the clean-up there is: the log says so.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from interpreters.real.runner.account import DEFAULT_PATH, TOOL_ENV, Runner, isolated
from interpreters.real.runner.processes import SWEEP_SECONDS

__all__ = ["DEFAULT_PIDS", "Cgroups", "Confinement", "Mechanisms", "probe"]

DEFAULT_PIDS = 4096
"""The default limit on processes and threads of one script run (a fork bomb stops there)."""

_CLONE_NEWNS = 0x00020000
_MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
_PRIVATE = ("/tmp", "/dev/shm")
_CONTROLLERS = ("pids", "memory")


@dataclass(frozen=True, slots=True)
class Cgroups:
    """Where run cgroups are made: `version` 1 or 2, and per controller the folder under
    which a run's group is created."""

    version: int
    parents: dict[str, Path]

    def describe(self) -> str:
        """E.g. `cgroup v1 (pids, memory)`."""
        return f"cgroup v{self.version} ({', '.join(self.parents)})"


@dataclass(frozen=True, slots=True)
class Mechanisms:
    """What containment this process can give scripts (see `probe`)."""

    namespaces: bool
    cgroups: Cgroups | None = None
    unshare: str = ""
    init: str = ""
    weaker: str | None = None

    def describe(self) -> str:
        """The `containment:` line of a script's log."""
        if not self.namespaces:
            return (
                f"containment: weaker ({self.weaker}): its own session and process group, "
                "and a sweep of what carries its run marker; /tmp and /dev/shm are shared"
            )
        groups = self.cgroups.describe() if self.cgroups else f"no cgroup ({self.weaker})"
        return f"containment: PID namespace, private /tmp and /dev/shm, {groups}"


_probed: dict[int, Mechanisms] = {}


def probe() -> Mechanisms:
    """The containment the kernel lets us give, found once per process by trying it."""
    found = _probed.get(os.getpid())
    if found is None:
        found = _probe()
        _probed.clear()
        _probed[os.getpid()] = found
    return found


def _probe() -> Mechanisms:
    if os.geteuid() != 0:
        return Mechanisms(False, weaker="not root")
    unshare = shutil.which("unshare", path=DEFAULT_PATH)
    init = shutil.which("timeout", path=DEFAULT_PATH)
    if unshare is None or init is None:
        return Mechanisms(False, weaker="util-linux unshare or coreutils timeout is missing")
    cgroups, why = _find_cgroups()
    trial = Mechanisms(True, cgroups, unshare, init, weaker=why)
    me = Runner(None, os.getuid(), os.getgid(), isolated=False)
    confinement = Confinement(trial, me, run_id="probe", keep=[])
    try:
        confinement.open()
        done = subprocess.run(
            confinement.command(["/bin/true"]),
            env=TOOL_ENV,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            preexec_fn=confinement.preexec(),  # see Confinement.preexec
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return Mechanisms(False, weaker=f"namespaces refused: {exc}")
    finally:
        confinement.close()
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return Mechanisms(False, weaker=f"namespaces refused: {said[-1] if said else 'unshare'}")
    return trial


def _find_cgroups() -> tuple[Cgroups | None, str | None]:
    """Folders under which we can make run cgroups (tried by making one), or why not."""
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
        if kind == "cgroup2" and "" in paths:
            v2 = _below(point, root, paths[""])
        elif kind == "cgroup":
            for name in _CONTROLLERS:
                if name in options and name in paths:
                    v1[name] = _below(point, root, paths[name])
    if "pids" in v1:
        made = {name: parent for name, parent in v1.items() if _can_make(parent)}
        if "pids" in made:
            return Cgroups(1, made), None
    if v2 is not None:
        try:
            enabled = (v2 / "cgroup.subtree_control").read_text().split()
        except OSError:
            enabled = []
        if "pids" in enabled and _can_make(v2):
            wanted = [name for name in ("pids", "memory") if name in enabled]
            return Cgroups(2, dict.fromkeys(wanted, v2)), None
    return None, "no cgroup with a pids controller can be made"


def _below(point: str, root: str, path: str) -> Path:
    relative = os.path.relpath(path, root) if path.startswith(root) else path.lstrip("/")
    return Path(os.path.normpath(os.path.join(point, relative)))


def _can_make(parent: Path) -> bool:
    trial = parent / f"ssegrade-probe-{os.getpid()}"
    try:
        trial.mkdir()
    except OSError:
        return False
    with contextlib.suppress(OSError):
        trial.rmdir()
    return True


# ---------------------------------------------------------------------------- one run


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


@dataclass(slots=True)
class Confinement:
    """The containment of one script run: made by `open`, entered by `command` + `preexec`,
    emptied by `kill`, removed by `close`.

    `keep`: folders the script is given (its working folder, HOME, staged files, support
    folders) that must stay reachable at their own paths when `/tmp` or `/dev/shm` is fresh.
    """

    mechanisms: Mechanisms
    runner: Runner
    run_id: str
    keep: Iterable[Path]
    pids: int = DEFAULT_PIDS
    memory: int | None = None
    notes: list[str] = field(default_factory=list)
    _groups: list[Path] = field(default_factory=list)
    _keep: list[bytes] = field(default_factory=list)
    _cwd: bytes = b""

    @property
    def contained(self) -> bool:
        """Whether the run gets namespaces (else: session, process group and the sweep)."""
        return self.mechanisms.namespaces

    def open(self, cwd: Path | None = None) -> None:
        """Make the run's cgroups and find the folders to keep; raises `OSError`."""
        if not self.contained:
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
            name = "memory.limit_in_bytes" if cgroups.version == 1 else "memory.max"
            limits["memory"] = {name: str(self.memory)}
            if "memory" not in cgroups.parents:
                self.notes.append("warning: no memory cgroup: the memory limit is not applied")
        for controller, parent in cgroups.parents.items():
            if controller not in limits:
                continue  # a memory group only when a memory limit is asked for
            group = parent / f"ssegrade-{self.run_id}"
            if group in self._groups:
                continue
            group.mkdir(mode=0o755)
            self._groups.append(group)
            for name, value in limits.get(controller, {}).items():
                (group / name).write_text(value)
            if cgroups.version == 2:
                for name, value in limits.get("memory", {}).items():
                    (group / name).write_text(value)

    def command(self, argv: list[str]) -> list[str]:
        """`argv` wrapped in the PID namespace, as the runner (unchanged when not contained)."""
        if not self.contained:
            return argv
        wrap = [self.mechanisms.unshare, "--pid", "--fork", "--kill-child", "--mount-proc"]
        if isolated(self.runner):
            wrap += ["--setgid", str(self.runner.gid), "--setuid", str(self.runner.uid)]
        return [*wrap, "--", self.mechanisms.init, "0", *argv]

    def preexec(self) -> Callable[[], None] | None:
        """What the child does before `unshare` starts: join the cgroups, enter a mount
        namespace of its own with a fresh `/tmp` and `/dev/shm`, and bind the kept folders
        back into them. Only system calls on data prepared beforehand: nothing that could wait
        on a lock another thread of ours held when we forked."""
        if not self.contained:
            return None
        procs = [os.fsencode(group / "cgroup.procs") for group in self._groups]
        targets = [os.fsencode(t) for t in _PRIVATE if os.path.isdir(t)]
        keep, cwd = list(self._keep), self._cwd

        def enter() -> None:
            pid = str(os.getpid()).encode()
            for path in procs:
                fd = os.open(path, os.O_WRONLY)
                try:
                    os.write(fd, pid)
                finally:
                    os.close(fd)
            _check(_unshare_call(_CLONE_NEWNS))
            _check(_mount_call(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None))
            # Held from inside the new namespace (a bind source must belong to it), before
            # the fresh /tmp hides them; closed when unshare starts.
            fds = [(os.open(f, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC), f) for f in keep]
            for target in targets:
                flags = _MS_NOSUID | _MS_NODEV
                _check(_mount_call(b"tmpfs", target, b"tmpfs", flags, b"mode=1777"))
                for fd, folder in fds:
                    if folder.startswith(target + b"/"):
                        os.makedirs(folder, 0o755, exist_ok=True)
                        source = b"/proc/self/fd/%d" % fd
                        _check(_mount_call(source, folder, None, _MS_BIND | _MS_REC, None))
            if cwd:
                os.chdir(cwd)  # the working folder as the script will see it

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
            for pid in _members(group):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def close(self) -> None:
        """Remove the run's cgroups (killing what is still in them); problems become notes."""
        deadline = time.monotonic() + SWEEP_SECONDS
        delay = 0.001
        while self._groups:
            group = self._groups[-1]
            try:
                group.rmdir()
            except FileNotFoundError:
                pass
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                    self.notes.append(f"warning: cgroup {group} not removed: {exc.strerror}")
                else:
                    self._kill_members()
                    time.sleep(delay)
                    delay = min(delay * 2, 0.05)
                    continue
            self._groups.pop()


def _check(status: int) -> None:
    if status != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as listing:
            return [int(child) for child in listing.read().split()]
    except OSError:
        return []


def _members(group: Path) -> list[int]:
    try:
        return [int(pid) for pid in (group / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def _outermost(folders: Iterable[Path]) -> list[str]:
    """The folders under `/tmp` or `/dev/shm`, resolved, without those inside another."""
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
