"""Throughput of `ssegrade batch` on the bundled example task, and what its extras cost.

Grades N jobs (default 40) of `examples/tlv` (the reference fix plus a one-line file that
differs per job, so that every job has its own digest) and prints:

- the throughput with 2 workers against 1 worker (target ≥ 1.7× on 2 cores);
- the cost of a cache hit against a grading (target ≤ 2 %): the same jobs again under new run
  ids, every one a cache hit, per job, against the per-job time of the 1-worker batch;
- the per-job overhead of the Ray engine against the local one, both with 2 workers (the Ray
  figure includes starting and stopping a local Ray; skipped when Ray is not installed).

    .venv/bin/python benchmarks/bench_batch.py [--jobs 40] [--no-ray]
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import shutil
import tempfile
import time
from pathlib import Path

from rich.console import Console

from interpreters.batch import run_batch
from interpreters.batch.progress import LineProgress

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "tlv"


def note_file(index: int) -> bytes:
    """A patch hunk adding `notes/n<index>.txt`, so that each job's digest differs."""
    return (
        f"diff --git a/notes/n{index}.txt b/notes/n{index}.txt\n"
        "new file mode 100644\n"
        "--- /dev/null\n"
        f"+++ b/notes/n{index}.txt\n"
        "@@ -0,0 +1 @@\n"
        f"+{index}\n"
    ).encode()


def write_jobs(root: Path, count: int, run_prefix: str) -> Path:
    fix = (EXAMPLE / "task" / "fix.diff").read_bytes()
    patches = root / "patches"
    patches.mkdir(exist_ok=True)
    lines = []
    for index in range(count):
        patch = patches / f"p{index}.patch"
        patch.write_bytes(fix + note_file(index))
        lines.append(
            json.dumps(
                {
                    "task": "task",
                    "patch": f"patches/p{index}.patch",
                    "repo": "project",
                    "model": "bench",
                    "agent": "bench",
                    "run_id": f"{run_prefix}{index}",
                }
            )
        )
    jobs = root / f"jobs-{run_prefix}.jsonl"
    jobs.write_text("\n".join(lines) + "\n")
    return jobs


def timed(jobs: Path, results: Path, **options: object) -> float:
    quiet = LineProgress(Console(file=io.StringIO()))
    start = time.perf_counter()
    report = run_batch(jobs, results, reporter=quiet, **options)  # type: ignore[arg-type]
    seconds = time.perf_counter() - start
    print(f"  {report.last_line}")
    assert report.exit_code == 0, report.last_line
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    root.chmod(0o755)
    try:
        shutil.copytree(EXAMPLE / "task", root / "task")
        shutil.copytree(EXAMPLE / "project", root / "project")
        n = args.jobs
        jobs = write_jobs(root, n, "r")
        print(f"{n} jobs of examples/tlv")
        one = timed(jobs, root / "one", workers=1)
        two = timed(jobs, root / "two", workers=2)
        print(f"1 worker: {one:.1f} s, 2 workers: {two:.1f} s")
        print(f"throughput 2 workers / 1 worker: {one / two:.2f}x (target >= 1.7x)")
        again = write_jobs(root, n, "c")
        hits = timed(again, root / "one", workers=1)
        per_hit, per_grading = hits / n, one / n
        print(
            f"cache hit: {per_hit * 1000:.1f} ms per job against {per_grading * 1000:.0f} ms "
            f"per grading: {per_hit / per_grading:.2%} (target <= 2 %)"
        )
        if args.no_ray or importlib.util.find_spec("ray") is None:
            print("ray engine: skipped (not installed or --no-ray)")
            return
        ray = timed(jobs, root / "ray", workers=2, engine="ray")
        print(
            f"ray engine, 2 workers: {ray:.1f} s: {(ray - two) / n * 1000:+.0f} ms per job "
            "against the local engine (local Ray start and stop included)"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
