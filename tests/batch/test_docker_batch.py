"""`ssegrade batch --engine docker` on a real Docker engine (the session's private dockerd,
`tests/support/dockerkit.py`): image jobs graded as podman and the host grade them, with Docker's
default seccomp profile, and nothing of the batch left on the engine.

The task image is podman's (`tests/support/containerkit.py`), moved into Docker once per
session with its ID unchanged. ssegrade finds the engine as an operator's would:
`DOCKER_HOST` in its environment.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import containerkit, enginekit
from tests.support.containerkit import check_rows, patch_result_of, unique_id
from tests.support.dockerkit import Daemon, docker_engine, from_podman
from tests.support.exampletasks import EXAMPLES
from tests.support.realtask import ssegrade

pytestmark = [pytest.mark.container, pytest.mark.slow]

__all__ = ["docker_engine"]  # the fixture, found by pytest in this module

FIX = (EXAMPLES / "kvconf" / "task" / "diffs" / "patch.diff").read_bytes()
VERDICTS = {"fix": "passed", "empty": "failed"}


@pytest.fixture(scope="module")
def kvconf(docker_engine: Daemon) -> str:
    return from_podman(docker_engine, containerkit.task_image("kvconf"))


@pytest.fixture
def work() -> Iterator[Path]:
    with containerkit.shared_folder("ssegrade-docker-") as folder:
        yield folder


def _jobs(work: Path, image: str, ids: dict[str, str]) -> Path:
    (work / "fix.diff").write_bytes(FIX)
    (work / "empty.diff").write_bytes(b"")
    lines = [{"image": image, "patch": f"{name}.diff", "run_id": ids[name]} for name in ids]
    jobs = work / "jobs.jsonl"
    jobs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return jobs


def _batch(engine: str, jobs: Path, results: Path, env: dict[str, str], *more: str) -> None:
    bundle = str(containerkit.ssegrade_bundle())
    args = ["batch", str(jobs), "--results", str(results), "--engine", engine]
    done = ssegrade(*args, "--bundle", bundle, "--workers", "2", *more, env=env, timeout=300)
    assert done.returncode == 0, done.stderr


def _run(results: Path, run_id: str) -> Path:
    (found,) = results.glob(f"*/unknown/unknown/{run_id}")
    return found


def test_docker_grades_image_jobs_as_podman_and_the_host(
    docker_engine: Daemon, kvconf: str, work: Path
) -> None:
    ids = {name: unique_id(name) for name in VERDICTS}
    jobs = _jobs(work, kvconf, ids)
    _batch("docker", jobs, work / "d", {"DOCKER_HOST": docker_engine.host})
    for run_id in ids.values():
        label = f"label=ssegrade.run={run_id}"
        left = docker_engine.docker("ps", "--all", "--quiet", "--filter", label)
        assert left.returncode == 0, left.stderr
        assert left.stdout == ""
    conf = {"CONTAINERS_CONF": str(containerkit.CONTAINERS_CONF)}
    _batch("podman", jobs, work / "p", conf)
    task = enginekit.kvconf_on_host(work, ids, work / "h")
    for name, verdict in VERDICTS.items():
        inside = _run(work / "d", ids[name])
        docker = patch_result_of(inside)
        assert docker["status"] == verdict, docker
        assert docker == patch_result_of(_run(work / "p", ids[name]))
        assert docker == patch_result_of(_run(work / "h", ids[name]), task)
        assert check_rows(inside) == check_rows(_run(work / "h", ids[name]), task)
        assert json.loads((inside / "summary.json").read_text())["containment"] == "container"


def test_full_containment_under_dockers_seccomp_profile(
    docker_engine: Daemon, kvconf: str, work: Path
) -> None:
    # Docker's profile refuses the key system calls to the whole container: the scripts can
    # reach no key, so full containment goes on and says so (it was an error for every script).
    ids = {name: unique_id(name) for name in VERDICTS}
    jobs = _jobs(work, kvconf, ids)
    env = {"DOCKER_HOST": docker_engine.host}
    _batch("docker", jobs, work / "d", env, "--containment", "full")
    for name, verdict in VERDICTS.items():
        run = _run(work / "d", ids[name])
        assert patch_result_of(run)["status"] == verdict, patch_result_of(run)
        assert json.loads((run / "summary.json").read_text())["containment"] == "full"
        (log,) = (run / "logs").glob("*-build.log")
        build = log.read_text()
        assert "containment: full (PID, mount, IPC and network namespaces;" in build, build
        assert "no key system call for the runner" in build, build
