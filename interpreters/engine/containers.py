"""The container engine of a batch: each job graded in a fresh container of its image, its
run folder ingested once the container ended.

Interpreter layer (processes). `ContainerEngine` is an engine as `interpreters.batch.driving`
drives one. For each job it makes a private folder under the batch's staging root (the patch
as it was read when the batch was planned, and the staging folder, a size-bounded tmpfs when
root), starts the engine's `run` (`ssegrade.batch.run_argv`) in a session of its
own (the terminal's Ctrl-C is the driver's), waits for it at most the job's timeout and a
grace, kills it past that, then ingests the staging folder into the held run folder
(`interpreters.engine.ingest`). A container that ends without a whole grade is an `error` of
kind `infrastructure`. Every container carries the batch's label: the second Ctrl-C, the end
of the batch (`Images.close`) and, when the driver is killed, its reaper
(`interpreters.engine.reaper`) remove them all.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path

from interpreters.batch.landing import Arrival, Landing
from interpreters.batch.work import Done, Work
from interpreters.engine.images import Images
from interpreters.engine.ingest import ingest
from interpreters.engine.records import recorded
from interpreters.real import files
from interpreters.real.runner.options import ScriptOptions
from ssegrade.batch import ContainerJob, EngineProgram, Limits, run_argv
from ssegrade.internal.effects import CheckRecord
from ssegrade.internal.request import Graded
from ssegrade.internal.verdict import Crashed, not_graded

__all__ = ["GRACE", "ContainerEngine", "ContainerSettings"]

_log = logging.getLogger(__name__)

GRACE = 60
"""Seconds a container is given past its job's timeout (ssegrade's own ends it first)."""


@dataclass(frozen=True, slots=True)
class ContainerSettings:
    """How a batch's containers run: the engine, the bundle (a host folder), the limits of
    each container, the most bytes a grading may bring back, the most bytes of images the
    batch pulled itself that it keeps (None: all), and the seconds a container is given
    past its job's timeout before it is killed."""

    engine: EngineProgram
    bundle: Path
    limits: Limits = field(default_factory=Limits)
    results_limit: int = 1 << 30
    image_budget: int | None = None
    grace: int = GRACE


@dataclass(slots=True)
class _Box:
    work: Work
    name: str
    folder: Path
    process: subprocess.Popen[bytes]
    exited: int
    arrival: Arrival
    deadline: float
    start: float = field(default_factory=time.monotonic)
    late: bool = False


