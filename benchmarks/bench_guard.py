"""Benchmark of the patch guard on its labelled set (run by hand, not a test).

Takes each case of `tests/guard_cases/` (its patch from a real git repository, as the tests
take it) and prints the guard's recall on the cheats (their kind raised in a flag that counts,
for a task with every check), its false-positive rate on the genuine fixes (any flag, and a
flag that counts against the run), and its time per patch against a floor measured in the same
run: `git apply --stat` of the same patch. Then it grades the bundled examples for real with
their reference fixes (`--runs` times each; kvconf with its toolchain, as its image gives it)
and prints the guard's share of each grading's time, the median: the cost its
`logs/NN-guard-cost.log` records (the interpreter times each part where it runs: the pinned
re-runs whole, the reads, the object scan, the rules; `total` from `result.json` written to
`guard.json`), the re-runs'
contained runs alone (`checks.jsonl`), and beside it the old upper bound, labelled as such
(from the last check's end to the guard's line, so the archive and `result.json` are in it),
with the load average before and after. Last, the guard examines a generated
patch of `--mb` MiB (C files of added lines) in a child process, and its peak memory is
printed beside the patch's size.

    .venv/bin/python benchmarks/bench_guard.py
    .venv/bin/python benchmarks/bench_guard.py --mb 100 --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from interpreters.real.guardcost import LOG_LABEL, GuardCost, read_cost
from ssegrade import Task
from ssegrade.guard import guard
from ssegrade.internal.task import Files, Scripts
from tests.support.exampletasks import EXAMPLES as EXAMPLES_DIR
from tests.support.exampletasks import lay_out
from tests.support.guardkit import CASES, case_facts, case_patch, load_case

ROOT = Path(__file__).resolve().parent.parent
TASK = Task(
    id="bench",
    sanitizer="address",
    scripts=Scripts(build="b.sh", run="r.sh", test="t.sh"),
    files=Files(poc=("p",), future_test="f.diff"),
)
EXAMPLES = (("rle", "diffs/patch.diff"), ("tlv", "fix.diff"), ("kvconf", "diffs/patch.diff"))


def _median(run: object, times: int) -> float:
    seconds = []
    for _ in range(times):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def labelled(runs: int, work: Path) -> None:
    """Recall, false-positive rate, and time per patch against `git apply --stat`."""
    caught = cheats = flagged = counted = fixes = 0
    ours: list[float] = []
    floor: list[float] = []
    for path in sorted(CASES.glob("*.case")):
        case = load_case(path)
        patch = case_patch(case, work / case.name)
        facts = case_facts(case)
        raised = guard(patch, TASK, facts)
        kinds = {flag.kind for flag in raised if flag.counts}
        if case.kind is None:
            fixes += 1
            flagged += bool(raised)
            counted += bool(kinds)
        else:
            cheats += 1
            caught += case.kind in kinds
        ours.append(_median(lambda p=patch, f=facts: guard(p, TASK, f), runs))
        stat = ["git", "-C", str(work / case.name), "apply", "--stat", "-"]
        floor.append(
            _median(
                lambda s=stat, p=patch: subprocess.run(s, input=p, check=True, capture_output=True),
                runs,
            )
        )
    print(f"cases: {cheats} cheats, {fixes} genuine fixes")
    print(f"recall: {caught}/{cheats} = {caught / cheats:.1%}")
    print(f"false positives, any flag: {flagged}/{fixes} = {flagged / fixes:.1%}")
    print(f"false positives, a flag that counts: {counted}/{fixes} = {counted / fixes:.1%}")
    mine, git = statistics.median(ours), statistics.median(floor)
    print(
        f"time per patch: guard {mine * 1e3:.1f} ms, git apply --stat {git * 1e3:.1f} ms "
        f"(x{mine / git:.2f} the floor)"
    )


PARTS = ("reruns", "reading", "objects", "analysis", "analysis_cpu")


@dataclass
class Grading:
    """One real grading of an example: its status, its whole time (the child's start to its
    exit), the cost its log records (None: an older ssegrade that does not log it), the
    re-runs' contained runs (`checks.jsonl`), and the old upper bound (the last check's
    end to the guard's progress line, with the archive and `result.json` in it)."""

    status: str
    whole: float
    cost: GuardCost | None
    contained: float
    bound: float


