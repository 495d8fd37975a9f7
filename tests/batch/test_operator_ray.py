"""`batch.json` says when Ray ran a batch's gradings, and on which cluster, without the
credentials an address may carry: for containers on a Ray cluster (`--engine podman
--ray-address ADDR`) as for `--engine ray`, and `ssegrade report DIR --batch` says it.

The cluster is real (`tests.raycluster`), the engine the real podman; each job's container
runs a bundle that exits at once (the job is an `error`: what is checked is the record).
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interpreters.real.files import remove_tree
from ssegrade.batch import ray_cluster
from tests.support import containerkit
from tests.support.containerkit import unique_id
from tests.support.raycluster import NodeSpec
from tests.support.raycluster import ray_cluster as started_cluster
from tests.support.realtask import ssegrade

CONF = {"CONTAINERS_CONF": str(containerkit.CONTAINERS_CONF)}
secrets_ = st.text("abcdefXYZ0189_-.~!$&'()*+,;=%", min_size=6, max_size=20)
hosts = st.text("abchz0129.-", min_size=1, max_size=20)


@given(
    st.sampled_from(["", "ray://", "http://", "https://"]),
    secrets_,
    secrets_,
    hosts,
    st.integers(1, 65535),
    st.sampled_from(["/", "/p?token=", "?t=", "#"]),
)
def test_a_recorded_address_keeps_the_place_and_no_credential(
    scheme: str, user: str, secret: str, host: str, port: int, tail: str
) -> None:
    """Property: whatever user part, path or query an address carries, the record keeps its
    scheme, host and port, and neither the user nor the secret."""
    address = f"{scheme}{user}:{secret}@{host}:{port}{tail}{secret}"
    assert ray_cluster(address) == f"{scheme}{host}:{port}"
    assert ray_cluster(f"{scheme}{host}:{port}") == f"{scheme}{host}:{port}"


@pytest.fixture
def work() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-op-ray-"))
    folder.chmod(0o755)
    yield folder
    remove_tree(folder)


@pytest.mark.container
@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is not installed")
def test_containers_on_a_ray_cluster_are_recorded_as_such(work: Path) -> None:
    containerkit.require_engine()
    image = containerkit.task_image("kvconf")
    bundle = work / "bundle"
    bundle.mkdir()
    (bundle / "ssegrade").write_text("#!/bin/sh\nexit 0\n")
    (bundle / "ssegrade").chmod(0o755)
    (work / "p.diff").write_text("")
    line = {"image": image, "patch": "p.diff", "run_id": unique_id("ray-record")}
    (work / "jobs.jsonl").write_text(json.dumps(line) + "\n")
    results = work / "results"
    node = NodeSpec(1, env=CONF)
    with started_cluster(NodeSpec(0), node) as cluster:
        done = ssegrade(
            "batch", str(work / "jobs.jsonl"), "--results", str(results),
            "--engine", "podman", "--bundle", str(bundle), "--ray-address", cluster.address,
            env={**CONF, **cluster.env}, timeout=300,
        )  # fmt: skip
    assert done.returncode == 1, done.stderr  # its job is an error (the bundle grades nothing)
    doc = json.loads((results / "batch.json").read_text())
    (command,) = doc["commands"]
    assert (command["engine"], command["ray"]) == ("podman", cluster.address)
    assert (doc["engines"], doc["ray"]) == (["podman"], [cluster.address])
    shown = ssegrade("report", str(results), "--batch")
    assert shown.returncode == 0, shown.stderr
    assert f"engine podman on Ray at {cluster.address};" in shown.stdout
