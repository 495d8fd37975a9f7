"""Where gradings run: local worker processes (`workers.LocalEngine`), or Ray tasks on a
cluster (`ray_engine.RayEngine`, whose run folders come back to the driver's: `transit`,
`landing`).

Interpreter layer. A `Work` is one grading (a task folder, the patch bytes, the grading repo
and the folder to write, the scripts' options); an engine runs it with a grading function
(production: `interpreters.app.grading.HeldGrade`, the one entry `grade(request) -> Graded`;
tests inject their own) and hands back a `Done`
(see `work`); `interpreters.batch.driving` feeds an engine and owns the interrupt rules.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
from collections import Counter
from typing import TYPE_CHECKING, Literal

from interpreters.batch.landing import Landing
from interpreters.batch.ray_engine import NO_RAY, EngineUnavailable, RayEngine, check_reachable
from interpreters.batch.work import Done, Engine, GradeFunction, Work, run_work
from interpreters.batch.workers import LocalEngine

if TYPE_CHECKING:  # the container engine loads only when a batch uses it
    from interpreters.engine.containers import ContainerSettings
    from interpreters.engine.images import Images
    from interpreters.real.runner.options import ScriptOptions

__all__ = [
    "Done",
    "Engine",
    "EngineName",
    "EngineUnavailable",
    "GradeFunction",
    "Landing",
    "LocalEngine",
    "RayEngine",
    "Work",
    "check_engine",
    "make_container_engine",
    "make_engine",
    "run_work",
]

EngineName = Literal["local", "ray", "podman", "docker"]
"""Where gradings run: worker processes here, Ray tasks, or containers of the jobs' images."""


def check_engine(name: EngineName, address: str | None = None, *, on_ray: bool = False) -> None:
    """`EngineUnavailable` when the engine called `name` (with `on_ray`: its containers as
    Ray tasks) cannot run here (for Ray: not installed, or nothing answers at the cluster's
    `address`)."""
    ray = name == "ray" or on_ray
    if ray and importlib.util.find_spec("ray") is None:
        raise EngineUnavailable(NO_RAY)
    if ray and address is not None:
        check_reachable(address)
    if name in ("podman", "docker"):
        from interpreters.real.programs import ProgramError, ProgramMissing, program  # noqa: PLC0415

        try:
            found = program(name)  # root starts it: found on the trusted search path alone
        except ProgramMissing:
            raise EngineUnavailable(f"--engine {name}: {name} is not installed") from None
        except ProgramError as exc:
            raise EngineUnavailable(f"--engine {name}: {exc}") from None
        _check_answers(name, found)


def _check_answers(name: str, found: str) -> None:
    """`EngineUnavailable` when the engine's command line is there but no engine answers it
    (a docker client without its daemon): said once, before any job's command fails on it."""
    try:
        asked = subprocess.run(
            [found, "version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EngineUnavailable(f"--engine {name}: {found} version: {exc}") from None
    if asked.returncode != 0:
        said = (asked.stderr.strip().splitlines() or [f"exit status {asked.returncode}"])[-1]
        raise EngineUnavailable(f"--engine {name}: no {name} engine answers: {said}")


def make_engine(
    name: EngineName,
    grade: GradeFunction,
    workers: int | None,
    address: str | None,
    landing: Landing,
) -> Engine:
    """The engine called `name` with `workers` gradings at a time (default: the CPUs of this
    machine, or of the Ray cluster). Local workers write the run folders the driver holds
    themselves; Ray's send them back to `landing`."""
    if name == "ray":
        return RayEngine(grade, workers or 0, landing, address)
    return LocalEngine(grade, workers or os.cpu_count() or 1)


def make_container_engine(
    settings: ContainerSettings,
    images: Images,
    workers: int | None,
    landing: Landing,
    scripts: ScriptOptions | None,
    pending: Counter[str],
    ray: tuple[bool, str | None] = (False, None),
) -> Engine:
    """The container engine of a batch whose images `images` prepared: `workers` containers
    at a time here (default: the CPUs), or, with `ray` `(True, address)`, each container a
    Ray task on the node Ray picks, on the cluster at `address` (None: a local Ray; default
    `workers`: the cluster's CPUs), its run folder sent back to `landing`."""
    # Imported here: the container engine stands on the batch's own modules.
    from interpreters.engine.containers import ContainerEngine  # noqa: PLC0415
    from interpreters.engine.on_ray import ContainersOnNode  # noqa: PLC0415

    on_ray, address = ray
    if on_ray:
        node = ContainersOnNode(settings, images.batch, dict(images.origins), scripts)
        return RayEngine(None, workers or 0, landing, address, node)
    capacity = workers or os.cpu_count() or 1
    return ContainerEngine(settings, images, capacity, landing, scripts, pending)