@dataclass
class ContainerEngine:
    """`capacity` containers at a time on the engine of `settings`."""

    settings: ContainerSettings
    images: Images
    capacity: int
    landing: Landing
    scripts: ScriptOptions | None = None
    pending: Counter[str] = field(default_factory=Counter)
    """The jobs still to start of each image (with those that may follow a job's error)."""
    _boxes: dict[int, _Box] = field(default_factory=dict)
    _ready: list[Done] = field(default_factory=list)
    _current: str | None = None
    """The image whose jobs are being started (the jobs come grouped by image)."""
    _removed: set[str] = field(default_factory=set)

    def start(self, work: Work) -> None:
        """Start the container of one grading (none when the driver does not hold its run
        folder: that grading is an `error` at once)."""
        arrival = self.landing.arrival(work)
        if arrival is None or work.image is None:
            lost = Crashed(f"{work.results}: not held", kind="infrastructure")
            self._ready.append(Done(work.key, not_graded(lost, work.runtime), 0.0))
            return
        self.pending[work.image] -= 1
        if work.image != self._current:
            self._current = work.image
            self._trim()
        if work.image in self._removed:
            why = self.images.again(work.image)
            if why is not None:
                self._ready.append(Done(work.key, arrival.lost(why), 0.0))
                arrival.close()
                return
            self._removed.discard(work.image)
        name = f"ssegrade-{self.images.batch}-{work.key}-{uuid.uuid4().hex[:8]}"
        folder = self.images.root / str(work.key)
        folder.mkdir(mode=0o700)
        patch = folder / "patch.diff"
        files.atomic_write(patch, work.patch)
        staging = folder / "out"
        staging.mkdir(mode=0o700)
        self._bound(staging)
        argv, env = self._command(work, name, patch, staging)
        try:
            with open(folder / "engine.log", "wb") as log:
                process = subprocess.Popen(
                    [self.images.program, *argv],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
        except OSError as exc:  # the engine's program is gone: this job is not graded
            result = arrival.lost(f"the container could not be started: {exc.strerror}")
            arrival.close()
            _unmount(staging)
            files.remove_tree(folder)
            self._ready.append(Done(work.key, result, 0.0))
            return
        deadline = time.monotonic() + work.timeout + self.settings.grace
        exited = os.pidfd_open(process.pid)
        self._boxes[work.key] = _Box(work, name, folder, process, exited, arrival, deadline)

    def _trim(self) -> None:
        """Remove the images the batch brought in past `--image-budget`, but those of jobs
        still to start and of running containers."""
        budget = self.settings.image_budget
        if budget is not None:
            keep = {box.work.image for box in self._boxes.values()} | {self._current}
            keep |= {image for image, count in self.pending.items() if count > 0}
            self._removed.update(self.images.trim(budget, {i for i in keep if i}))

    def _bound(self, staging: Path) -> None:
        """Make `staging` a tmpfs of `results_limit` bytes (root only): a container cannot
        fill the host's disk through it."""
        if os.geteuid() != 0:
            return
        size = f"size={self.settings.results_limit},mode=0700,nosuid,nodev"
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", size, "ssegrade-staging", str(staging)],
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            _log.warning("staging folder not bounded: %s", done.stderr.decode(errors="replace"))

    def _command(
        self, work: Work, name: str, patch: Path, staging: Path
    ) -> tuple[list[str], dict[str, str]]:
        """The engine's arguments for `work`, and the environment it takes values from."""
        scripts = self.scripts or ScriptOptions()
        policy = scripts.containment
        job = ContainerJob(
            image=work.image or "",
            name=name,
            batch=self.images.batch,
            run_id=Path(work.results).name,
            bundle=str(self.settings.bundle),
            patch=str(patch),
            staging=str(staging),
            task=work.task,
            repo=work.repo,
            timeout=work.timeout,
            script_timeout=work.script_timeout,
            agent_duration=work.runtime.agent_duration,
            agent_timeout=work.runtime.agent_timeout,
            agent_exit_code=work.runtime.agent_exit_code,
            containment=policy.mode,
            script_network=work.network or policy.network,
            script_memory=scripts.memory,
            script_tmp_size=policy.tmp_size,
            script_env=tuple(variable for variable, _ in scripts.env.extra),
            clean_env=scripts.env.clean,
            limits=self.settings.limits,
        )
        return run_argv(self.settings.engine, job), {**os.environ, **dict(scripts.env.extra)}

    def running(self) -> int:
        """Containers started and not yet collected."""
        return len(self._boxes) + len(self._ready)

    def poll(self, timeout: float) -> list[Done]:
        """Collect the containers that ended (their run folders ingested); kill those past
        their time."""
        found, self._ready = self._ready, []
        if found or not self._boxes:
            if not found:
                time.sleep(timeout)
            return found
        boxes = list(self._boxes.values())
        ready = set(wait([box.exited for box in boxes], timeout))
        now = time.monotonic()
        for box in boxes:
            if box.exited in ready:
                found.append(self._collect(box))
            elif now > box.deadline and not box.late:
                box.late = True
                self.images.remove([box.name])
        return found

    def _collect(self, box: _Box) -> Done:
        del self._boxes[box.work.key]
        code = box.process.wait()
        try:
            result = ingest(
                box.folder / "out", box.arrival, box.work.results, self.settings.results_limit
            )
            if isinstance(result, str):
                said = _last_line(box.folder / "engine.log")
                limit = box.work.timeout + self.settings.grace
                why = f"ran past its time limit ({limit} s)" if box.late else ""
                why = why or f"exited {code} without a grade: {result}"
                result = box.arrival.lost(f"the container {why}{said}")
                checks: tuple[CheckRecord, ...] = ()
                guard = None
            else:
                checks, guard = recorded(Path(box.work.results))
        finally:
            box.arrival.close()
            self._clear(box)
            self._trim()
        seconds = time.monotonic() - box.start
        containment = Graded(result, checks).containment
        return Done(box.work.key, result, seconds, containment, checks, guard)

    def _clear(self, box: _Box) -> None:
        """Close the container's descriptor, unmount and remove its folder."""
        with contextlib.suppress(OSError):
            os.close(box.exited)
        _unmount(box.folder / "out")
        files.remove_tree(box.folder)

    def kill(self) -> list[int]:
        """Kill and remove every running container; what arrived of them is dropped."""
        keys = [*self._boxes, *(done.key for done in self._ready)]
        self._ready.clear()
        self.images.remove([box.name for box in self._boxes.values()])
        for box in self._boxes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                box.process.wait(30)
            box.arrival.close()
            self._clear(box)
        self._boxes.clear()
        return keys

    def close(self) -> None:
        """Remove every container still running (the batch's `Images.close` removes what
        else the batch left on the engine)."""
        if self._boxes:
            self.kill()


def _unmount(path: Path) -> None:
    if os.path.ismount(path):
        subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


def _last_line(log: Path) -> str:
    """`: <the engine's last line>`, or nothing."""
    try:
        text = log.read_bytes()[-4096:].decode(errors="replace").strip()
    except OSError:
        return ""
    return f" ({text.splitlines()[-1][:300]})" if text else ""
