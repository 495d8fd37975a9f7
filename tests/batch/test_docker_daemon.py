"""The tests' private dockerd (`tests/support/dockerkit.py`) leaves nothing on the host: started
in a folder of its own, one container run, stopped: no process, no mount, no cgroup, no network
link, no iptables chain, no file under /etc/docker of its making, forwarding as it was.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.engine.images import engine_program
from tests.support import containerkit
from tests.support.dockerkit import Daemon, docker_engine

pytestmark = [pytest.mark.container]

__all__ = ["docker_engine"]  # the fixture, found by pytest in this module


@pytest.fixture
def own(docker_engine: Daemon) -> Iterator[Daemon]:
    """A second daemon, in a folder of this test's own (the session's shows the engine runs)."""
    del docker_engine
    daemon = Daemon(Path(tempfile.mkdtemp(prefix="ssegrade-dockerd-", dir="/var/tmp")))
    try:
        yield daemon
    finally:
        daemon.stop()
        shutil.rmtree(daemon.scratch, ignore_errors=True)


def _tiny_image(daemon: Daemon) -> str:
    """An image of `cat` and the libraries it needs, imported into `daemon`: its name."""
    said = subprocess.run(["ldd", "/bin/cat"], capture_output=True, text=True, check=True)
    paths = ["/bin/cat", *re.findall(r"(/\S+) \(0x", said.stdout)]
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for path in paths:
            tar.add(os.path.realpath(path), arcname=path.lstrip("/"))
    name = "localhost/ssegrade-test-cat:1"
    imported = subprocess.run(
        [engine_program("docker"), "import", "-", name],
        input=archive.getvalue(),
        env=daemon.environment(),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert imported.returncode == 0, imported.stderr
    return name


def _links() -> set[str]:
    said = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True)
    return {line.split(":")[1].strip() for line in said.stdout.splitlines()}


def _docker_chains() -> list[str]:
    found = []
    for program in ("iptables-save", "ip6tables-save"):
        if shutil.which(program) is not None:
            said = subprocess.run([program], capture_output=True, text=True, check=False)
            found += [line for line in said.stdout.splitlines() if "DOCKER" in line]
    return found


def _forwarding() -> str:
    return Path("/proc/sys/net/ipv4/ip_forward").read_text()


def test_the_private_daemon_leaves_nothing_on_the_host(own: Daemon) -> None:
    links, forwarding = _links(), _forwarding()
    key = Path("/etc/docker/key.json")
    had_key = key.exists()
    assert own.start() is None
    pid = int((own.scratch / "docker.pid").read_text())
    image = _tiny_image(own)
    ran = own.docker("run", "--rm", "--network", "none", image, "/bin/cat", "/proc/self/cgroup")
    assert ran.returncode == 0, ran.stderr
    assert f"{own.cgroup}/" in ran.stdout  # its containers' cgroups are under its own parent
    assert {
        link for link in _links() - links if link.startswith(("docker", "br-", "veth"))
    } == set()
    own.stop()

    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
    assert containerkit.mounts_under(own.scratch) == []
    assert sorted(entry.name for entry in own.scratch.iterdir()) == ["root"]
    cgroups = Path("/sys/fs/cgroup")
    assert [h.name for h in cgroups.iterdir() if (h / own.cgroup.lstrip("/")).exists()] == []
    assert _docker_chains() == []
    assert _forwarding() == forwarding
    assert key.exists() == had_key
