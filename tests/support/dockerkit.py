"""A private Docker engine for the tests' docker variants: one `dockerd` per test session on this
machine, shared by the xdist workers, started on first use and stopped, with everything it
made but its images, when the last worker is done.

`tests/containers/setup.sh` installs Docker (apt `docker.io`) and never starts it. The daemon
lives in a fixed folder, `SCRATCH` (mode 0711: the socket is for root and the `docker` group
alone, as a system daemon's; its data and exec roots, pid file, socket, log,
key and configuration: nothing under `/etc` or `/run`), makes no bridge, no iptables rule and
turns no forwarding on, and puts its containers' cgroups under one parent of its own. Every
docker command, the tests' and ssegrade's, reaches it through `DOCKER_HOST` and runs the
client ssegrade itself runs (`interpreters.engine.images.engine_program`).

Sharing: each process using the daemon holds a shared lock on `USERS`; the one that starts it
holds `STARTING` meanwhile. A process done with it takes `STARTING`, then tries an exclusive
lock on `USERS`: granted, no other process uses the daemon, so it stops it and removes what
it made (a process that comes meanwhile waits for its shared lock, then starts a new one). A
session killed midway leaves the daemon running; the next session takes it over and stops it
at its end. Images come from podman (`podman save | docker load`), once, under a lock, and
are found again by name and ID (the test images are tagged by a digest of what went in);
`rm -rf /var/tmp/ssegrade-dockerkit` with no daemon running clears them.

Where no daemon can run, a test skips with one line saying why; with `CI` set it fails.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from interpreters.engine.images import EngineFailed, engine_program
from tests.support import containerkit
from tests.support.enginekit import Engine

LOCKS = containerkit.CACHE
"""Where the locks live: never removed, so that every process locks the same files."""
SCRATCH = Path("/var/tmp/ssegrade-dockerkit")
"""The session daemon's folder; when it stops, only its data root (`root/`: the images, a
cache as podman's store is) stays."""
USERS = "docker-users.lock"
STARTING = "docker-starting.lock"
IMAGES = "docker-images.lock"
_START_SECONDS = 60.0
_STOP_SECONDS = 30.0


