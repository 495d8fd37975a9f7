"""`--image-budget` on a Ray node: a job graded there (`ContainersOnNode`, the node's side of
`ssegrade batch --engine podman --ray-address ADDR`) brings its image in on its node; once the
job is done, that image is removed past the budget, as the driver does with its own, but
never while another job of the node uses it, and never one the batch did not bring in.

The engine is the real podman; the image is a tiny one made for the test (a file on an empty
base, saved to an archive and removed, so that the node brings it in by loading it). The Ray
task itself is left out: `ContainersOnNode` is what a Ray worker calls, in the node's process.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.batch.work import Done, Work
from interpreters.engine.containers import ContainerSettings
from interpreters.engine.images import EngineFailed, Images, NodeBudget
from interpreters.engine.on_ray import ContainersOnNode, Origin
from interpreters.real.files import remove_tree
from ssegrade import RuntimeResult
from tests.support import containerkit

pytestmark = [pytest.mark.container]

TOKEN = "0123456789abcdef"
CONF = {"CONTAINERS_CONF": str(containerkit.CONTAINERS_CONF)}


@pytest.fixture
def work() -> Iterator[Path]:
    containerkit.require_engine()
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-op-budget-"))
    saved = {name: os.environ.get(name) for name in CONF}
    os.environ.update(CONF)
    try:
        yield folder
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        remove_tree(folder)


def _present(image_id: str) -> bool:
    return containerkit.podman("image", "exists", image_id).returncode == 0


def tiny_image(folder: Path) -> tuple[str, str]:
    """A tiny image of its own (a random file on an empty base) in an archive of `folder`,
    removed from the engine: its ID and the archive's reference, relative to `folder`."""
    name = uuid.uuid4().hex[:12]
    context = folder / f"context-{name}"
    context.mkdir()
    (context / "marker").write_text(name)
    (context / "Dockerfile").write_text("FROM scratch\nCOPY marker /marker\n")
    ref = f"localhost/ssegrade-op-budget-{name}"
    built = containerkit.podman("build", "--network", "none", "--tag", ref, str(context))
    assert built.returncode == 0, built.stderr
    image_id = containerkit.podman("image", "inspect", "--format", "{{.Id}}", ref).stdout.strip()
    archive = folder / f"{name}.tar"
    saved = containerkit.podman("save", "--format", "docker-archive", "-o", str(archive), ref)
    assert saved.returncode == 0, saved.stderr
    containerkit.podman("image", "rm", "--force", ref)
    assert not _present(image_id)
    return image_id, f"docker-archive:{archive.name}"


def node_of(folder: Path, budget: int | None, origins: dict[str, str]) -> ContainersOnNode:
    """The node's side of a batch whose containers run a bundle that exits at once."""
    bundle = folder / "bundle"
    bundle.mkdir(exist_ok=True)
    (bundle / "ssegrade").write_text("#!/bin/sh\nexit 0\n")
    (bundle / "ssegrade").chmod(0o755)
    settings = ContainerSettings("podman", bundle, image_budget=budget)
    named: dict[str, Origin] = {image: (ref, folder, None) for image, ref in origins.items()}
    return ContainersOnNode(settings, f"op{uuid.uuid4().hex[:10]}", named)


def grade_on_node(node: ContainersOnNode, folder: Path, image: str) -> Done:
    results = folder / "results" / "t" / "m" / "a" / uuid.uuid4().hex[:8]
    job = Work(1, "/ssebench", b"", "/repo", str(results), RuntimeResult(), image=image)
    items = list(node(job, TOKEN))
    done = items[-1]
    assert isinstance(done, Done)
    return done


def test_an_image_a_node_brought_in_is_removed_past_the_budget_once_its_job_is_done(
    work: Path,
) -> None:
    image, ref = tiny_image(work)
    try:
        done = grade_on_node(node_of(work, 0, {image: ref}), work, image)
        assert done.result is not None  # graded (an error: the image holds no task)
        assert not _present(image)  # brought in on the node, past a budget of 0 bytes
    finally:
        containerkit.podman("image", "rm", "--force", image)


def test_without_a_budget_the_node_keeps_what_it_brought_in(work: Path) -> None:
    image, ref = tiny_image(work)
    try:
        grade_on_node(node_of(work, None, {image: ref}), work, image)
        assert _present(image)
    finally:
        containerkit.podman("image", "rm", "--force", image)


def test_an_image_another_job_of_the_node_uses_stays_until_that_job_is_done(
    work: Path,
) -> None:
    used, used_ref = tiny_image(work)
    other, other_ref = tiny_image(work)
    node = node_of(work, 0, {used: used_ref, other: other_ref})
    budget = NodeBudget(node.batch, 0)
    try:
        images = Images("podman", f"{node.batch}-early")
        try:
            mark = budget.use(used)  # a job of the node runs in the image `used`
            assert images.prepare(used_ref, work).id == used  # type: ignore[union-attr]
            budget.brought(images)
            grade_on_node(node, work, other)  # another job, done meanwhile
            assert _present(used)
            assert not _present(other)
            assert budget.done(mark, images) == [used]  # the first job is done
        finally:
            images.close()
        assert not _present(used)
    finally:
        containerkit.podman("image", "rm", "--force", used, other)


def test_a_record_planted_by_another_user_removes_nothing(work: Path) -> None:
    """A record of the batch on the node that is not ours alone (here: writable by anyone,
    naming an image the batch never brought in) is refused: nothing it names is removed."""
    image, ref = tiny_image(work)
    try:
        containerkit.podman("load", "--input", str(work / ref.removeprefix("docker-archive:")))
        assert _present(image)
        node = node_of(work, 0, {})
        budget = NodeBudget(node.batch, 0, work)
        planted = budget.path
        planted.write_text(f'{{"ours": {{"{image}": 1}}, "using": {{}}}}')
        planted.chmod(0o666)
        with pytest.raises(EngineFailed, match="not ours alone"):
            budget.use(image)
        assert _present(image)
    finally:
        containerkit.podman("image", "rm", "--force", image)
