"""A batch's images: each prepared once (used when present, loaded from an archive, built from
a task's Dockerfile, else pulled), identified by its ID, and its task folder read out of it.

Interpreter layer (processes). Every command goes through the engine's own command line
(`podman`, `docker`), with this process's environment (a `CONTAINERS_CONF`, a `DOCKER_HOST`).
What the batch pulled, loaded or built itself is remembered, with its size, so that the
images past `--image-budget` can be removed once their jobs are done (`Images.trim`).
`Images` also holds the batch's place on the engine from its first command on: the staging
root its containers write in, and the reaper that removes every container of the batch and
that root if this process dies (`interpreters.engine.reaper`); `close` does it otherwise.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import stat
import subprocess
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interpreters.engine.lockfile import held
from interpreters.engine.reaper import Reaper
from interpreters.real import files
from interpreters.real.programs import ProgramError, ProgramMissing, program
from ssegrade.batch import BATCH_LABEL, EngineProgram, batch_containers_argv, remove_argv
from ssegrade.internal.errors import SsegradeError

__all__ = ["ARCHIVE", "EngineFailed", "Image", "Images", "NodeBudget", "engine_program"]

_log = logging.getLogger(__name__)

ARCHIVE = "docker-archive:"
"""An image reference that names an archive (`docker save`, `podman save`) to load."""
_QUICK = 120.0
"""Seconds an engine command that moves no image may take."""
_SLOW = 3600.0
"""Seconds a pull, a load or a build may take."""
_ID = re.compile(r"^(sha256:)?[0-9a-f]{12,64}$")
_RECORD = 1 << 20
"""The largest record of a node's images read back."""


class EngineFailed(SsegradeError):
    """An engine command failed: one line (its last line of output)."""


def engine_program(engine: EngineProgram) -> str:
    """The engine's program, found on the trusted search path (`interpreters.real.programs`:
    root starts it); `EngineFailed` when it is not installed there or could be replaced."""
    try:
        return program(engine)
    except ProgramMissing:
        raise EngineFailed(f"--engine {engine}: {engine} is not installed") from None
    except ProgramError as exc:
        raise EngineFailed(f"--engine {engine}: {exc}") from None


@dataclass(frozen=True, slots=True)
class Image:
    """A prepared image: the reference the jobs gave, its ID and its environment."""

    ref: str
    id: str
    env: dict[str, str]


