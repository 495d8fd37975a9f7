"""An image job graded on the Ray node that took it: a fresh container of its image, on that
node's engine, its run folder streamed back to the driver.

Interpreter layer (processes), the node's side of `ssegrade batch --engine podman|docker` on
Ray (`interpreters.batch.ray_engine` submits it; the driver's side of the run folder is
`interpreters.batch.landing`). `ContainersOnNode` is called in a Ray worker with one `Work`:
as the Ray engine's `grade_on_node` does, it holds a run folder of its own in the node's
temporary folder with the driver's token, grades the job into it with the container runner
of this machine (`interpreters.engine.containers.ContainerEngine`, one container), then
sends the folder back in pieces (`interpreters.batch.transit.pieces`) and last the `Done`.

The image is prepared once per node: under a lock of the node keyed by the image, the first
job pulls, loads or builds it as the driver named it, the others find it present. An image
that is another one on this node (another ID than the driver planned with) is an `error`. The
bundle is the driver's path when the node has it, else built on the node under the same
cache folder (each node runs the same ssegrade, as Ray requires). Each job's containers carry
the batch label with the job's key (`<batch>-<key>`) and have a reaper of their own: when the
Ray task is cancelled or the driver dies (Ray kills the worker), that reaper removes them and
their staging folder, and nothing of the node's other jobs.

`--image-budget` holds on each node (`interpreters.engine.images.NodeBudget`): each job marks
its image used in the node's record of the batch, and once it is done, the images the batch
brought in on this node that no running job uses are removed past the budget.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import tempfile
from collections import Counter
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from interpreters.batch.landing import Landing
from interpreters.batch.transit import Piece, pieces, relocate_done
from interpreters.batch.work import Done, Work
from interpreters.engine.bundle import BundleError, build
from interpreters.engine.containers import ContainerEngine, ContainerSettings
from interpreters.engine.images import EngineFailed, Image, Images, NodeBudget
from interpreters.engine.lockfile import held
from interpreters.real.resultsfolder.runs import RunFolders
from interpreters.real.runner import release_scratch, scratch_folder
from interpreters.real.runner.options import ScriptOptions

__all__ = ["ContainersOnNode", "Origin"]

Origin = tuple[str, Path, Path | None]
"""How the driver named an image: its reference, the jobs' folder, its build folder."""
_POLL = 1.0
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ContainersOnNode:
    """What a node needs to grade the batch's image jobs: the containers' settings, the
    batch's name, how each image was named (by its ID) and the scripts' options."""

    settings: ContainerSettings
    batch: str
    origins: dict[str, Origin] = field(default_factory=dict)
    scripts: ScriptOptions | None = None

    def __call__(self, work: Work, token: str) -> Generator[Piece | Done, None, None]:
        """Grade `work` here in a fresh container of its image, into a run folder of this
        node's held with the driver's `token`; yield its files as pieces, then the `Done`."""
        scratch = scratch_folder("transit")
        try:
            folders = RunFolders(scratch, token=token)
            try:
                held = folders.prepare((Path(work.results).name,))  # the run id, its label
                try:
                    here = replace(work, results=str(held.path))
                    graded = self._grade(here, Landing(token, {work.key: held}))
                    done = relocate_done(graded, str(held.path), work.results)
                    yield from pieces(held.folder, str(held.path), work.results)
                finally:
                    held.release()
            finally:
                folders.close()
            yield replace(done, key=work.key)
        finally:
            release_scratch(scratch)

    def _grade(self, work: Work, landing: Landing) -> Done:
        """The one container of `work`, on this node's engine, its folder into the run
        folder `landing` holds."""
        try:
            images = Images(self.settings.engine, f"{self.batch}-{work.key}")
        except EngineFailed as exc:
            return _lost(landing, work, f"on its Ray node: {exc}")
        budget = self.settings.image_budget
        node = None if budget is None else NodeBudget(self.batch, budget)
        mark = _use(node, work.image)
        try:
            why = self._ready(images, work)
            if node is not None and mark is not None:
                _brought(node, images)
            if why is not None:
                return _lost(landing, work, why)
            settings = replace(self.settings, bundle=self._bundle(), image_budget=None)
            engine = ContainerEngine(settings, images, 1, landing, self.scripts, Counter())
            try:
                engine.start(work)
                found: list[Done] = []
                while not found:
                    found = engine.poll(_POLL)
                return found[0]
            finally:
                engine.close()
        except BundleError as exc:
            return _lost(landing, work, f"no ssegrade bundle on its Ray node: {exc}")
        finally:
            if node is not None and mark is not None:
                _done(node, mark, images)
            images.close()

    def _ready(self, images: Images, work: Work) -> str | None:
        """Prepare `work`'s image on this node (once: under the node's lock of the image);
        why it cannot be, one line."""
        origin = self.origins.get(work.image or "")
        if origin is None:
            return f"image {work.image}: not planned by the driver"
        ref, base, build_folder = origin
        with _node_lock(f"{ref}\0{build_folder}"):
            found: Image | str = images.prepare(ref, base, build_folder)
        if isinstance(found, str):
            return f"on its Ray node: {found}"
        if found.id != work.image:
            return f"image {ref} is another image on its Ray node ({found.id[:12]})"
        return None

    def _bundle(self) -> Path:
        """The driver's bundle when this node has it, else this ssegrade's built here."""
        if (self.settings.bundle / "ssegrade").is_file():
            return self.settings.bundle
        return build(self.settings.bundle.parent)


def _use(node: NodeBudget | None, image: str | None) -> str | None:
    """Mark `image` used by this job in the node's record of the batch (`NodeBudget`); the
    mark, or None without a budget (or a record that cannot be kept: said in the log)."""
    if node is None or image is None:
        return None
    try:
        return node.use(image)
    except (EngineFailed, OSError) as exc:
        _log.warning("--image-budget on this node: %s", exc)
        return None


def _brought(node: NodeBudget, images: Images) -> None:
    """What the job's image brought in on this node joins its record (`NodeBudget`)."""
    try:
        node.brought(images)
    except (EngineFailed, OSError) as exc:
        _log.warning("--image-budget on this node: %s", exc)


def _done(node: NodeBudget, mark: str, images: Images) -> None:
    """The job is done: the node's images past the budget are removed (`NodeBudget.done`)."""
    try:
        node.done(mark, images)
    except (EngineFailed, OSError) as exc:
        _log.warning("--image-budget on this node: %s", exc)


def _lost(landing: Landing, work: Work, why: str) -> Done:
    """A job not graded on its node: an `error` saying `why`, written into its folder."""
    arrival = landing.arrival(work)
    assert arrival is not None  # its folder is held here until the stream ends
    return Done(work.key, arrival.lost(why), 0.0)


@contextlib.contextmanager
def _node_lock(key: str) -> Iterator[None]:
    """Hold this node's lock of `key` (a file in its temporary folder, never followed, removed
    by its last holder)."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    with held(Path(tempfile.gettempdir()) / f"ssegrade-image-{digest}.lock"):
        yield
