"""The container engine's guards on Docker (the session's private dockerd): a container that
writes hostile things into its staging folder or outlives its time gets no grade of them, and
after kill -9 of the driver its reaper, which finds the engine through the `DOCKER_HOST` it
inherited, removes the batch's containers and staging folders.

The containers run a stand-in bundle (a shell script) instead of ssegrade: no grading.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.batch.run import run_batch
from interpreters.engine.containers import ContainerSettings
from ssegrade.batch import BATCH_LABEL
from tests.support import containerkit
from tests.support.containerkit import one_line_diff, unique_id
from tests.support.dockerkit import Daemon, docker_engine, from_podman
from tests.support.realtask import CLI

pytestmark = [pytest.mark.container, pytest.mark.slow]

__all__ = ["docker_engine"]  # the fixture, found by pytest in this module

HOSTILE = """#!/bin/sh
# Stands in for ssegrade: does to the staging folder what its patch says.
out=/ssegrade-out/run
mkdir -p "$out/logs"
case "$(cat /ssegrade-in/patch.diff)" in
  *symlink*) ln -s /etc/shadow "$out/result.json" ;;
  *huge*) echo '{"patch_result": {"status": "failed"}}' > "$out/result.json"
          head -c 3000000 /dev/zero > "$out/logs/huge.log" ;;
  *sleep*) exec sleep 300 ;;
  *) exit 3 ;;
esac
"""


@pytest.fixture(scope="module")
def kvconf(docker_engine: Daemon) -> str:
    return from_podman(docker_engine, containerkit.task_image("kvconf"))


@pytest.fixture
def work() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-docker-engine-"))
    bundle = folder / "bundle"
    bundle.mkdir()
    (bundle / "ssegrade").write_text(HOSTILE)
    (bundle / "ssegrade").chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _left(daemon: Daemon, label: str) -> list[str]:
    listed = daemon.docker("ps", "--all", "--quiet", "--filter", f"label={label}")
    assert listed.returncode == 0, listed.stderr
    return listed.stdout.split()


def test_hostile_staging_and_overtime_are_infrastructure_errors(
    docker_engine: Daemon, kvconf: str, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = []
    ids = {word: unique_id(word) for word in ("symlink", "huge", "nothing", "sleep")}
    for word, run_id in ids.items():
        (work / f"{word}.diff").write_text(one_line_diff(word))
        lines.append({"image": kvconf, "patch": f"{word}.diff", "run_id": run_id})
    settings = ContainerSettings("docker", work / "bundle", results_limit=1 << 20, grace=1)
    monkeypatch.setenv("DOCKER_HOST", docker_engine.host)
    report = run_batch(lines, work / "r", base=work, containers=settings, engine="docker",
                       workers=4, retry=False, timeout=3)  # fmt: skip
    containerkit.check_hostile_staging(report, ids, lambda label: _left(docker_engine, label))


def test_the_reaper_reaches_docker_after_kill_9_of_the_driver(
    docker_engine: Daemon, kvconf: str, work: Path
) -> None:
    (work / "sleep.diff").write_text(one_line_diff("sleep"))
    run_id = unique_id("sleep")
    line = {"image": kvconf, "patch": "sleep.diff", "run_id": run_id}
    (work / "jobs.jsonl").write_text(json.dumps(line) + "\n")
    argv = [*CLI, "batch", str(work / "jobs.jsonl"), "--results", str(work / "r"),
            "--engine", "docker", "--bundle", str(work / "bundle")]  # fmt: skip
    quiet = subprocess.DEVNULL
    env = docker_engine.environment()
    driver = subprocess.Popen(argv, env=env, stdout=quiet, stderr=quiet)
    try:
        deadline = time.monotonic() + 60
        while (
            not _left(docker_engine, f"ssegrade.run={run_id}")
            and time.monotonic() < deadline
        ):
            time.sleep(0.2)
        (container,) = _left(docker_engine, f"ssegrade.run={run_id}")
        labels = docker_engine.docker("inspect", "--format", "{{json .Config.Labels}}", container)
        batch = json.loads(labels.stdout)[BATCH_LABEL]
        (staging,) = Path(tempfile.gettempdir()).glob(f"ssegrade-containers-{batch}-*")
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        deadline = time.monotonic() + 30
        while (
            _left(docker_engine, f"{BATCH_LABEL}={batch}") or staging.exists()
        ) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _left(docker_engine, f"{BATCH_LABEL}={batch}") == []
        assert not staging.exists()
    finally:
        if driver.poll() is None:
            driver.kill()
        driver.wait()