@dataclass
class Images:
    """The images of one batch on one engine, prepared once each."""

    engine: EngineProgram
    batch: str
    program: str = ""
    prepared: dict[str, Image | str] = field(default_factory=dict)
    ours: dict[str, int] = field(default_factory=dict)
    """The IDs of images this batch brought in (pulled, loaded, built), with their sizes."""
    origins: dict[str, tuple[str, Path, Path | None]] = field(default_factory=dict)
    """How each image was named, by its ID: its reference, the jobs' folder, its build."""
    root: Path = field(init=False)
    """The staging root: a private folder for the batch's containers' job folders."""
    _reaper: Reaper | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.program = self.program or engine_program(self.engine)
        if self.engine == "docker" and os.geteuid() != 0:
            self._check_rootless()
        self.root = Path(tempfile.mkdtemp(prefix=f"ssegrade-containers-{self.batch}-"))
        self._reaper = Reaper.start(self.engine, self.program, self.batch, self.root)

    def _check_rootless(self) -> None:
        """`EngineFailed` unless the Docker engine runs rootless: one that runs as root (as
        Docker usually does) gives its containers the host's root, which would write this
        user's staging folders full of root's files it cannot remove (and anyone who may use
        that engine is root already)."""
        said = self.run("info", "--format", "{{json .SecurityOptions}}")
        try:
            options = json.loads(said) or []
        except ValueError:
            raise EngineFailed("docker info: no security options") from None
        if not any(isinstance(o, str) and "name=rootless" in o.split(",") for o in options):
            raise EngineFailed(
                "--engine docker: the Docker engine runs as root, so its containers write "
                "root's files this user cannot remove: run ssegrade as root (the engine "
                "gives its users root's power anyway), or use rootless Docker or podman"
            )

    def close(self) -> None:
        """Remove every container of the batch still there and the staging root, then let
        the reaper go (it stays, to act at this process's death, when they cannot be)."""
        try:
            listed = self.run(*batch_containers_argv(self.engine, self.batch))
            self.remove(listed.split())
        except EngineFailed as exc:
            _log.warning("%s", exc)
            return
        files.remove_tree(self.root)
        if self._reaper is not None:
            self._reaper.finish()
            self._reaper = None

    def run(self, *args: str, timeout: float = _QUICK) -> str:
        """Run one engine command; its standard output, or `EngineFailed`."""
        try:
            done = subprocess.run(
                [self.program, *args],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                start_new_session=True,  # the terminal's Ctrl-C is the driver's alone
            )
        except subprocess.TimeoutExpired:
            raise EngineFailed(f"{self.engine} {args[0]}: no answer in {timeout:.0f} s") from None
        if done.returncode != 0:
            lines = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()
            raise EngineFailed(f"{self.engine} {' '.join(args[:2])}: {lines[-1]}")
        return done.stdout

    def prepare(self, ref: str, base: Path, build: Path | None = None) -> Image | str:
        """The image `ref` (an archive's path is relative to `base`), prepared once per
        batch: present, loaded, built from `build` (a folder with a Dockerfile) or pulled;
        or why it cannot be (one line)."""
        key = f"{ref}\0{build}"
        if key not in self.prepared:
            try:
                self.prepared[key] = self._prepare(ref, base, build)
            except EngineFailed as exc:
                self.prepared[key] = f"image: {exc}"
            found = self.prepared[key]
            if isinstance(found, Image):
                self.origins.setdefault(found.id, (ref, base, build))
        return self.prepared[key]

    def again(self, image_id: str) -> str | None:
        """Bring back the image `image_id`, removed past the budget while a job of it was
        still to come (an `error` graded again): prepared as it first was; why not, when it
        cannot be or is another image now."""
        ref, base, build = self.origins[image_id]
        try:
            found = self._prepare(ref, base, build)
        except EngineFailed as exc:
            return f"image {ref} removed past --image-budget and not brought back: {exc}"
        if found.id != image_id:
            return f"image {ref} removed past --image-budget, and is another image now"
        return None

    def _prepare(self, ref: str, base: Path, build: Path | None) -> Image:
        if ref.startswith(ARCHIVE):
            archive = (base / ref.removeprefix(ARCHIVE)).absolute()
            before = set(self.run("images", "--quiet", "--no-trunc").split())
            said = self.run("load", "--input", str(archive), timeout=_SLOW)
            loaded = [line.split(":", 1)[1].strip() for line in said.splitlines() if ":" in line]
            if not loaded:
                raise EngineFailed(f"{self.engine} load: {archive} named no image")
            image = self._inspect(loaded[-1].split(",")[0].strip())  # podman: `a,b`
            known = image.id in before or f"sha256:{image.id}" in before
            return image if known else self._ours(image)
        try:
            return self._inspect(ref)
        except EngineFailed:
            pass
        if build is not None:
            self.run("build", "--network", "none", "--tag", ref, str(build), timeout=_SLOW)
        else:
            self.run("pull", ref, timeout=_SLOW)
        return self._ours(self._inspect(ref))

    def _inspect(self, ref: str) -> Image:
        said = self.run("image", "inspect", "--format", "{{.Id}} {{json .Config.Env}}", ref)
        image_id, _, env = said.strip().partition(" ")
        try:
            found = json.loads(env) or []
        except ValueError:
            raise EngineFailed(f"{self.engine} image inspect {ref}: no environment") from None
        pairs = (item.partition("=") for item in found if isinstance(item, str))
        return Image(ref, image_id, {name: value for name, _, value in pairs})

    def _ours(self, image: Image) -> Image:
        size = self.run("image", "inspect", "--format", "{{.Size}}", image.id).strip()
        self.ours[image.id] = int(size) if size.isdigit() else 0
        return image

    def copy_out(self, image: Image, path: str, into: Path) -> Path:
        """Copy the folder `path` of `image` into the new folder `into/<its name>` (links
        copied as links), through a container created, never started, and removed."""
        name = f"ssegrade-copy-{uuid.uuid4().hex[:16]}"
        label = f"{BATCH_LABEL}={self.batch}"
        self.run("create", "--name", name, "--label", label, "--entrypoint", "/bin/true", image.id)
        try:
            target = into / "copy"
            self.run("cp", f"{name}:{path}", str(target))
        finally:
            self.remove([name])
        return target

    def remove(self, containers: Sequence[str]) -> None:
        """Kill and remove `containers` (what cannot be is logged)."""
        if containers:
            try:
                self.run(*remove_argv(self.engine, containers))
            except EngineFailed as exc:
                _log.warning("%s", exc)

    def trim_with(self, ours: dict[str, int], budget: int, keep: set[str]) -> dict[str, int]:
        """`trim` of the images `ours` (IDs and sizes, as a node's record holds them); what
        is left of them."""
        self.ours, mine = dict(ours), self.ours
        try:
            self.trim(budget, keep)
            return self.ours
        finally:
            self.ours = mine

    def trim(self, budget: int, keep: set[str]) -> list[str]:
        """Remove images this batch brought in, not in `keep` (still needed), while their
        sizes add up to more than `budget` bytes; the IDs removed."""
        removed: list[str] = []
        for image_id in list(self.ours):
            if sum(self.ours.values()) <= budget:
                break
            if image_id in keep:
                continue
            try:
                self.run("image", "rm", image_id)
            except EngineFailed as exc:
                _log.warning("%s", exc)
                continue
            del self.ours[image_id]
            removed.append(image_id)
            _log.info("image %s removed (past --image-budget)", image_id[:12])
        return removed


