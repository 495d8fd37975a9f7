"""`ssegrade batch --engine podman --ray-address ADDR`: each image job a Ray task on the node
Ray picks, graded there in a fresh container of its image, its run folder sent back to the
driver: the same `patch_result` and checks as the local container engine, and nothing of the
batch left on the node, also when the driver is killed with -9 while a container runs.

The cluster is real (`tests.support.raycluster`): a head with no CPU and one node of two, whose
temporary folder is its own; the engine is the real podman (`tests.support.containerkit`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.real.files import remove_tree
from ssegrade.batch import BATCH_LABEL
from tests.support import containerkit
from tests.support.containerkit import (
    check_rows,
    left_with,
    one_line_diff,
    patch_result_of,
    unique_id,
)
from tests.support.exampletasks import EXAMPLES
from tests.support.raycluster import Cluster, NodeSpec, ray_cluster
from tests.support.realtask import CLI, ssegrade
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.container,
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("ray") is None,
        reason="Ray is not installed (pip install 'ssegrade[ray]')",
    ),
]

CONF = {"CONTAINERS_CONF": str(containerkit.CONTAINERS_CONF)}


@pytest.fixture(scope="module")
def kvconf() -> str:
    containerkit.require_engine()
    return containerkit.task_image("kvconf")


@pytest.fixture
def work() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-engine-ray-"))
    folder.chmod(0o755)
    yield folder
    remove_tree(folder)


@pytest.fixture(scope="module")
def node_tmp() -> Iterator[Path]:
    """The node's own temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="ray-node-tmp-"))
    folder.chmod(0o755)
    yield folder
    remove_tree(folder)


@pytest.fixture(scope="module")
def cluster(node_tmp: Path) -> Iterator[Cluster]:
    """A head that runs nothing and a node of two CPUs with its own temporary folder (one
    cluster for the module: each test finds its own containers and folders by their names)."""
    node = NodeSpec(2, env={**CONF, "TMPDIR": str(node_tmp)})
    with ray_cluster(NodeSpec(0), node) as started:
        yield started


def _left_on_node(node_tmp: Path) -> list[str]:
    """What the node's gradings left in its temporary folder (the images' lock files aside;
    the module's tests run one after the other on its cluster)."""
    return sorted(p.name for p in node_tmp.glob("ssegrade-*") if not p.name.endswith(".lock"))


def test_a_batch_on_ray_grades_as_the_local_container_engine(
    kvconf: str, work: Path, cluster: Cluster, node_tmp: Path
) -> None:
    fix = (EXAMPLES / "kvconf" / "task" / "diffs" / "patch.diff").read_bytes()
    (work / "fix.diff").write_bytes(fix)
    ids = {"fix": unique_id("fix")}
    lines = [{"image": kvconf, "patch": f"{name}.diff", "run_id": ids[name]} for name in ids]
    (work / "jobs.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    engine = ["--engine", "podman", "--bundle", str(containerkit.ssegrade_bundle())]
    jobs = ["batch", str(work / "jobs.jsonl"), *engine, "--workers", "1"]
    on_ray = ssegrade(*jobs, "--results", str(work / "ray"), "--ray-address", cluster.address,
                      env={**CONF, **cluster.env}, timeout=300)  # fmt: skip
    assert on_ray.returncode == 0, on_ray.stderr
    here = ssegrade(*jobs, "--results", str(work / "here"), env=CONF, timeout=300)
    assert here.returncode == 0, here.stderr
    (remote,) = (work / "ray").glob(f"*/unknown/unknown/{ids['fix']}")
    (local,) = (work / "here").glob(f"*/unknown/unknown/{ids['fix']}")
    found = patch_result_of(remote)
    assert found["status"] == "passed", found
    assert found == patch_result_of(local)
    assert check_rows(remote) == check_rows(local)
    assert json.loads((remote / "summary.json").read_text())["containment"] == "container"
    for record in (remote / "checks.jsonl").read_text().splitlines():
        assert json.loads(record)["log_file"].startswith(f"{remote}/")
    assert left_with(f"ssegrade.run={ids['fix']}") == []
    assert list(node_tmp.glob("ssegrade-image-*.lock"))  # the node prepared the image
    assert _left_on_node(node_tmp) == []


def test_nothing_of_the_batch_stays_on_the_node_after_kill_9_of_the_driver(
    kvconf: str, work: Path, cluster: Cluster, node_tmp: Path, hostile_bundle: Path
) -> None:
    (work / "sleep.diff").write_text(one_line_diff("sleep"))
    run_id = unique_id("sleep")
    line = {"image": kvconf, "patch": "sleep.diff", "run_id": run_id}
    (work / "jobs.jsonl").write_text(json.dumps(line) + "\n")
    argv = [*CLI, "batch", str(work / "jobs.jsonl"), "--results", str(work / "r"),
            "--engine", "podman", "--bundle", str(hostile_bundle),
            "--ray-address", cluster.address]  # fmt: skip
    quiet = subprocess.DEVNULL
    env = {**os.environ, **CONF, **cluster.env}
    driver = subprocess.Popen(argv, env=env, stdout=quiet, stderr=quiet)
    try:
        wait_until(
            lambda: left_with(f"ssegrade.run={run_id}"), "the job's container", 60, 0.2
        )
        (container,) = left_with(f"ssegrade.run={run_id}")
        labels = containerkit.podman("inspect", "--format", "{{json .Config.Labels}}", container)
        batch = json.loads(labels.stdout)[BATCH_LABEL]
        assert _left_on_node(node_tmp)  # the job's staging and run folders, on the node
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        wait_until(
            lambda: not left_with(f"{BATCH_LABEL}={batch}") and not _left_on_node(node_tmp),
            "the batch's containers and the node's folders to go",
            40,
            0.2,
        )
        assert left_with(f"{BATCH_LABEL}={batch}") == []
        assert _left_on_node(node_tmp) == []
    finally:
        if driver.poll() is None:
            driver.kill()
        driver.wait()


@pytest.fixture
def hostile_bundle(work: Path) -> Path:
    """A stand-in bundle: its `ssegrade` does what its patch says (here: sleeps)."""
    bundle = work / "bundle"
    bundle.mkdir()
    (bundle / "ssegrade").write_text("#!/bin/sh\nexec sleep 300\n")
    (bundle / "ssegrade").chmod(0o755)
    return bundle