@dataclass
class Daemon:
    """A private dockerd whose every file is below `scratch`."""

    scratch: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def host(self) -> str:
        """`DOCKER_HOST` for this daemon."""
        return f"unix://{self.scratch / 'docker.sock'}"

    @property
    def cgroup(self) -> str:
        """The cgroup parent of its containers (one folder in each hierarchy)."""
        return f"/{self.scratch.name}"

    @property
    def engine(self) -> Engine:
        """The daemon as the tests drive an engine (`tests/support/enginekit.py`)."""
        reach = {"DOCKER_HOST": self.host}
        return Engine("docker", self.docker, reach, lambda image: from_podman(self, image))

    def environment(self) -> dict[str, str]:
        """This process's environment with `DOCKER_HOST` naming the daemon."""
        return {**os.environ, "DOCKER_HOST": self.host}

    def docker(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """Run ssegrade's docker client against the daemon; its output, whatever its status."""
        return subprocess.run(
            [engine_program("docker"), *args],
            env=self.environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def answers(self) -> str | None:
        """None when the daemon answers, else why not (one line)."""
        if not (self.scratch / "docker.sock").exists():
            return "no socket"
        said = self.docker("version", "--format", "{{.Server.Version}}", timeout=20)
        return None if said.returncode == 0 else _last_line(said.stderr, said.returncode)

    def start(self) -> str | None:
        """Start the daemon unless it answers already; None when it does, else why not."""
        if self.answers() is None:
            return None
        self.stop()  # what a daemon that died left
        dockerd = shutil.which("dockerd", path="/usr/sbin:/usr/bin:/sbin:/bin")
        if dockerd is None:
            return "dockerd is not installed (bash tests/containers/setup.sh)"
        self.scratch.mkdir(parents=True, exist_ok=True)
        self.scratch.chmod(0o711)  # its socket: root and the docker group alone
        # The key dockerd 20.10 would make in /etc/docker, and no /etc/docker/daemon.json.
        config = {"deprecated-key-path": str(self.scratch / "key.json")}
        (self.scratch / "daemon.json").write_text(json.dumps(config))
        at = self.scratch
        argv = [dockerd, "--config-file", str(at / "daemon.json"), "-H", self.host]
        argv += ["--data-root", str(at / "root"), "--exec-root", str(at / "exec")]
        argv += ["--pidfile", str(at / "docker.pid")]
        argv += ["--bridge=none", "--iptables=false", "--ip6tables=false", "--ip-forward=false"]
        argv += ["--ip-masq=false", "--userland-proxy=false", f"--cgroup-parent={self.cgroup}"]
        with open(self.scratch / "dockerd.log", "wb") as log:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # the terminal's signals are not its
            )
        deadline = time.monotonic() + _START_SECONDS
        while (why := self.answers()) is not None:
            if self.process.poll() is not None or time.monotonic() > deadline:
                said = (self.scratch / "dockerd.log").read_text(errors="replace")
                self.stop()
                return f"dockerd did not start: {_last_line(said, 0)}"
            time.sleep(0.1)
        return why

    def stop(self) -> None:
        """Remove every container, stop the daemon and remove all it made (its mounts, its
        cgroups, the files of `scratch`) but its data root: the images, for the next
        session."""
        if self.answers() is None:
            listed = self.docker("ps", "--all", "--quiet", timeout=60).stdout.split()
            if listed:
                self.docker("rm", "--force", *listed, timeout=120)
        pid = _read_pid(self.scratch / "docker.pid")
        if self.process is not None:
            pid = self.process.pid
        if pid is not None:
            _end(pid, self.process)
        self.process = None
        containerkit.unmount_under(self.scratch)
        if self.scratch.is_dir():
            for entry in self.scratch.iterdir():
                if entry.name == "root" and entry.is_dir() and not entry.is_symlink():
                    continue  # the images: kept for the next session
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
        for hierarchy in Path("/sys/fs/cgroup").iterdir():
            with contextlib.suppress(OSError):
                (hierarchy / self.cgroup.lstrip("/")).rmdir()


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _end(pid: int, process: subprocess.Popen[bytes] | None) -> None:
    """Stop dockerd `pid` (it stops its containerd): SIGTERM, SIGKILL past `_STOP_SECONDS`."""
    try:
        command = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return
    if command != "dockerd":
        return  # the pid file of a daemon long gone names another process now
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + _STOP_SECONDS
    while _alive(pid, process):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            deadline = float("inf")
        time.sleep(0.1)


def _alive(pid: int, process: subprocess.Popen[bytes] | None) -> bool:
    if process is not None:
        return process.poll() is None
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie of another process ran its course


def _last_line(text: str, code: int) -> str:
    lines = text.strip().splitlines()
    return lines[-1][:300] if lines else f"exit status {code}"


@contextlib.contextmanager
def locked(name: str, how: int = fcntl.LOCK_EX) -> Iterator[int]:
    """Hold the lock file `name` of `LOCKS` (`how`: exclusive, shared); its descriptor."""
    LOCKS.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(LOCKS / name, flags, 0o600)
    try:
        fcntl.flock(descriptor, how)
        yield descriptor
    finally:
        os.close(descriptor)


SESSION = Daemon(SCRATCH)
"""The daemon every test of this session shares."""
_held: list[str | None] = []
"""This process's uses of SESSION (the fixture is set up once in each module that imports
it): each the reason it cannot run, or None."""
_shared: list[int] = []
"""The descriptor of this process's shared lock on USERS, while it uses SESSION."""


def _use() -> str | None:
    """One user more in this process (the first takes the shared lock and starts the daemon
    unless it runs); why it cannot run, or None."""
    if not _held:
        if os.geteuid() != 0:
            _held.append("the private dockerd needs root")
            return _held[0]
        try:
            engine_program("docker")
        except EngineFailed as exc:
            _held.append(f"{exc} (bash tests/containers/setup.sh)")
            return _held[0]
        LOCKS.mkdir(parents=True, exist_ok=True)
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        _shared.append(os.open(LOCKS / USERS, flags, 0o600))
        fcntl.flock(_shared[0], fcntl.LOCK_SH)  # waits while a last user stops a daemon
        with locked(STARTING):
            _held.append(SESSION.start())
    else:
        _held.append(_held[0])
    return _held[-1]


def _release() -> None:
    """One user less in this process; the last one on the machine stops the daemon."""
    _held.pop()
    if _held or not _shared:
        return
    descriptor = _shared.pop()
    with locked(STARTING):
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # another process uses it still: the last one stops it
        else:
            SESSION.stop()
        finally:
            os.close(descriptor)


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[Daemon]:
    """The session's private dockerd (podman too must run: images come from it); the test
    skips with one line where either cannot, or fails on CI."""
    containerkit.require_engine()
    why = _use()
    if why is not None:
        _release()
        _cannot(f"no docker engine: {why}")
    try:
        yield SESSION
    finally:
        _release()


def _cannot(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"on CI, {reason}", pytrace=False)
    pytest.skip(reason)


def from_podman(daemon: Daemon, image: str) -> str:
    """`image`, a podman image, in `daemon` under the same name and ID: moved once
    (`podman save | docker load`, under a lock), found there afterwards."""
    found = containerkit.podman("image", "inspect", "--format", "{{.Id}}", image)
    assert found.returncode == 0, found.stderr
    wanted = found.stdout.strip()
    with locked(IMAGES):
        there = daemon.docker("image", "inspect", "--format", "{{.Id}}", image)
        if there.returncode == 0 and there.stdout.strip().removeprefix("sha256:") == wanted:
            return image
        containerkit.save_into(image, [engine_program("docker"), "load"], daemon.environment())
    return image


PYTHON_SLIM = "python:3.11-slim"
"""The base image of `docs/container/Dockerfile`, which no registry serves here."""


def python_slim(daemon: Daemon) -> str:
    """Make `python:3.11-slim` in `daemon` the tests' stand-in (`containerkit.python_slim`,
    podman's, moved once); its name."""
    stand_in = from_podman(daemon, containerkit.python_slim())
    tagged = daemon.docker("tag", stand_in, PYTHON_SLIM)
    assert tagged.returncode == 0, tagged.stderr
    return PYTHON_SLIM
