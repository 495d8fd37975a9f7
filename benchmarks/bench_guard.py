"""Benchmark of the patch guard on its labelled set (run by hand, not a test).

Takes each case of `tests/guard_cases/` (its patch from a real git repository, as the tests
take it) and prints the guard's recall on the cheats, its false-positive rate on the genuine
fixes, and its time per patch against a floor measured in the same run: `git apply --stat` of
the same patch. Then the guard examines a generated patch of `--mb` MiB (C files of added
lines) in a child process, and its peak memory is printed beside the patch's size.

    .venv/bin/python benchmarks/bench_guard.py
    .venv/bin/python benchmarks/bench_guard.py --mb 100 --runs 5
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ssegrade import Task
from ssegrade.guard import guard
from tests.guardkit import CASES, case_facts, case_patch, load_case

TASK = Task(id="bench", sanitizer="address")


def _median(run: object, times: int) -> float:
    seconds = []
    for _ in range(times):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def labelled(runs: int, work: Path) -> None:
    """Recall, false-positive rate, and time per patch against `git apply --stat`."""
    caught = cheats = flagged = fixes = 0
    ours: list[float] = []
    floor: list[float] = []
    for path in sorted(CASES.glob("*.case")):
        case = load_case(path)
        patch = case_patch(case, work / case.name)
        facts = case_facts(case)
        kinds = {flag.kind for flag in guard(patch, TASK, facts)}
        if case.kind is None:
            fixes += 1
            flagged += bool(kinds)
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
    print(f"false positives: {flagged}/{fixes} = {flagged / fixes:.1%}")
    mine, git = statistics.median(ours), statistics.median(floor)
    print(
        f"time per patch: guard {mine * 1e3:.1f} ms, git apply --stat {git * 1e3:.1f} ms "
        f"(x{mine / git:.2f} the floor)"
    )


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
        cwd=Path(__file__).resolve().parent.parent,
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
    parser.add_argument("--mb", type=int, default=100, help="the large patch's size in MiB")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-guard-") as tmp:
        labelled(args.runs, Path(tmp))
        big(args.mb, Path(tmp))


if __name__ == "__main__":
    main()
