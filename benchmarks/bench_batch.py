"""Throughput of `ssegrade batch` with 2 workers against 1 (local engine, and Ray when its
extra is installed), and what a cache hit costs.

The jobs: N gradings (default 16) of a small shell task (`tests.support.realtask`) whose build
sleeps a fixed time (`--sleep`, default 2 s) and whose other four scripts (two PoCs, the
functional and the intent tests) end at once; each job's patch adds a file of its own, so
that every job has its own digest and is graded. A grading is then a fixed wait plus
ssegrade's own work, done for real: the patch checked and applied, five fresh copies of the
repo, five contained scripts (namespaces, cgroup, private /tmp), the files of the run folder
written, and for Ray the run folder sent back to the driver. That is what a second worker
can overlap, and what the ratio measures: how well a batch keeps its workers busy. It is
not the speed-up of real tasks, whose builds may take every core for themselves, which no
engine can change. ssegrade's own part (about 0.5 s of CPU per grading here) contends for
the 2 cores like any work on a busy host: the load average is printed with each figure.

Printed, each measured in this one run:

- the local engine: 1 worker, 2 workers, their throughput ratio (target >= 1.7x);
- a cache hit against a grading (target <= 2 %): the same jobs again under new run ids,
  every one a cache hit, per job, against the per-job time of the 1-worker batch;
- the Ray engine (skipped with --no-ray or without Ray): a one-node Ray with 2 CPUs
  started once for the benchmark (its own temporary folder and ports, `tests.support.raycluster`),
  each batch connecting to it (connecting included): 1 worker, 2 workers, their ratio, and
  the per-job cost of the Ray engine against the local one, both with 2 workers;
- the podman engine (skipped with --no-container, or where no container can run:
  `tests/containers/setup.sh`): the same jobs as image jobs of a python-less image of the
  same task (the bundle mounted in), 2 workers, and their time against the local engine's
  with 2 workers (target <= 1.2x); apart, what preparing took: the bundle, the image's build
  and the batch's own preparation (the image inspected, its task read out of it).

    .venv/bin/python benchmarks/bench_batch.py [--jobs 16] [--sleep 2] [--no-ray]
        [--no-container]
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from interpreters.batch import run_batch
from interpreters.batch.progress import LineProgress
from tests.support.raycluster import NodeSpec, ray_cluster
from tests.support.realtask import BUILD, fix_to, make_task


def note_file(index: int) -> str:
    """A patch hunk adding `notes/n<index>.txt`, so that each job's digest differs."""
    return (
        f"diff --git a/notes/n{index}.txt b/notes/n{index}.txt\n"
        "new file mode 100644\n"
        "--- /dev/null\n"
        f"+++ b/notes/n{index}.txt\n"
        "@@ -0,0 +1 @@\n"
        f"+{index}\n"
    )


def write_jobs(root: Path, count: int, run_prefix: str) -> Path:
    """`count` jobs of the task in `root/t`, each with a patch of its own, run ids
    `<run_prefix><n>`."""
    patches = root / "patches"
    patches.mkdir(exist_ok=True)
    lines = []
    for index in range(count):
        patch = patches / f"p{index}.patch"
        patch.write_text(fix_to("fixed") + note_file(index))
        job = {"task": "t/task", "patch": f"patches/p{index}.patch", "repo": "t/source"}
        lines.append(json.dumps({**job, "model": "bench", "run_id": f"{run_prefix}{index}"}))
    jobs = root / f"jobs-{run_prefix}.jsonl"
    jobs.write_text("\n".join(lines) + "\n")
    return jobs


SHELL_IMAGE = """FROM {base}
COPY task /ssebench
COPY source /src/shell
RUN git -C /src/shell init -q -b main && git -C /src/shell add -A \\
 && git -C /src/shell -c user.name=b -c user.email=b@example.invalid commit -q -m buggy \\
 && useradd --system --no-create-home --shell /usr/sbin/nologin sse-runner
ENV SSE_REPO_PATH=/src/shell
"""


