"""Benchmark of a whole evaluation (run by hand, not a test).

Generates a large repository (by default 20,000 files, 200 MB) with a realistic agent patch,
and a task whose scripts do nothing (build, one PoC, functional and intent tests), on tmpfs
(`/dev/shm`) and on disk. Then it times `ssegrade evaluate` against the floor of what an
evaluation cannot avoid, measured in the same run, interleaved with it (medians):

- capture: `git add -A` into a fresh index and `git diff --cached --binary` of the tree;
- copies: `cp -a` of the grading repo, once per fresh copy grading makes (build, functional
  tests, intent tests).

Everything else (the fidelity proof, the patch check and apply, the archive, the scripts, the
cleanup) should hide behind these. Each step is also timed alone, in this process, to show
its share.

    .venv/bin/python benchmarks/bench_evaluate.py                 # 20,000 files, 200 MB
    .venv/bin/python benchmarks/bench_evaluate.py --files 2000 --mb 20 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_capture import agent_patch, generate, plain_env, run_git, timed

from interpreters.real import files, git

TOP = Path(__file__).resolve().parent.parent
NOTHING = "#!/bin/sh\nexit 0\n"
FUTURE = """diff --git a/intent_test.txt b/intent_test.txt
new file mode 100644
--- /dev/null
+++ b/intent_test.txt
@@ -0,0 +1 @@
+hidden
"""
COPIES = 3  # build, functional tests, intent tests


def make_task(folder: Path) -> None:
    """A task whose every script exits 0 at once."""
    (folder / "pocs").mkdir(parents=True)
    for name in ("build.sh", "run.sh", "test.sh"):
        path = folder / name
        path.write_text(NOTHING)
        path.chmod(0o755)
    (folder / "pocs" / "poc.bin").write_bytes(b"\x00")
    (folder / "future.diff").write_text(FUTURE)
    (folder / "config.yaml").write_text(
        "id: bench-1\n"
        "scripts: {build: build.sh, run: run.sh, test: test.sh}\n"
        "files: {poc: [pocs/poc.bin], future_test: future.diff}\n"
    )


def pristine(source: Path, dest: Path, home: Path) -> None:
    """A copy of the initial commit's tree, as a task container's grading repo would be."""
    dest.mkdir()
    archive = subprocess.run(
        ["git", "archive", "HEAD"], cwd=source, env=plain_env(home), capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)


def floor(top: Path, source: Path, repo: Path, home: Path) -> dict[str, float]:
    """Time the floor once: the capture, then the copies."""
    env = {**plain_env(home), "GIT_INDEX_FILE": str(top / "floor-index")}

    def capture() -> None:
        for args in (["add", "-A"], ["diff", "--cached", "--binary"]):
            subprocess.run(
                ["git", "-c", "gc.auto=0", *args], cwd=source, env=env, capture_output=True,
                check=True,
            )  # fmt: skip

    seconds = timed(capture)
    os.unlink(top / "floor-index")
    copies = [top / f"floor-copy{index}" for index in range(COPIES)]

    def copy() -> None:
        for dest in copies:
            subprocess.run(["cp", "-a", str(repo), str(dest)], check=True)

    copying = timed(copy)
    for dest in copies:
        shutil.rmtree(dest)
    return {"capture": seconds, "copies": copying}


def evaluate(top: Path, task: Path, source: Path, baseline: Path, repo: Path, n: int) -> float:
    """Time one `ssegrade evaluate`; answer its seconds and leave its results folder."""
    results = top / f"results{n}"
    command = [
        sys.executable, "-c", "from interpreters.cli import main; main()", "evaluate",
        "--task", str(task), "--source", str(source), "--baseline", str(baseline),
        "--repo", str(repo), "--results", str(results),
    ]  # fmt: skip
    done: list[subprocess.CompletedProcess[str]] = []
    seconds = timed(
        lambda: done.append(
            subprocess.run(
                command,
                capture_output=True,
                text=True,
                cwd=TOP,
                check=False,
                env={**os.environ, "TMPDIR": str(top)},  # its copies where the floor's are
            )
        )
    )
    # Its scratch folder is removed by a process of its own after it ends: let that finish
    # before anything else is timed.
    while any(top.glob("ssegrade-*")):
        time.sleep(0.05)
    if done[0].stdout.strip() != "passed":
        raise SystemExit(f"evaluate did not pass: {done[0].stdout}{done[0].stderr}")
    if not (results / "source.tar.gz").is_file():
        raise SystemExit("evaluate wrote no source.tar.gz")
    return seconds


def scripts_seconds(results: Path) -> float:
    """The seconds the task's scripts took, from `checks.jsonl`."""
    lines = (results / "checks.jsonl").read_text().splitlines()
    return sum(float(json.loads(line)["seconds"]) for line in lines)


