"""The command lines a container engine (podman, docker) is given for a batch's image jobs.

Pure core: `run_argv` says how one job runs in a fresh container of its image (SPEC §14,
Engines); `batch_containers_argv` and `remove_argv` find and remove a batch's containers by
their label. The same flags serve podman and docker; every command can be logged and replayed
by an operator. Running them is `interpreters.engine`'s job.

Inside the container, ssegrade is the read-only bundle mounted at `BUNDLE_AT`; it grades the
patch (mounted read-only at `PATCH_AT`) into `RESULTS_AT`, below the job's staging folder
(mounted at `STAGING_AT`), which the driver ingests once the container ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ssegrade.batch._jobs import Job, JobProblem

__all__ = [
    "BATCH_LABEL",
    "BUNDLE_AT",
    "FULL_CAPABILITIES",
    "PATCH_AT",
    "RESULTS_AT",
    "STAGING_AT",
    "ContainerJob",
    "EngineProgram",
    "Limits",
    "batch_containers_argv",
    "engine_problems",
    "remove_argv",
    "run_argv",
]

EngineProgram = Literal["podman", "docker"]

BATCH_LABEL = "ssegrade.batch"
"""The label every container of a batch carries: its value is the batch's id."""
BUNDLE_AT = "/opt/ssegrade"
"""Where the container sees the ssegrade bundle (read-only)."""
PATCH_AT = "/ssegrade-in/patch.diff"
"""Where the container sees the job's patch (read-only)."""
STAGING_AT = "/ssegrade-out"
"""Where the container sees the job's staging folder (the only writable host folder)."""
RESULTS_AT = f"{STAGING_AT}/run"
"""The results folder the grading writes in the container."""
FULL_CAPABILITIES = ("SYS_ADMIN", "NET_ADMIN")
"""What full containment needs of a container: namespaces, mounts, views and the pids
cgroup (SYS_ADMIN), the scripts' loopback (NET_ADMIN). Nothing else is ever added."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What bounds one container: memory and processes, the size of its scratch `/tmp`."""

    memory: int = 4 << 30
    pids: int = 4096
    tmp_size: int = 2 << 30


@dataclass(frozen=True, slots=True)
class ContainerJob:
    """One image job as its container runs it: where things are on the host (`bundle`,
    `patch`, `staging`) and in the image (`task`, `repo`), and the grading's options."""

    image: str
    name: str
    batch: str
    run_id: str
    bundle: str
    patch: str
    staging: str
    task: str
    repo: str
    timeout: int = 3600
    script_timeout: int | None = None
    agent_duration: int = 0
    agent_timeout: bool = False
    agent_exit_code: int | None = None
    containment: str | None = None
    script_network: Literal["loopback", "host"] = "loopback"
    script_memory: int | None = None
    script_tmp_size: int | None = None
    script_env: tuple[str, ...] = ()
    """Names of variables the scripts get, their values taken from the engine's environment."""
    clean_env: bool = False
    limits: Limits = Limits()


def run_argv(engine: EngineProgram, job: ContainerJob) -> list[str]:
    """The engine's arguments (after its program) that grade `job` in a fresh container.

    No network unless the scripts asked for the host's (`script_network: host`, then the
    engine's bridge); no capability added unless full containment was chosen (then
    `FULL_CAPABILITIES`); no privilege gained through set-uid programs; a bounded `/tmp`,
    memory and process count; the bundle and the patch read-only.

    >>> argv = run_argv("podman", ContainerJob("img", "n", "b1", "r1", "/bd", "/p", "/s",
    ...                                         "/ssebench", "/src/x"))
    >>> argv[:4], "--cap-add" in argv, argv[argv.index("--network") + 1]
    (['run', '--rm', '--name', 'n'], False, 'none')
    """
    network = "bridge" if job.script_network == "host" else "none"
    argv = ["run", "--rm", "--name", job.name, "--label", f"{BATCH_LABEL}={job.batch}"]
    argv += ["--label", f"ssegrade.run={job.run_id}", "--network", network]
    if job.containment == "full":
        for capability in FULL_CAPABILITIES:
            argv += ["--cap-add", capability]
    argv += ["--security-opt", "no-new-privileges"]
    argv += ["--tmpfs", f"/tmp:rw,exec,size={job.limits.tmp_size}"]
    argv += ["--memory", str(job.limits.memory), "--pids-limit", str(job.limits.pids)]
    argv += ["-v", f"{_mount_path(job.bundle)}:{BUNDLE_AT}:ro"]
    argv += ["-v", f"{_mount_path(job.patch)}:{PATCH_AT}:ro"]
    argv += ["-v", f"{_mount_path(job.staging)}:{STAGING_AT}:rw"]
    # An image made for an agent's run may name a baseline: a recorded patch needs none.
    argv += ["-e", "SSE_BASELINE="]
    for name in job.script_env:
        argv += ["-e", name]
    argv += ["--entrypoint", f"{BUNDLE_AT}/ssegrade", "--workdir", "/", job.image]
    return argv + _evaluate(job)


