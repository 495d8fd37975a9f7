"""Benchmark of the patch guard on its labelled set (run by hand, not a test).

Takes each case of `tests/guard_cases/` (its patch from a real git repository, as the tests
take it) and prints the guard's recall on the cheats (their kind raised in a flag that counts,
for a task with every check), its false-positive rate on the genuine fixes (any flag, and a
flag that counts against the run), and its time per patch against a floor measured in the same
run: `git apply --stat` of the same patch. Then it grades the bundled examples for real with
their reference fixes and prints the guard's share of each grading's time, the pinned re-runs
of the PoCs included (an upper bound: from the last check's end to the guard's line, so the
archive and the writing of `result.json` are in it too). Last, the guard examines a generated
patch of `--mb` MiB (C files of added lines) in a child process, and its peak memory is
printed beside the patch's size.

    .venv/bin/python benchmarks/bench_guard.py
    .venv/bin/python benchmarks/bench_guard.py --mb 100 --runs 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ssegrade import Task
from ssegrade.guard import guard
from ssegrade.internal.task import Files, Scripts
from tests.support.exampletasks import lay_out
from tests.support.guardkit import CASES, case_facts, case_patch, load_case

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


def _graded(name: str, fix: str, work: Path) -> tuple[float, float, float, str]:
    """Grade an example with its reference fix: (whole seconds, the guard's seconds at most,
    the re-runs' seconds, the grade's status), from the progress lines' arrival times."""
    work.mkdir(mode=0o755, parents=True)
    example = lay_out(work, name, fix)
    subprocess.run(["git", "-C", str(example.source), "apply", str(example.fix)], check=True)
    argv = ["evaluate", "--task", str(example.task), "--source", str(example.source)]
    argv += ["--baseline", str(example.baseline), "--results", str(work / "results")]
    code = "from interpreters.cli.entry import main; main()"
    start = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert child.stderr is not None
    checked = guarded = start
    reruns = 0.0
    for line in child.stderr:
        now = time.monotonic()
        if line.startswith(("build:", "poc ", "function_test:", "intent_test:")):
            checked = now
        elif line.startswith("guard re-run of"):
            reruns += float(line.rsplit("(", 1)[1].split("s", 1)[0])
        elif line.startswith("guard:"):
            guarded = now
    child.wait()
    whole = time.monotonic() - start
    status = json.loads((work / "results" / "result.json").read_bytes())["patch_result"]["status"]
    return whole, max(guarded - checked, 0.0), reruns, status


def graded(work: Path) -> None:
    """The guard's share of a real grading's time on the bundled examples."""
    for name, fix in EXAMPLES:
        whole, ours, reruns, status = _graded(name, fix, work / name)
        print(
            f"{name} ({status}): grading {whole:.2f} s, guard at most {ours:.2f} s "
            f"({ours / whole:.1%}; its re-runs {reruns:.2f} s)"
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
        Path(tmp).chmod(0o755)  # the runner enters the examples' folders
        labelled(args.runs, Path(tmp))
        graded(Path(tmp) / "graded")
        big(args.mb, Path(tmp))


if __name__ == "__main__":
    main()
