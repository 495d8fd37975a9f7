"""The container engine's guards on Docker (the session's private dockerd): a container that
writes hostile things into its staging folder or outlives its time gets no grade of them, and
after kill -9 of the driver its reaper, which finds the engine through the `DOCKER_HOST` it
inherited, removes the batch's containers and staging folders.

The containers run a stand-in bundle (a shell script) instead of ssegrade: no grading.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import containerkit, enginekit
from tests.support.dockerkit import Daemon, docker_engine, from_podman

pytestmark = [pytest.mark.container, pytest.mark.slow]

__all__ = ["docker_engine"]  # the fixture, found by pytest in this module


@pytest.fixture(scope="module")
def kvconf(docker_engine: Daemon) -> str:
    return from_podman(docker_engine, containerkit.task_image("kvconf"))


@pytest.fixture
def work() -> Iterator[Path]:
    with containerkit.shared_folder("ssegrade-docker-engine-") as folder:
        enginekit.hostile_bundle(folder)
        yield folder


def test_hostile_staging_and_overtime_are_infrastructure_errors(
    docker_engine: Daemon, kvconf: str, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", docker_engine.host)
    enginekit.hostile_batch(docker_engine.engine, kvconf, work, work / "bundle")


def test_the_reaper_reaches_docker_after_kill_9_of_the_driver(
    docker_engine: Daemon, kvconf: str, work: Path
) -> None:
    engine = docker_engine.engine
    with enginekit.sleeping_batch(engine, kvconf, work, work / "bundle") as running:
        enginekit.gone_after_kill_9(engine, running)