def steps(top: Path, source: Path, baseline: git.Baseline, repo: Path) -> dict[str, float]:
    """Each step of an evaluation timed alone, in this process."""
    captured = []
    parts = {"capture": timed(lambda: captured.append(git.capture(source, baseline).unwrap()))}
    got = captured[0]
    parts["proof"] = timed(lambda: git.prove(baseline, got.patch, got.base_tree).unwrap())
    copies = [top / f"step-copy{index}" for index in range(COPIES)]

    def copy() -> None:
        for dest in copies:
            files.fresh_copy(repo, dest, None)
            git.apply_patch(dest, got.patch).unwrap()

    parts["copies"] = timed(copy)
    parts["archive"] = timed(lambda: files.archive(source, top / "step.tar.gz").unwrap())
    os.unlink(top / "step.tar.gz")

    def cleanup() -> None:
        for dest in copies:
            files.remove_tree(dest)

    parts["cleanup"] = timed(cleanup)
    return parts


def bench(where: Path, options: argparse.Namespace) -> tuple[float, float]:
    """Build the tree under `where`, measure; answer (evaluate, floor) medians."""
    rng = random.Random(options.seed)
    with tempfile.TemporaryDirectory(prefix="bench-evaluate-", dir=where) as folder:
        top = Path(folder)
        top.chmod(0o755)
        home = top / "home"
        home.mkdir()
        source = top / "source"
        source.mkdir()
        made = generate(source, options.files, options.mb, rng)
        run_git(source, home, "init", "-q", "-b", "main")
        run_git(source, home, "add", "-A")
        run_git(source, home, "commit", "-q", "-m", "initial")
        task = top / "task"
        make_task(task)
        recorded = git.record_baseline(source, top / "baseline").unwrap()
        agent_patch(source, made, rng)
        repo = top / "repo"
        pristine(source, repo, home)
        floors: list[dict[str, float]] = []
        ours: list[float] = []
        scripts: list[float] = []
        for n in range(options.rounds):  # interleaved: a slow moment hits both alike
            floors.append(floor(top, source, repo, home))
            ours.append(evaluate(top, task, source, recorded.path, repo, n))
            scripts.append(scripts_seconds(top / f"results{n}"))
            shutil.rmtree(top / f"results{n}")
        alone = [steps(top, source, recorded, repo) for _ in range(options.rounds)]
        parts = {key: statistics.median(a[key] for a in alone) for key in alone[0]}
        parts["scripts"] = statistics.median(scripts)
        total = sum(parts.values())
        floor_parts = {key: statistics.median(f[key] for f in floors) for key in floors[0]}
        floor_s = sum(floor_parts.values())
        ours_s = statistics.median(ours)
        print(f"{where}: {len(made)} files, {options.mb} MB; medians of {options.rounds}")
        print("  steps timed alone (share of their sum):")
        for key, value in parts.items():
            print(f"    {key:8s} {value:7.2f}s  {value / total:6.1%}")
        print(f"  floor: capture {floor_parts['capture']:.2f}s + {COPIES} x cp -a "
              f"{floor_parts['copies']:.2f}s = {floor_s:.2f}s")  # fmt: skip
        print(f"  evaluate {ours_s:.2f}s (sum of steps alone {total:.2f}s)")
        print(f"  evaluate / floor: {ours_s / floor_s:.2f}x")
        return ours_s, floor_s


def main() -> None:
    """Measure on tmpfs and on disk; print each step's share and the ratio to the floor."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=20_000, help="number of files (20000)")
    parser.add_argument("--mb", type=int, default=200, help="total size in MB (200)")
    parser.add_argument("--rounds", type=int, default=3, help="repetitions; medians (3)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--where",
        action="append",
        type=Path,
        help="folders to measure in (default: /dev/shm and the temp folder)",
    )
    options = parser.parse_args()
    places = options.where or [Path("/dev/shm"), Path(tempfile.gettempdir())]
    for where in places:
        bench(where, options)


if __name__ == "__main__":
    main()