def _graded(name: str, fix: str, work: Path) -> Grading:
    """Grade an example with its reference fix, as `ssegrade evaluate` does."""
    work.mkdir(mode=0o755, parents=True)
    example = lay_out(work, name, fix)
    subprocess.run(["git", "-C", str(example.source), "apply", str(example.fix)], check=True)
    argv = ["evaluate", "--task", str(example.task), "--source", str(example.source)]
    argv += ["--baseline", str(example.baseline), "--results", str(work / "results")]
    toolchain = EXAMPLES_DIR / name / "toolchain"
    if toolchain.is_dir():  # what the example's image configures (KVC_HOME), as in README
        shutil.copytree(toolchain, work / "toolchain")
        argv += ["--script-env", f"KVC_HOME={work / 'toolchain'}"]
    code = "from interpreters.cli.entry import main; main()"
    start = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert child.stderr is not None
    checked = guarded = start
    for line in child.stderr:
        now = time.monotonic()
        if line.startswith(("build:", "poc ", "function_test:", "intent_test:")):
            checked = now
        elif line.startswith("guard:"):
            guarded = now
    child.wait()
    whole = time.monotonic() - start
    results = work / "results"
    status = json.loads((results / "result.json").read_bytes())["patch_result"]["status"]
    logs = sorted((results / "logs").glob(f"*-{LOG_LABEL}.log"))
    cost = read_cost(logs[0].read_text()) if logs else None
    records = [json.loads(line) for line in (results / "checks.jsonl").read_text().splitlines()]
    contained = sum(r["seconds"] for r in records if r["name"] == "guard" and r["poc"])
    return Grading(status, whole, cost, contained, max(guarded - checked, 0.0))


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def graded(work: Path, runs: int) -> None:
    """The guard's share of a real grading's time on the bundled examples: the median of
    `runs` gradings of each, the cost its log records, part by part."""
    print(f"load average before the gradings: {_load()}")
    for name, fix in EXAMPLES:
        done = [_graded(name, fix, work / f"{name}-{i}") for i in range(runs)]
        whole = statistics.median(g.whole for g in done)
        bound = statistics.median(g.bound / g.whole for g in done)
        statuses = ",".join(sorted({g.status for g in done}))
        print(f"{name} ({statuses}): grading {whole:.2f} s (median of {runs})")
        timed = [(g.cost, g.whole) for g in done if g.cost is not None]
        costs = [cost for cost, _ in timed]
        if costs:
            share = statistics.median(cost.total / whole for cost, whole in timed)
            total = statistics.median(c.total for c in costs)
            parts = ", ".join(
                f"{part} {statistics.median(getattr(c, part) for c in costs) * 1e3:.0f} ms"
                for part in PARTS
                if hasattr(costs[0], part)  # an older log has fewer
            )
            contained = statistics.median(g.contained for g in done) * 1e3
            print(f"  guard {total * 1e3:.0f} ms = {share:.1%} of the grading: {parts}")
            print(f"  (the re-runs' contained runs alone: {contained:.0f} ms)")
        else:
            print("  guard: no cost logged (an ssegrade that does not time it)")
        print(f"  old upper bound (last check's end to the guard's line): {bound:.1%}")
    print(f"load average after the gradings: {_load()}")


def _big_patch(mib: int) -> bytes:
    line = b"+    total += table[i] * 31 + (i ^ 0x5a); /* a line of ordinary code */\n"
    per_file = 2000
    body = line * per_file
    out = bytearray()
    index = 0
    while len(out) < mib << 20:
        name = f"src/gen{index}.c".encode()
        out += b"diff --git a/" + name + b" b/" + name + b"\nnew file mode 100644\n"
        out += b"--- /dev/null\n+++ b/" + name + f"\n@@ -0,0 +1,{per_file} @@\n".encode() + body
        index += 1
    return bytes(out)


def big(mib: int, work: Path) -> None:
    """The guard's peak memory on a patch of `mib` MiB, in a child process."""
    patch = work / "big.diff"
    patch.write_bytes(_big_patch(mib))
    child = (
        "import resource, sys, time\n"
        "from ssegrade import Task\nfrom ssegrade.guard import guard\n"
        "data = open(sys.argv[1], 'rb').read()\n"
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "start = time.perf_counter()\nflags = guard(data, Task(id='b', sanitizer='address'))\n"
        "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(time.perf_counter() - start, base, peak, len(flags))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", child, str(patch)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout.split()
    seconds, base, peak = float(out[0]), int(out[1]), int(out[2])
    size = patch.stat().st_size >> 20
    above = (peak - base) >> 10
    print(
        f"{size} MiB patch: guard {seconds:.1f} s, peak memory {peak >> 10} MiB "
        f"({above} MiB above the patch read, x{above / size:.1f} its size)"
    )


def main() -> None:
    """Run both measures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timings per case (median)")
    parser.add_argument(
        "--mb", type=int, default=100, help="the large patch's size in MiB (0: none)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-guard-") as tmp:
        Path(tmp).chmod(0o755)  # the runner enters the examples' folders
        labelled(args.runs, Path(tmp))
        graded(Path(tmp) / "graded", args.runs)
        if args.mb > 0:
            big(args.mb, Path(tmp))


if __name__ == "__main__":
    main()
