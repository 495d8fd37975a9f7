"""`--image-budget` on a Ray node, end to end: `ssegrade batch --engine podman --ray-address
ADDR` on a real local Ray, its jobs over two task images loaded from `docker-archive:` tars
(so the batch brought them in) and one image the node had already, with a budget that holds
one of the loaded images. The node removes the image it loaded first once the second's job
is done; the image it had stays, though a job used it; the verdicts are the images' own, and
`batch.json` says the jobs ran in containers on Ray.

A node of a real cluster has an engine of its own. Here the driver and the node share a host,
so the node's podman keeps its images in a store of its own (`CONTAINERS_STORAGE_CONF`): what
the driver loads to plan the jobs does not make the node's loads its own images. The images
are the kvconf task image with a file of their own on top (`tests/support/containerkit.py`).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.real.files import remove_tree
from tests.support import containerkit
from tests.support.containerkit import patch_result_of, unique_id
from tests.support.exampletasks import EXAMPLES
from tests.support.raycluster import NEEDS_RAY, Cluster, NodeSpec, ray_cluster
from tests.support.realtask import ssegrade

pytestmark = [pytest.mark.container, pytest.mark.slow, NEEDS_RAY]

CONF = {"CONTAINERS_CONF": str(containerkit.CONTAINERS_CONF)}
STORE = """[storage]
driver = "overlay"
graphroot = "{root}/graph"
runroot = "{root}/run"
"""
"""The node's own image store."""


@pytest.fixture
def work() -> Iterator[Path]:
    containerkit.require_engine()
    with containerkit.shared_folder("ssegrade-engine-budget-") as folder:
        yield folder


@pytest.fixture
def node_store() -> Iterator[dict[str, str]]:
    """The node's image store: the environment that names it; removed after (its files
    alone, which is quicker than removing its images through podman)."""
    root = Path(tempfile.mkdtemp(prefix="ssegrade-node-store-", dir="/var/tmp"))
    (root / "storage.conf").write_text(STORE.format(root=root))
    env = {**CONF, "CONTAINERS_STORAGE_CONF": str(root / "storage.conf")}
    try:
        yield env
    finally:
        on_node(env, "rm", "--all", "--force")  # none, unless the batch left one
        containerkit.unmount_under(root)
        remove_tree(root)


def on_node(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """A podman command on the node's store."""
    return subprocess.run(
        ["podman", *args], env={**os.environ, **env}, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip


def images_on_node(env: dict[str, str]) -> set[str]:
    said = on_node(env, "images", "--quiet", "--no-trunc")
    assert said.returncode == 0, said.stderr
    return {line.removeprefix("sha256:") for line in said.stdout.split()}


def own_image(base: str, work: Path) -> tuple[str, int, str]:
    """`base` with a file of its own on top, saved to an archive of `work` and removed from
    the host's engine: its ID, its size and the jobs' reference to the archive."""
    name = uuid.uuid4().hex[:12]
    context = work / f"context-{name}"
    context.mkdir()
    (context / "marker").write_text(name)
    (context / "Containerfile").write_text(f"FROM {base}\nCOPY marker /marker\n")
    ref = f"localhost/ssegrade-test-budget-{name}"
    built = containerkit.podman("build", "--network", "none", "--quiet", "-t", ref, str(context))
    assert built.returncode == 0, built.stderr
    said = containerkit.podman("image", "inspect", "--format", "{{.Id}} {{.Size}}", ref)
    image_id, size = said.stdout.split()
    saved = containerkit.podman(
        "save", "--format", "docker-archive", "-o", f"{work}/{name}.tar", ref
    )
    assert saved.returncode == 0, saved.stderr
    containerkit.podman("image", "rm", "--force", ref)
    return image_id, int(size), f"docker-archive:{name}.tar"


def test_a_node_removes_what_it_loaded_past_the_budget_and_keeps_its_own(
    work: Path, node_store: dict[str, str]
) -> None:
    kvconf = containerkit.task_image("kvconf")
    kept = containerkit.podman("image", "inspect", "--format", "{{.Id}}", kvconf).stdout.strip()
    # The node had the task image itself before the batch.
    containerkit.save_into(kvconf, ["podman", "load"], {**os.environ, **node_store})
    first, first_size, first_ref = own_image(kvconf, work)
    second, second_size, second_ref = own_image(kvconf, work)
    try:
        fix = (EXAMPLES / "kvconf" / "task" / "diffs" / "patch.diff").read_bytes()
        (work / "fix.diff").write_bytes(fix)
        (work / "none.diff").write_bytes(b"")
        jobs = {
            unique_id("first"): (first_ref, "fix.diff", "passed"),
            unique_id("second"): (second_ref, "none.diff", "failed"),
            unique_id("had"): (kvconf, "fix.diff", "passed"),
        }
        lines = [{"image": ref, "patch": patch, "run_id": run_id}
                 for run_id, (ref, patch, _) in jobs.items()]  # fmt: skip
        (work / "jobs.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        budget = max(first_size, second_size) + min(first_size, second_size) // 2
        node = NodeSpec(2, env={**node_store, "TMPDIR": str(work)})
        with ray_cluster(NodeSpec(0), node) as cluster:
            done = _batch(work, cluster, budget)
        assert done.returncode == 0, done.stderr

        # One job at a time: the job of the image loaded last was done after the other's,
        # and removed that one past the budget; the node's own image stays.
        ended = {}
        for run_id, (_, _, verdict) in jobs.items():
            (run,) = (work / "results").glob(f"*/unknown/unknown/{run_id}")
            assert patch_result_of(run)["status"] == verdict, patch_result_of(run)
            assert json.loads((run / "summary.json").read_text())["containment"] == "container"
            ended[run_id] = (run / "result.json").stat().st_mtime_ns
        first_id, second_id = list(jobs)[:2]
        last = second if ended[second_id] > ended[first_id] else first
        assert images_on_node(node_store) & {first, second, kept} == {last, kept}
        said = json.loads((work / "results" / "batch.json").read_text())
        assert said["engines"] == ["podman"], said
        assert said["ray"] == [cluster.address], said
        for image in (kvconf, containerkit.PYTHON_BASE):  # the host's own, on the driver
            assert containerkit.podman("image", "exists", image).returncode == 0, image
    finally:
        containerkit.podman("image", "rm", "--force", first, second)


def _batch(work: Path, cluster: Cluster, budget: int) -> subprocess.CompletedProcess[str]:
    args = ["batch", str(work / "jobs.jsonl"), "--results", str(work / "results")]
    args += ["--engine", "podman", "--bundle", str(containerkit.ssegrade_bundle())]
    args += ["--workers", "1", "--ray-address", cluster.address]
    return ssegrade(*args, "--image-budget", str(budget), env={**CONF, **cluster.env}, timeout=600)
