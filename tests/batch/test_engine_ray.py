"""`ssegrade batch --engine podman --ray-address ADDR`: each image job a Ray task on the node
Ray picks, graded there in a fresh container of its image, its run folder sent back to the
driver: the same `patch_result` and checks as the local container engine, and nothing of the
batch left on the node, also when the driver is killed with -9 while a container runs.

The cluster is real (`tests.support.raycluster`): a head with no CPU and one node of two, whose
temporary folder is its own; the engine is the real podman (`tests.support.containerkit`).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.real.files import remove_tree
from tests.support import containerkit, enginekit
from tests.support.containerkit import (
    check_rows,
    left_with,
    patch_result_of,
    unique_id,
)
from tests.support.enginekit import PODMAN, sleeping_batch
from tests.support.exampletasks import EXAMPLES
from tests.support.raycluster import NEEDS_RAY, Cluster, NodeSpec, ray_cluster
from tests.support.realtask import ssegrade
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.container, pytest.mark.slow, NEEDS_RAY]

CONF = {"CONTAINERS_CONF": str(containerkit.CONTAINERS_CONF)}


@pytest.fixture(scope="module")
def kvconf() -> str:
    containerkit.require_engine()
    return containerkit.task_image("kvconf")


@pytest.fixture
def work() -> Iterator[Path]:
    with containerkit.shared_folder("ssegrade-engine-ray-") as folder:
        yield folder


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
    """What the node's gradings left in its temporary folder, the lock files of its images
    included (the module's tests run one after the other on its cluster)."""
    return sorted(p.name for p in node_tmp.glob("ssegrade-*"))


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
    assert _left_on_node(node_tmp) == []  # its image's lock file went with its last holder


def test_nothing_of_the_batch_stays_on_the_node_after_kill_9_of_the_driver(
    kvconf: str, work: Path, cluster: Cluster, node_tmp: Path, hostile_bundle: Path
) -> None:
    more = ("--ray-address", cluster.address)
    with sleeping_batch(
        PODMAN, kvconf, work, hostile_bundle, *more, env=cluster.env, tmp=node_tmp
    ) as running:
        assert _left_on_node(node_tmp)  # the job's staging and run folders, on the node
        enginekit.gone_after_kill_9(PODMAN, running, 40)
        wait_until(lambda: not _left_on_node(node_tmp), "the node's folders to go", 40, 0.2)


@pytest.fixture
def hostile_bundle(work: Path) -> Path:
    """A stand-in bundle: its `ssegrade` does what its patch says (here: sleeps)."""
    return enginekit.hostile_bundle(work)