def container_engine(root: Path, n: int, local_two: float) -> None:
    """The podman engine on the same jobs as image jobs, against the local engine."""
    from interpreters.engine.containers import ContainerSettings  # noqa: PLC0415
    from tests.support import containerkit  # noqa: PLC0415

    why = containerkit.unavailable()
    if why is not None:
        print(f"podman engine: skipped ({why})")
        return
    os.environ["CONTAINERS_CONF"] = str(containerkit.CONTAINERS_CONF)
    start = time.perf_counter()
    bundle = containerkit.ssegrade_bundle()
    bundled = time.perf_counter() - start
    context = root / "context"
    context.mkdir()
    shutil.copytree(root / "t" / "task", context / "task")
    shutil.copytree(
        root / "t" / "source", context / "source", ignore=shutil.ignore_patterns(".git")
    )
    (context / "Containerfile").write_text(SHELL_IMAGE.format(base=containerkit.BASE))
    image = f"localhost/ssegrade-bench-shell:{os.getpid()}"
    start = time.perf_counter()
    built = containerkit.podman("build", "--network", "none", "-q", "-t", image, str(context))
    assert built.returncode == 0, built.stderr
    building = time.perf_counter() - start
    try:
        lines = []
        for index in range(n):
            job = {"image": image, "patch": f"patches/p{index}.patch", "model": "bench"}
            lines.append(json.dumps({**job, "run_id": f"k{index}"}))
        jobs = root / "jobs-image.jsonl"
        jobs.write_text("\n".join(lines) + "\n")
        settings = ContainerSettings("podman", bundle)
        start = time.perf_counter()
        warm = root / "jobs-warm.jsonl"
        warm.write_text(lines[0].replace('"k0"', '"w0"') + "\n")
        timed("podman, preparing (1 job)", warm, root / "warm", engine="podman",
              containers=settings, workers=1)  # fmt: skip
        preparing = time.perf_counter() - start
        two = timed("podman, 2 workers", jobs, root / "podman", engine="podman",
                    containers=settings, workers=2)  # fmt: skip
    finally:
        containerkit.podman("image", "rm", "--force", image)
    print(
        f"podman engine, 2 workers: {two / local_two:.2f}x the local engine's time "
        f"({(two - local_two) / n * 1000:+.0f} ms per job; target <= 1.2x); apart: the bundle "
        f"{bundled:.1f} s, the image's build {building:.1f} s, a first batch (inspect, task "
        f"read out, one job) {preparing:.1f} s"
    )


def load() -> str:
    return "load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def timed(label: str, jobs: Path, results: Path, **options: object) -> float:
    """Seconds the batch takes, said with its last line and the load average."""
    quiet = LineProgress(Console(file=io.StringIO()))
    start = time.perf_counter()
    report = run_batch(jobs, results, reporter=quiet, **options)  # type: ignore[arg-type]
    seconds = time.perf_counter() - start
    print(f"  {label}: {seconds:.1f} s ({report.last_line}; {load()})")
    assert report.exit_code == 0, report.last_line
    return seconds


def ratio(label: str, one: float, two: float) -> None:
    print(f"{label}: 2 workers / 1 worker throughput: {one / two:.2f}x (target >= 1.7x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jobs", type=int, default=16)
    parser.add_argument("--sleep", type=float, default=2.0)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--no-container", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    root.chmod(0o755)
    try:
        made = make_task(root / "t")
        made.script("build.sh", f"{BUILD}sleep {args.sleep}\n")
        n = args.jobs
        jobs = write_jobs(root, n, "r")
        print(f"{n} jobs, a {args.sleep:g} s build each, {os.cpu_count()} CPUs ({load()})")
        one = timed("local, 1 worker", jobs, root / "one", workers=1)
        two = timed("local, 2 workers", jobs, root / "two", workers=2)
        ratio("local engine", one, two)
        hits = timed("cache hits, 1 worker", write_jobs(root, n, "c"), root / "one", workers=1)
        per_hit, per_grading = hits / n, one / n
        print(
            f"cache hit: {per_hit * 1000:.1f} ms per job against {per_grading * 1000:.0f} ms "
            f"per grading: {per_hit / per_grading:.2%} (target <= 2 %)"
        )
        if args.no_container:
            print("podman engine: skipped (--no-container)")
        else:
            container_engine(root, n, two)
        if args.no_ray or importlib.util.find_spec("ray") is None:
            print("ray engine: skipped (not installed, or --no-ray)")
            return
        with ray_cluster(NodeSpec(cpus=2)) as cluster:
            os.environ.update(cluster.env)
            ray = {"engine": "ray", "ray_address": cluster.address}
            ray_one = timed("ray, 1 worker", jobs, root / "ray-one", workers=1, **ray)
            ray_two = timed("ray, 2 workers", jobs, root / "ray-two", workers=2, **ray)
        ratio("ray engine", ray_one, ray_two)
        print(
            f"ray engine, 2 workers: {(ray_two - two) / n * 1000:+.0f} ms per job against the "
            "local engine (connecting to the cluster included)"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
