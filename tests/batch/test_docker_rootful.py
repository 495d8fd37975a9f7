"""A user of the `docker` group, not root, runs `ssegrade batch --engine docker` on a Docker
engine that runs as root (Docker's usual install): the containers' root is the host's, so
what they write in the user's staging folders is root's and the user could not remove it.
The batch says so in one line before any container runs, and leaves nothing behind.

The user is `nobody` with the `docker` group (setpriv, no account made); ssegrade is this
tree's bundle (the tests' interpreter may lie where `nobody` cannot reach).
"""

from __future__ import annotations

import grp
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import containerkit
from tests.support.dockerkit import Daemon, docker_engine, from_podman

pytestmark = [pytest.mark.container, pytest.mark.slow]

__all__ = ["docker_engine"]  # the fixture, found by pytest in this module

NOBODY = 65534
FIX = containerkit.EXAMPLES / "kvconf" / "task" / "diffs" / "patch.diff"


@pytest.fixture
def work() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-docker-user-"))
    folder.chmod(0o755)
    for name in ("tmp", "results"):
        (folder / name).mkdir(mode=0o700)
        os.chown(folder / name, NOBODY, NOBODY)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_docker_group_user_is_told_the_engine_runs_as_root(
    docker_engine: Daemon, work: Path
) -> None:
    try:
        group = grp.getgrnam("docker").gr_gid
    except KeyError:
        pytest.skip("no docker group (apt docker.io makes it)")
    image = from_podman(docker_engine, containerkit.task_image("kvconf"))
    shutil.copy(FIX, work / "fix.diff")
    (work / "jobs.jsonl").write_text(json.dumps({"image": image, "patch": "fix.diff"}) + "\n")
    bundle = containerkit.ssegrade_bundle()
    env = {"PATH": "/usr/bin:/bin", "DOCKER_HOST": docker_engine.host, "LANG": "C.UTF-8"}
    env |= {"HOME": str(work / "tmp"), "TMPDIR": str(work / "tmp")}
    user = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", f"--groups={group}"]
    args = ["batch", str(work / "jobs.jsonl"), "--results", str(work / "results")]
    args += ["--engine", "docker", "--bundle", str(bundle)]
    done = subprocess.run(
        [*user, str(bundle / "ssegrade"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "the Docker engine runs as root" in line, line
    assert list((work / "tmp").iterdir()) == []
