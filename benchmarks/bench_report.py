"""How fast and how lean is `ssegrade report` next to `cat` over the same files? By hand.

    .venv/bin/python benchmarks/bench_report.py [--runs 100000] [--rounds 3] [--dir D] [--keep]

Makes `--runs` synthetic run folders shaped as SSEBench writes them,
`RESULTS/<task>/<model…>/<agent>/<run-id>/summary.json` with a `latest` link beside the runs
of each (task, model, agent) (500 tasks, models of one to three folder levels, several agents
and trials, a few error and reference runs, every summary about 1 KiB with the task config, the
run config and an error log), and a second tree of half the size. Then, with a warm page cache,
it times alternately, `--rounds` times each:

- `cat`: `find RESULTS -name summary.json -print0 | xargs -0 cat > /dev/null`, which finds and
  reads the very files the report reads;
- the report, as a fresh process: `report RESULTS --format F -o /dev/null` for the table and
  JSON formats (Python start-up and imports included).

It prints the best wall time of each, the ratio report / cat (target: 2.0 or less) and the
report's peak resident memory at both sizes (target: flat, as runs are streamed).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODELS = ("openai/gpt-5", "anthropic/claude-sonnet-4", "qwen3-coder", "org/team/model-x")
AGENTS = ("codex", "claude-code", "openhands", "aider", "swe-agent")
REPORT = "from interpreters.report_cli import report; report.main(prog_name='report')"


def make_tree(root: Path, runs: int, seed: int = 11) -> None:
    """Write `runs` run folders under `root`, with a `latest` link in each group."""
    rng = random.Random(seed)
    tasks = [f"project{i % 97}-{1000 + i}" for i in range(500)]
    per_group = max(1, -(-runs // (len(tasks) * len(MODELS) * len(AGENTS))))
    made = 0
    for task in tasks:
        pocs = rng.randint(1, 2)
        files: dict[str, object] = {"poc": ["pocs/poc1", "pocs/poc2"][:pocs]}
        has_intent = rng.random() < 0.7
        if has_intent:
            files["future_test"] = "future.diff"
        config: dict[str, object] = {
            "id": task,
            "project": task.split("-")[0],
            "language": rng.choice(["c", "go", "rust", "python"]),
            "scripts": {"build": "build.sh", "run": "run.sh", "test": "test.sh"},
            "files": files,
        }
        for model in MODELS:
            for agent in AGENTS:
                run_id = ""
                for trial in range(per_group):
                    if made >= runs:
                        return
                    made += 1
                    run_id = f"202506{trial + 1:02d}-100000-{rng.randrange(1 << 24):06x}"
                    folder = root / task / model / agent / run_id
                    os.makedirs(folder)
                    doc = summary(rng, config, (pocs, has_intent), model, agent, trial)
                    doc["run_id"] = run_id
                    fd = os.open(folder / "summary.json", os.O_WRONLY | os.O_CREAT, 0o644)
                    os.write(fd, json.dumps(doc).encode())
                    os.close(fd)
                if run_id:
                    (root / task / model / agent / "latest").symlink_to(run_id)


def summary(
    rng: random.Random,
    config: dict[str, object],
    shape: tuple[int, bool],
    model: str,
    agent: str,
    trial: int,
) -> dict[str, object]:
    """One plausible summary.json for a task with `shape` = (PoCs, has intent tests)."""
    pocs, has_intent = shape
    built = rng.random() < 0.9
    patch: dict[str, object] = {"status": "failed", "build_success": built}
    if built:
        passed = rng.randint(0, pocs)
        func = rng.random() < 0.8
        intent = rng.random() < 0.5 if has_intent else None
        patch.update(pov_passed=passed, pov_total=pocs, func_test_success=func)
        patch["intent_test_success"] = intent
        ok = passed == pocs and func and intent is not False
        patch["status"] = "passed" if ok else "failed"
    if rng.random() < 0.02:
        patch = {"status": "error", "error_msg": "Timeout (3600s)"}
    if patch["status"] != "passed":
        patch.setdefault("error_msg", "PoC failed: /ssebench/pocs/poc1")
        patch["error_log"] = "==1==ERROR: AddressSanitizer: heap-buffer-overflow " * 6
    return {
        "task": config,
        "config": {
            "agent": agent,
            "model": model,
            "mode": "sandbox",
            "timeout": 3600,
            "difficulty": 2,
            "reference_run": rng.random() < 0.01,
        },
        "patch_result": patch,
        "runtime_result": {
            "agent_duration": rng.randint(60, 3600),
            "agent_timeout": False,
            "evaluator_timeout": False,
            "agent_exit_code": 0,
        },
        "spend": round(rng.uniform(0.05, 3.0), 4),
        "started_at": f"2025-06-{trial + 1:02d}T10:{rng.randint(0, 59):02d}:00Z",
    }


def timed(command: list[str], shell: bool = False) -> tuple[float, int]:
    """Wall time and peak resident memory (KiB) of one run of the command; it must succeed."""
    start = time.perf_counter()
    child = subprocess.Popen(command if not shell else command[0], shell=shell, cwd=REPO)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - start
    if child.returncode != 0:
        raise SystemExit(f"{command[0]} failed with status {child.returncode}")
    return elapsed, usage.ru_maxrss


def measure(root: Path, rounds: int) -> tuple[float, dict[str, tuple[float, int]]]:
    """Best `cat` time, and best time and peak memory of the report in each format."""
    cat = f"find '{root}' -name summary.json -print0 | xargs -0 cat > /dev/null"
    reports = {
        fmt: [sys.executable, "-c", REPORT, str(root), "--format", fmt, "-o", os.devnull]
        for fmt in ("table", "json")
    }
    timed([cat], shell=True)  # warm the page cache
    best_cat = float("inf")
    best = {fmt: (float("inf"), 0) for fmt in reports}
    for _ in range(rounds):
        best_cat = min(best_cat, timed([cat], shell=True)[0])
        for fmt, command in reports.items():
            took, rss = timed(command)
            best[fmt] = (min(best[fmt][0], took), max(best[fmt][1], rss))
    return best_cat, best


def main() -> None:
    """Make the trees, time both sides, print the ratios and the peak memory."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where to make the trees (default: temp)")
    parser.add_argument("--keep", action="store_true", help="keep the trees afterwards")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="bench_report.", dir=args.dir))
    try:
        peaks: dict[int, int] = {}
        for runs in (args.runs // 2, args.runs):
            root = scratch / f"results-{runs}"
            start = time.perf_counter()
            make_tree(root, runs)
            print(f"made {runs} run folders in {time.perf_counter() - start:.1f} s under {root}")
            best_cat, best = measure(root, args.rounds)
            print(f"  cat (find | xargs cat): {best_cat:.2f} s")
            for fmt, (took, rss) in best.items():
                ratio = took / best_cat
                verdict = "ok" if ratio <= 2.0 else "over the 2.0 target"
                print(
                    f"  report --format {fmt}: {took:.2f} s = {ratio:.2f} × cat ({verdict}); "
                    f"peak RSS {rss / 1024:.0f} MiB"
                )
            peaks[runs] = max(rss for _, rss in best.values())
        small, large = sorted(peaks)
        growth = peaks[large] / peaks[small]
        print(
            f"peak RSS {peaks[small] / 1024:.0f} MiB at {small} runs, "
            f"{peaks[large] / 1024:.0f} MiB at {large} runs: × {growth:.2f} for × 2 runs"
        )
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
