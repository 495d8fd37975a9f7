"""How fast and how lean is `ssegrade report` next to `cat` over the same files? By hand.

    .venv/bin/python benchmarks/bench_report.py [--runs 100000] [--rounds 3] [--shape wide|deep]
                                                [--select latest|all] [--dir D] [--keep]

Makes synthetic run folders shaped as SSEBench writes them,
`RESULTS/<task>/<model…>/<agent>/<run-id>/summary.json` with a `latest` link beside the runs
of each (task, model, agent) (models of one to three folder levels, a few error and reference
runs, every summary about 1.3 KiB with the task config, the run config, an error log, the
containment mode and the patch guard's record as `ssegrade batch` writes them: some runs
flagged, a few graded before the guard), in two shapes, each at `--runs` and at half of it (a
few thousand runs are enough for a quick look):

- wide: one run of each task by four (model, agent) pairs, so `--runs` / 4 tasks (25,000 at
  100,000 runs): the per-task tables are as long as they can be;
- deep: 500 tasks, twenty (model, agent) pairs, the rest as repeated trials.

Then, with a warm page cache, it times alternately, `--rounds` times each, the best kept:

- `cat`: `find RESULTS -name summary.json -print0 | xargs -0 cat > /dev/null`, which finds and
  reads the very files the report reads;
- the report, as a fresh process (Python start-up and imports included), in every format:
  `report RESULTS --runs latest --format F -o /dev/null` for table, json, csv, csv --per-run,
  jsonl and html (`--select all`: `--runs all`, every run kept and listed; the two are the
  same in the wide shape, where each task, model and agent has one run).

It prints each format's ratio report / cat (target: 2.0 or less) and peak resident memory,
and how the peak memory grows from half the runs to all of them (target: flat).
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
WIDE_PAIRS = tuple(zip(MODELS, AGENTS, strict=False))
DEEP_PAIRS = tuple((model, agent) for model in MODELS for agent in AGENTS)
DEEP_TASKS = 500
KINDS = ("build-config", "sanitizer", "crash-handler", "poc-literal", "tests", "vendored")
REPORT = "from interpreters.cli.report import report; report.main(prog_name='report')"
FORMATS: dict[str, tuple[str, ...]] = {
    "table": ("--format", "table"),
    "json": ("--format", "json"),
    "csv": ("--format", "csv"),
    "csv --per-run": ("--format", "csv", "--per-run"),
    "jsonl": ("--format", "jsonl"),
    "html": ("--format", "html"),
}


def shape_of(name: str, runs: int) -> tuple[int, tuple[tuple[str, str], ...]]:
    """(tasks, (model, agent) pairs) of a shape at `runs` runs."""
    if name == "wide":
        return max(1, runs // len(WIDE_PAIRS)), WIDE_PAIRS
    return DEEP_TASKS, DEEP_PAIRS


def make_tree(root: Path, runs: int, shape: str, seed: int = 11) -> None:
    """Write `runs` run folders of `shape` under `root`, with a `latest` link in each group."""
    rng = random.Random(seed)
    count, pairs = shape_of(shape, runs)
    tasks = [f"project{i % 97}-{1000 + i}" for i in range(count)]
    per_group = max(1, -(-runs // (len(tasks) * len(pairs))))
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
        for model, agent in pairs:
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
    doc: dict[str, object] = {
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
        "digest": f"{rng.getrandbits(256):064x}",
        "containment": "full" if rng.random() < 0.95 else "weak",
        "spend_recorded": True,
        "attempts": 1,
    }
    if rng.random() < 0.97:  # the rest were graded before the guard
        kinds = rng.sample(KINDS, rng.choice((1, 2))) if rng.random() < 0.15 else []
        flags = [{"kind": kind, "paths": ["Makefile"], "why": "touched"} for kind in kinds]
        observed = {"pocs": pocs, "hidden_tests": int(has_intent), "objects": None}
        doc["guard"] = {"version": 1, "checked": True, "flags": flags, "observed": observed}
    return doc


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


def measure(root: Path, rounds: int, select: str) -> tuple[float, dict[str, tuple[float, int]]]:
    """Best `cat` time, and best time and peak memory of the report in each format."""
    cat = f"find '{root}' -name summary.json -print0 | xargs -0 cat > /dev/null"
    base = [sys.executable, "-c", REPORT, str(root), "--runs", select, "-o", os.devnull]
    reports = {name: [*base, *args] for name, args in FORMATS.items()}
    timed([cat], shell=True)  # warm the page cache
    best_cat = float("inf")
    best = {name: (float("inf"), 0) for name in reports}
    for _ in range(rounds):
        for name, command in reports.items():
            # cat next to each format: the host's load moves both alike.
            best_cat = min(best_cat, timed([cat], shell=True)[0])
            took, rss = timed(command)
            best[name] = (min(best[name][0], took), max(best[name][1], rss))
    return best_cat, best


def bench_shape(
    scratch: Path, shape: str, runs: int, rounds: int, keep: bool, select: str
) -> list[str]:
    """Make the shape's two trees, time them, print the figures; return the summary lines."""
    peaks: dict[int, dict[str, int]] = {}
    worst: dict[int, float] = {}
    for size in (runs // 2, runs):
        root = scratch / f"{shape}-{size}"
        start = time.perf_counter()
        make_tree(root, size, shape)
        tasks, pairs = shape_of(shape, size)
        print(
            f"{shape}: {size} runs, {tasks} tasks, {len(pairs)} (model, agent) pairs, made in "
            f"{time.perf_counter() - start:.1f} s under {root}",
            flush=True,
        )
        best_cat, best = measure(root, rounds, select)
        print(f"  cat (find | xargs cat): {best_cat:.2f} s", flush=True)
        for name, (took, rss) in best.items():
            ratio = took / best_cat
            verdict = "ok" if ratio <= 2.0 else "OVER the 2.0 target"
            print(
                f"  {name:<14} {took:6.2f} s = {ratio:4.2f} × cat ({verdict}); "
                f"peak RSS {rss / 1024:4.0f} MiB",
                flush=True,
            )
        peaks[size] = {name: rss for name, (_, rss) in best.items()}
        worst[size] = max(took for took, _ in best.values()) / best_cat
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    small, large = sorted(peaks)
    growth = max(peaks[large][name] / peaks[small][name] for name in FORMATS)
    top = max(peaks[large].values()) / 1024
    return [
        f"{shape} (--runs {select}): worst ratio {worst[large]:.2f} × cat at {large} runs "
        f"({worst[small]:.2f} at {small}); peak RSS at most {top:.0f} MiB, "
        f"× {growth:.2f} at most for × 2 runs"
    ]


def main() -> None:
    """Make the trees, time both sides, print the ratios and the peak memory."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000, help="runs of the larger tree")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shape", choices=("wide", "deep"), action="append", default=None)
    parser.add_argument("--select", choices=("latest", "all"), default="latest")
    parser.add_argument("--dir", default=None, help="where to make the trees (default: temp)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder afterwards")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="bench_report.", dir=args.dir))
    lines: list[str] = []
    try:
        for shape in args.shape or ("wide", "deep"):
            lines += bench_shape(scratch, shape, args.runs, args.rounds, args.keep, args.select)
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