@dataclass(frozen=True, slots=True)
class NodeBudget:
    """`--image-budget` on one node of a batch on Ray, whose jobs each run in a Ray task of
    their own: what the batch brought in on this node, and which of its images this node's
    jobs are using, are kept in the node's record of the batch (a file of its temporary
    folder, ours alone, each change under its lock); once a job is done, the images the batch
    brought in here that no running job of this node uses are removed while their sizes add
    up to more than `budget` bytes (a later job of such an image brings it back)."""

    batch: str
    budget: int
    folder: Path = field(default_factory=lambda: Path(tempfile.gettempdir()))

    def use(self, image_id: str) -> str:
        """Mark `image_id` as used by a job of this process until `done`; the mark."""
        mark = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        with self._record() as record:
            record["using"][mark] = image_id
        return mark

    def brought(self, images: Images) -> None:
        """What `images` brought in (a job's, once its image is prepared) joins the record."""
        with self._record() as record:
            record["ours"].update(images.ours)

    def done(self, mark: str, images: Images) -> list[str]:
        """The job marked `mark`, whose images `images` prepared, is done: what `images`
        brought in joins the record, then the images past the budget are removed (see the
        class); the IDs removed."""
        with self._record() as record:
            record["using"].pop(mark, None)
            record["ours"].update(images.ours)
            using = {image for held, image in record["using"].items() if _alive(held)}
            kept = images.trim_with(record["ours"], self.budget, using)
            removed = [image for image in record["ours"] if image not in kept]
            record["ours"] = kept
            return removed

    @property
    def path(self) -> Path:
        """The node's record of the batch (a lock file, as the node's locks of images)."""
        digest = hashlib.sha256(f"budget\0{self.batch}".encode()).hexdigest()[:24]
        return self.folder / f"ssegrade-image-{digest}.lock"

    @contextlib.contextmanager
    def _record(self) -> Iterator[dict[str, dict[str, Any]]]:
        """The node's record of the batch, locked, written back when the block ends (emptied
        when nothing is left in it); `EngineFailed` when the file is not ours alone."""
        with held(self.path) as lock:
            lock.remove = False  # kept when the block fails
            record = _read_record(lock.fd)
            yield record
            if any(record.values()):
                os.lseek(lock.fd, 0, os.SEEK_SET)
                os.ftruncate(lock.fd, 0)
                os.write(lock.fd, json.dumps(record).encode())
            else:
                lock.remove = True  # nothing left: no file of the batch stays on the node


def _read_record(fd: int) -> dict[str, dict[str, Any]]:
    """A node's record of a batch (its images with their sizes, its marks of use), or an
    empty one when the file is not ours alone or not a record."""
    empty: dict[str, dict[str, Any]] = {"ours": {}, "using": {}}
    found = os.fstat(fd)
    if found.st_uid != os.geteuid() or found.st_mode & 0o077 or not stat.S_ISREG(found.st_mode):
        raise EngineFailed("the node's record of the batch's images is not ours alone")
    try:
        doc = json.loads(os.pread(fd, _RECORD, 0) or b"{}")
    except ValueError:
        return empty
    if not isinstance(doc, dict):
        return empty
    ours, using = doc.get("ours"), doc.get("using")
    return {
        "ours": {
            k: v
            for k, v in (ours.items() if isinstance(ours, dict) else ())
            if _ID.match(k) and isinstance(v, int)
        },
        "using": {
            k: v
            for k, v in (using.items() if isinstance(using, dict) else ())
            if isinstance(k, str) and isinstance(v, str) and _ID.match(v)
        },
    }


def _alive(mark: str) -> bool:
    """Whether the process of a mark of use still runs (a killed job uses nothing)."""
    pid = mark.partition("-")[0]
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def scratch() -> Path:
    """A new private folder for copies out of images (the caller removes it)."""
    return Path(tempfile.mkdtemp(prefix="ssegrade-image-task-"))
