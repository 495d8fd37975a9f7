"""What does containment add to a script run? Run by hand, not a test.

    .venv/bin/python benchmarks/bench_containment.py [--runs 200]

Runs `/bin/true` `--runs` times through `run_script` with the best containment this process
can give (as root, `full`: PID, mount and network namespaces, a fresh /tmp and /dev/shm, a
cgroup) and as many times with `weak` (own session and process group, the marker sweep),
interleaved, in the same run; prints the median and mean milliseconds per run of each, the
milliseconds containment adds per script, and the floor: `/bin/true` started by a bare `Popen`.
Then each scan of the process table the weaker containment and the account's end make
(`processes`, `children_of`, `account_processes`), timed alone, with the number of processes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from interpreters.real.files import remove_tree
from interpreters.real.runner import ContainmentPolicy, probe, resolve_runner, run_script
from interpreters.real.runner.policy import Mode
from interpreters.real.runner.processes import account_processes, children_of, processes


def scans(runner_uid: int, runs: int) -> None:
    """Time each scan of the process table alone; print medians and best runs."""
    me = os.getpid()
    timed: dict[str, Callable[[], object]] = {
        "processes()": processes,
        "children_of(self)": lambda: children_of(me),
        "account_processes": lambda: account_processes(runner_uid),
    }
    print(f"scans of the process table ({len(processes())} processes), {runs} each:")
    for name, scan in timed.items():
        values: list[float] = []
        for _ in range(runs):
            start = time.perf_counter()
            scan()
            values.append((time.perf_counter() - start) * 1000)
        median, best = statistics.median(values), min(values)
        print(f"  {name:18} median {median:6.2f} ms   best {best:6.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    runs = parser.parse_args().runs
    runner = resolve_runner(None).unwrap()
    print(probe().describe() or "full containment available")
    work = Path(tempfile.mkdtemp(prefix="ssegrade-bench-"))
    work.chmod(0o755)
    timings: dict[str, list[float]] = {"contained": [], "weaker": [], "Popen floor": []}
    try:
        for index in range(runs):
            modes: tuple[tuple[str, Mode | None], ...] = (("contained", None), ("weaker", "weak"))
            for name, mode in modes:
                start = time.perf_counter()
                result = run_script(
                    runner,
                    ["/bin/true"],
                    work,
                    home=work / "home",
                    limit=30,
                    log_path=work / "logs" / f"{name}-{index}.log",
                    label=name,
                    spool=work,
                    containment=ContainmentPolicy(mode),
                )
                timings[name].append((time.perf_counter() - start) * 1000)
                assert result.passed, result.stderr
            start = time.perf_counter()
            subprocess.run(["/bin/true"], check=True)
            timings["Popen floor"].append((time.perf_counter() - start) * 1000)
    finally:
        remove_tree(work)
    for name, values in timings.items():
        median, mean = statistics.median(values), statistics.fmean(values)
        print(
            f"{name:12} median {median:6.2f} ms   mean {mean:6.2f} ms   best {min(values):6.2f} ms"
        )
    contained, weaker = timings["contained"], timings["weaker"]
    added = statistics.median(contained) - statistics.median(weaker)
    best = min(contained) - min(weaker)
    print(f"containment adds {added:.2f} ms per script (medians), {best:.2f} ms (best runs)")
    print("target: <= 10 ms added per script")
    scans(runner.uid, runs)


if __name__ == "__main__":
    main()
