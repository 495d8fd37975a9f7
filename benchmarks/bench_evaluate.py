"""Benchmark of a whole evaluation (run by hand, not a test).

Generates a large repository (by default ~50,000 files, a few hundred MB) with a realistic
agent patch, and a task whose scripts do nothing (build, one PoC, functional and intent tests).
Then it times `ssegrade evaluate` against the sum of the floors of what an evaluation must do,
measured in the same run:

- capture: `git add -A && git diff --cached --binary` in a throwaway copy of the tree;
- apply: `git apply --binary` of that patch to a pristine copy;
- copies: `cp -a` of the grading repo, once per fresh copy grading makes (build, functional
  tests, intent tests);
- archive: `tar -czf` of the source tree.

    .venv/bin/python benchmarks/bench_evaluate.py              # ~50,000 files, ~300 MB
    .venv/bin/python benchmarks/bench_evaluate.py --files 2000 --mb 20
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_capture import agent_patch, generate, plain_env, run_git, timed

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


def floors(top: Path, source: Path, home: Path) -> dict[str, float]:
    """Time each floor once."""
    throwaway = top / "floor-source"
    subprocess.run(["cp", "-a", str(source), str(throwaway)], check=True)
    capture = timed(lambda: run_git(throwaway, home, "add", "-A"))
    patch: list[bytes] = []
    capture += timed(lambda: patch.append(run_git(throwaway, home, "diff", "--cached", "--binary")))
    repo = top / "floor-repo"
    pristine(source, repo, home)
    patch_file = top / "floor.patch"
    patch_file.write_bytes(patch[0])
    apply = timed(lambda: run_git(repo, home, "apply", "--binary", str(patch_file)))

    def copies() -> None:
        for index in range(COPIES):
            subprocess.run(["cp", "-a", str(repo), str(top / f"floor-copy{index}")], check=True)

    copy = timed(copies)
    tar = timed(
        lambda: subprocess.run(
            ["tar", "-czf", str(top / "floor.tar.gz"), "-C", str(source), "."], check=True
        )
    )
    for path in (throwaway, repo, *(top / f"floor-copy{i}" for i in range(COPIES))):
        shutil.rmtree(path)
    return {"capture": capture, "apply": apply, "copies": copy, "archive": tar}


def evaluate(top: Path, source: Path, task: Path, baseline: Path, home: Path, n: int) -> float:
    """Time one `ssegrade evaluate` run against a fresh pristine grading repo."""
    repo = top / f"repo{n}"
    pristine(source, repo, home)
    results = top / f"results{n}"
    command = [
        sys.executable,
        "-c",
        "from interpreters.cli import main; main()",
        "evaluate",
        "--task",
        str(task),
        "--source",
        str(source),
        "--baseline",
        str(baseline),
        "--repo",
        str(repo),
        "--results",
        str(results),
    ]
    done: list[subprocess.CompletedProcess[str]] = []
    seconds = timed(
        lambda: done.append(
            subprocess.run(command, capture_output=True, text=True, cwd=TOP, check=False)
        )
    )
    if done[0].stdout.strip() != "passed":
        raise SystemExit(f"evaluate did not pass: {done[0].stdout}{done[0].stderr}")
    shutil.rmtree(repo)
    shutil.rmtree(results)
    return seconds


def main() -> None:
    """Build the tree, then print the evaluation's time as a ratio to the sum of the floors."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=50_000, help="number of files (50000)")
    parser.add_argument("--mb", type=int, default=300, help="total size in MB (300)")
    parser.add_argument("--rounds", type=int, default=3, help="repetitions; medians (3)")
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    with tempfile.TemporaryDirectory(prefix="bench-evaluate-") as folder:
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
        baseline = top / "baseline"
        subprocess.run(
            [sys.executable, "-c", "from interpreters.cli import main; main()", "baseline",
             "--source", str(source), "--into", str(baseline)],
            cwd=TOP, check=True, capture_output=True,
        )  # fmt: skip
        agent_patch(source, made, rng)
        print(f"tree: {len(made)} files, {options.mb} MB; task scripts do nothing")
        measured = [floors(top, source, home) for _ in range(options.rounds)]
        parts = {key: statistics.median(m[key] for m in measured) for key in measured[0]}
        floor = sum(parts.values())
        ours = statistics.median(
            evaluate(top, source, task, baseline, home, n) for n in range(options.rounds)
        )
        for key, value in parts.items():
            print(f"  floor {key:8s} {value:7.2f}s")
        print(f"  floor total    {floor:7.2f}s")
        print(f"  evaluate       {ours:7.2f}s")
        print(f"evaluate / sum of floors: {ours / floor:.2f}x")


if __name__ == "__main__":
    main()