def _evaluate(job: ContainerJob) -> list[str]:
    """`ssegrade evaluate --patch` as the bundle runs it in the container."""
    argv = ["evaluate", "--task", job.task, "--patch", PATCH_AT, "--repo", job.repo]
    argv += ["--results", RESULTS_AT, "--timeout", str(job.timeout), "-q"]
    if job.script_timeout is not None:
        argv += ["--script-timeout", str(job.script_timeout)]
    argv += ["--agent-duration", str(job.agent_duration)]
    argv += ["--agent-timeout" if job.agent_timeout else "--no-agent-timeout"]
    if job.agent_exit_code is not None:
        argv += ["--agent-exit-code", str(job.agent_exit_code)]
    if job.containment is not None:
        argv += ["--containment", job.containment]
    argv += ["--script-network", job.script_network]
    if job.script_memory is not None:
        argv += ["--script-memory", str(job.script_memory)]
    if job.script_tmp_size is not None:
        argv += ["--script-tmp-size", str(job.script_tmp_size)]
    for name in job.script_env:
        argv += ["--script-env", name]
    if job.clean_env:
        argv.append("--clean-env")
    return argv


def _mount_path(path: str) -> str:
    """A host path as `-v` takes it: absolute, without the `:` or `,` that would split it."""
    if not path.startswith("/") or any(char in path for char in ":,\0\n"):
        raise ValueError(f"{path!r} cannot be mounted into a container")
    return path


def batch_containers_argv(engine: EngineProgram, batch: str) -> list[str]:
    """The arguments that list the ids of every container of `batch`, running or not.

    >>> batch_containers_argv("docker", "b1")
    ['ps', '--all', '--quiet', '--no-trunc', '--filter', 'label=ssegrade.batch=b1']
    """
    del engine  # the same on both
    return ["ps", "--all", "--quiet", "--no-trunc", "--filter", f"label={BATCH_LABEL}={batch}"]


def remove_argv(engine: EngineProgram, containers: Sequence[str]) -> list[str]:
    """The arguments that kill and remove `containers` (names or ids) at once.

    >>> remove_argv("podman", ["a"]), remove_argv("docker", ["a"])
    (['rm', '--force', '--ignore', '--time', '0', 'a'], ['rm', '--force', 'a'])
    """
    if engine == "podman":
        return ["rm", "--force", "--ignore", "--time", "0", *containers]
    return ["rm", "--force", *containers]


def engine_problems(jobs: Sequence[tuple[int, Job]], engine: str) -> list[JobProblem]:
    """One problem per job its engine cannot grade: an image job needs a container engine
    (`podman`, `docker`), and a container engine grades image jobs only.

    >>> found = engine_problems([(1, Job(task="t", patch="p")), (2, Job(image="i", patch="p"))],
    ...                         "local")
    >>> [(p.line, p.message) for p in found]
    [(2, 'image: an image job needs --engine podman or docker (not local)')]
    >>> [p.message for p in engine_problems([(1, Job(task="t", patch="p"))], "podman")]
    ['image: --engine podman grades image jobs only: give this job an `image`']
    """
    container = engine in ("podman", "docker")
    problems: list[JobProblem] = []
    for line, job in jobs:
        if job.image is not None and not container:
            why = f"image: an image job needs --engine podman or docker (not {engine})"
            problems.append(JobProblem(line, why))
        elif job.image is None and container:
            why = f"image: --engine {engine} grades image jobs only: give this job an `image`"
            problems.append(JobProblem(line, why))
    return problems
