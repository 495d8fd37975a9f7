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
import shutil
from typing import Literal

from interpreters.batch.landing import Landing
from interpreters.batch.ray_engine import NO_RAY, EngineUnavailable, RayEngine, check_reachable
from interpreters.batch.work import Done, Engine, GradeFunction, Work, run_work
from interpreters.batch.workers import LocalEngine

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
    "make_engine",
    "run_work",
]

EngineName = Literal["local", "ray", "podman", "docker"]
"""Where gradings run: worker processes here, Ray tasks, or containers of the jobs' images."""


def check_engine(name: EngineName, address: str | None = None) -> None:
    """`EngineUnavailable` when the engine called `name` cannot run here (for Ray: not
    installed, or nothing answers at the cluster's `address`)."""
    if name == "ray" and importlib.util.find_spec("ray") is None:
        raise EngineUnavailable(NO_RAY)
    if name == "ray" and address is not None:
        check_reachable(address)
    if name in ("podman", "docker") and shutil.which(name) is None:
        raise EngineUnavailable(f"--engine {name}: {name} is not installed")


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
