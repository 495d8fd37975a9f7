"""Benchmark of a whole evaluation (run by hand, not a test).

Generates a repository (by default 20,000 files, 200 MB) with a realistic agent patch, and a
task whose scripts do nothing (build, one PoC, functional and intent tests), on tmpfs
(`/dev/shm`) by default. In one run, against floors measured in the same run, interleaved with
what they are the floor of (medians):

- the capture alone (`interpreters.real.git.capture`) against `git add -A` into a fresh index;
- `ssegrade evaluate`, until `result.json` is written and until the command ends, against
  capture floor + 3 x `cp -a` of the grading repo, where the capture floor is `git add -A` into
  a fresh index then `git diff --cached --binary`, and one copy per check of the task (target:
  0.6x at most);
- the same on the first tree once every file's ctime moved after the baseline (`chmod -R`):
  the slow path, where no stat data can be trusted and the capture hashes every file (with
  the capture of each `--against` checkout, timed in a process of its own);
- with `--load N`, both paths again while N processes (each in a session of its own, as
  other work on the host) keep N CPUs busy: the figures of a busy host, in the same run;
- then on a tree `--scale` times larger (200,000 files, 2 GB): the same evaluation and capture,
  as ratios to the first tree's times (target: 2x at most);
- what the command waits for after `result.json` (the archive, whose bytes grow with the tree)
  against a kernel copy (`copy_file_range`) of the archive it wrote into a new file beside it:
  the least any writer of those bytes pays on this file system.

The baseline is recorded before the agent's edit with its archive cache, as `ssegrade baseline`
does. Before each evaluation the capture floor runs in the source tree, as an operator would
measure it: its `git add -A` refreshes the times of every loose object of `.git`, so the
archive cannot reuse those and writes them afresh.

Each step of an evaluation is also timed alone, in this process, to show its share: the views'
probe, the patch's layer and three views (as root), the three fresh copies they spare, and the
archive as `evaluate` writes it (a child process and its workers) with the baseline's archive
cache and without.
What the checks worked in (views or copies) is read from the build's log. The load average of
the machine is printed at the start and the end: the ratios mean little on a host busy with
other work.

    .venv/bin/python benchmarks/bench_evaluate.py                 # 20,000 files, then 200,000
    .venv/bin/python benchmarks/bench_evaluate.py --files 2000 --mb 20 --rounds 1 --scale 0
    .venv/bin/python benchmarks/bench_evaluate.py --scale 0 --against ../other-checkout
    .venv/bin/python benchmarks/bench_evaluate.py --scale 0 --load 1    # free, then a CPU busy
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_capture import agent_patch, busy, generate, load_average, plain_env, run_git, timed

from interpreters.real import archive, files, git
from interpreters.real.files import views
from interpreters.real.git.index_file import read_entries
from interpreters.real.runner import resolve_runner

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


@dataclass(frozen=True)
class Setup:
    """A generated tree with its baseline, grading repo and task."""

    top: Path
    home: Path
    source: Path
    task: Path
    baseline: git.Baseline
    repo: Path
    files: int


def prepare(top: Path, count: int, megabytes: int, seed: int) -> Setup:
    """Generate the tree, commit it, record its baseline, play the agent, copy the grading
    repo (the initial commit's tree, as a task container's would be)."""
    rng = random.Random(seed)
    home = top / "home"
    home.mkdir()
    source = top / "source"
    source.mkdir()
    made = generate(source, count, megabytes, rng)
    run_git(source, home, "init", "-q", "-b", "main")
    run_git(source, home, "add", "-A")
    run_git(source, home, "commit", "-q", "-m", "initial")
    task = top / "task"
    make_task(task)
    baseline = git.record_baseline(source, top / "baseline").unwrap()
    # As `ssegrade baseline` does: the archive each grading's source.tar.gz reuses.
    started = time.perf_counter()
    said = archive.record_archive_cache(source, baseline.path, level=archive.ARCHIVE_LEVEL).unwrap()
    print(f"  {said}, in {time.perf_counter() - started:.2f}s (with the baseline)")
    agent_patch(source, made, rng)
    repo = top / "repo"
    repo.mkdir()
    exported = subprocess.run(
        ["git", "archive", "HEAD"], cwd=source, env=plain_env(home), capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(repo)], input=exported.stdout, check=True)
    return Setup(top, home, source, task, baseline, repo, len(made))


def floor(s: Setup) -> dict[str, float]:
    """Time the floor once: `git add -A` into a fresh index, the diff, then the copies."""
    env = {**plain_env(s.home), "GIT_INDEX_FILE": str(s.top / "floor-index")}

    def git_(*args: str) -> Callable[[], object]:
        command = ["git", "-c", "gc.auto=0", *args]
        return lambda: subprocess.run(
            command, cwd=s.source, env=env, capture_output=True, check=True
        )

    add, add_cpu = timed_cpu(git_("add", "-A"))
    diff = timed(git_("diff", "--cached", "--binary"))
    os.unlink(s.top / "floor-index")
    copies = [s.top / f"floor-copy{index}" for index in range(COPIES)]

    def copy() -> None:
        for dest in copies:
            subprocess.run(["cp", "-a", str(s.repo), str(dest)], check=True)

    copying = timed(copy)
    for dest in copies:
        shutil.rmtree(dest)
    return {"add": add, "add cpu": add_cpu, "capture": add + diff, "copies": copying}


def copy_floor(path: Path) -> tuple[float, int]:
    """The seconds a kernel copy of the file `path` into a new file beside it takes (the copy
    is removed), and its size."""
    dest = path.with_name("floor-copy")
    with path.open("rb") as src, dest.open("wb") as out:
        size = os.fstat(src.fileno()).st_size

        def copy() -> None:
            offset = 0
            while offset < size:
                offset += os.copy_file_range(src.fileno(), out.fileno(), size - offset, offset)

        seconds = timed(copy)
    dest.unlink()
    return seconds, size


def evaluate(s: Setup, n: int, code: Path = TOP) -> tuple[float, float]:
    """Run one `ssegrade evaluate` of the checkout `code`: the seconds until `result.json` is
    written and until the command ends. Its results folder is left for the caller."""
    results = s.top / f"results{n}"
    command = [
        sys.executable, "-c", "from interpreters.cli.entry import main; main()", "evaluate",
        "--task", str(s.task), "--source", str(s.source), "--baseline", str(s.baseline.path),
        "--repo", str(s.repo), "--results", str(results),
    ]  # fmt: skip
    env = {**os.environ, "TMPDIR": str(s.top)}  # its copies where the floor's are
    result = results / "result.json"
    start = time.perf_counter()
    grading = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=code, env=env
    )
    graded = None
    while grading.poll() is None:
        if graded is None and result.exists():
            graded = time.perf_counter() - start
        time.sleep(0.002)
    ended = time.perf_counter() - start
    out, err = grading.communicate()
    # Its scratch folder is removed by a process of its own after it ends: let that finish
    # before anything else is timed.
    while any(s.top.glob("ssegrade-*")):
        time.sleep(0.05)
    if out.decode().strip() != "passed":
        raise SystemExit(f"evaluate did not pass: {out.decode()}{err.decode()}")
    if not (results / "source.tar.gz").is_file():
        raise SystemExit("evaluate wrote no source.tar.gz")
    return (graded if graded is not None else ended), ended


def scripts_seconds(results: Path) -> float:
    """The seconds the task's scripts took, from `checks.jsonl`."""
    lines = (results / "checks.jsonl").read_text().splitlines()
    return sum(float(json.loads(line).get("seconds", 0)) for line in lines)


def workspace(results: Path) -> str:
    """What the build worked in, as its log says."""
    for log in sorted((results / "logs").glob("*-build.log")):
        for line in log.read_text().splitlines():
            if line.startswith("workspace: "):
                return line.removeprefix("workspace: ")
    return "not said"


def make_views(s: Setup, patch: bytes) -> None:
    """The views' probe, the patch's layer and three views, as `evaluate` makes them."""
    runner = resolve_runner(None).unwrap()
    owner = (runner.uid, runner.gid)
    layers = views.probe(s.repo, s.top / "step-layers", owner)
    if isinstance(layers, str):
        raise SystemExit(f"no views here: {layers}")

    def apply(point: Path, mount: views.ViewMount) -> None:
        git.apply_patch(point, patch, run_as=owner, enter=mount.enter).unwrap()

    try:
        point = s.top / "step-point"
        point.mkdir(mode=0o755)
        layer = layers.patched(patch, point, apply)
        for index in range(COPIES):
            target = s.top / f"step-view{index}"
            target.mkdir()
            layers.view(target, layer).mounter()
    finally:
        layers.close()
        files.remove_tree(s.top / "step-layers")
        for index in range(COPIES):
            files.remove_tree(s.top / f"step-view{index}")


def timed_cpu(action: Callable[[], object]) -> tuple[float, float]:
    """The seconds `action` takes, and the CPU seconds (user + system) this process and the
    children it waited for spent meanwhile."""
    before, start = os.times(), time.perf_counter()
    action()
    wall, after = time.perf_counter() - start, os.times()
    spent = (after[i] - before[i] for i in range(4))  # user, system, children's both
    return wall, sum(spent)


def capture(s: Setup, rehash: bool = False) -> float:
    """Time one capture, as `evaluate` makes it (or with every file hashed)."""
    return timed(lambda: git.capture(s.source, s.baseline, rehash=rehash).unwrap())


TIME_CAPTURE = """
import sys, time
from pathlib import Path
from interpreters.real import git
baseline = git.load_baseline(Path(sys.argv[2])).unwrap()
start = time.perf_counter()
git.capture(Path(sys.argv[1]), baseline).unwrap()
print(time.perf_counter() - start)
"""


def capture_of(s: Setup, code: Path) -> float:
    """Time one capture as the checkout `code` makes it, in a process of its own (the time of
    the capture alone, not of the interpreter's start)."""
    done = subprocess.run(
        [sys.executable, "-c", TIME_CAPTURE, str(s.source), str(s.baseline.path)],
        cwd=code,
        env={**os.environ, "TMPDIR": str(s.top)},
        capture_output=True,
        check=True,
    )
    return float(done.stdout)


def steps(s: Setup) -> dict[str, float]:
    """Each step of an evaluation timed alone, in this process."""
    got = git.capture(s.source, s.baseline).unwrap()
    parts = {"capture": capture(s), "rehash": capture(s, rehash=True)}
    parts["proof"] = timed(lambda: git.prove(s.baseline, got.patch, got.base_tree).unwrap())
    if os.geteuid() == 0:
        parts["views"] = timed(lambda: make_views(s, got.patch))
    copies = [s.top / f"step-copy{index}" for index in range(COPIES)]

    def copy() -> None:
        for dest in copies:
            files.fresh_copy(s.repo, dest, None)
            git.apply_patch(dest, got.patch).unwrap()

    parts["copies"] = timed(copy)
    cache = s.baseline.path / archive.CACHE_NAME
    # As `evaluate` writes it: in a child process, split among workers.
    parts["archive"] = timed(
        lambda: archive.start_archive(s.source, s.top / "step.tar.gz", cache).finish(None).unwrap()
    )
    parts["whole"] = timed(
        lambda: archive.start_archive(s.source, s.top / "step.tar.gz").finish(None).unwrap()
    )
    os.unlink(s.top / "step.tar.gz")

    def cleanup() -> None:
        for dest in copies:
            files.remove_tree(dest)

    parts["cleanup"] = timed(cleanup)
    return parts


def median(rows: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(row[key] for row in rows) for key in rows[0]}


def measure(
    s: Setup, rounds: int, *, with_steps: bool, against: tuple[Path, ...] = ()
) -> tuple[dict[str, float], str]:
    """Floors and ours, interleaved round by round (a slow moment hits both alike), and the
    `evaluate` of each other checkout `against`; medians, and what the checks worked in."""
    rows: list[dict[str, float]] = []
    worked_in = ""
    for n in range(rounds):
        row = {f"floor {key}": value for key, value in floor(s).items()}
        row["capture"] = capture(s)
        for other in against:
            row[f"{other} result.json"], row[f"{other} exit"] = evaluate(s, n, other)
            shutil.rmtree(s.top / f"results{n}")
        row["result.json"], row["exit"] = evaluate(s, n)
        row["archive copy"], row["archive bytes"] = copy_floor(s.top / f"results{n}/source.tar.gz")
        row["scripts"] = scripts_seconds(s.top / f"results{n}")
        worked_in = workspace(s.top / f"results{n}")
        shutil.rmtree(s.top / f"results{n}")
        rows.append(row)
    found = median(rows)
    if with_steps:
        found.update({f"step {k}": v for k, v in median([steps(s) for _ in range(rounds)]).items()})
    return found, worked_in


def untrust(s: Setup) -> None:
    """Move every file's ctime after the baseline (`chmod -R g+w`: bytes, sizes, mtimes and
    what git records stay): no stat data of the kept index can be trusted any more."""
    subprocess.run(["chmod", "-R", "g+w", str(s.source)], check=True)


def measure_untrusted(s: Setup, rounds: int, against: tuple[Path, ...] = ()) -> dict[str, float]:
    """The slow path, after `measure` and `untrust` on the same tree: the capture hashes every
    file. Floors and ours interleaved as in `measure`, with the capture of each other checkout
    `against`; medians."""
    rows: list[dict[str, float]] = []
    for n in range(rounds):
        row = {f"floor {key}": value for key, value in floor(s).items()}
        row["capture"], row["capture cpu"] = timed_cpu(
            lambda: git.capture(s.source, s.baseline).unwrap()
        )
        row["ratio"] = row["capture"] / row["floor add"]
        for other in against:
            row[f"{other} capture"] = capture_of(s, other)
            row[f"{other} ratio"] = row[f"{other} capture"] / row["floor add"]
            row[f"{other} result.json"], row[f"{other} exit"] = evaluate(s, rounds + n, other)
            shutil.rmtree(s.top / f"results{rounds + n}")
        row["result.json"], row["exit"] = evaluate(s, rounds + n)
        shutil.rmtree(s.top / f"results{rounds + n}")
        rows.append(row)
    return median(rows)


def report_untrusted(found: dict[str, float], rounds: int, against: tuple[Path, ...] = ()) -> None:
    """Print the slow path's figures against its floors."""
    floor_s = found["floor capture"] + found["floor copies"]
    print(f"  slow path (chmod -R after the baseline: every file hashed); medians of {rounds}")
    print(f"    capture {found['capture']:.2f}s / git add -A into a fresh index "
          f"{found['floor add']:.2f}s = {found['capture'] / found['floor add']:.2f}x; "
          f"the same round's: {found['ratio']:.2f}x; CPU {found['capture cpu']:.2f}s / "
          f"{found['floor add cpu']:.2f}s")  # fmt: skip
    for other in against:
        theirs = found[f"{other} capture"]
        print(f"    {other} capture {theirs:.2f}s = {theirs / found['floor add']:.2f}x; "
              f"the same round's: {found[f'{other} ratio']:.2f}x")  # fmt: skip
    print(f"    floor: capture {found['floor capture']:.2f}s + {COPIES} x cp -a "
          f"{found['floor copies']:.2f}s = {floor_s:.2f}s")  # fmt: skip
    for key in ("result.json", "exit"):
        print(
            f"    evaluate until {key:11s} {found[key]:6.2f}s = {found[key] / floor_s:.2f}x floor"
        )
        for other in against:
            theirs = found[f"{other} {key}"]
            print(f"    {other} until {key:11s} {theirs:6.2f}s = {theirs / floor_s:.2f}x floor")


def report(
    label: str,
    s: Setup,
    found: dict[str, float],
    rounds: int,
    worked_in: str,
    against: tuple[Path, ...] = (),
) -> None:
    floor_s = found["floor capture"] + found["floor copies"]
    print(f"{label}: {s.files} files; medians of {rounds}")
    print(f"  the checks worked in {worked_in}")
    shown = {k.removeprefix("step "): v for k, v in found.items() if k.startswith("step ")}
    if shown:
        print(
            "  steps timed alone (rehash: the same capture, every file hashed; archive: with the"
            " baseline's archive cache, whole: without)"
        )
        for key, value in shown.items():
            print(f"    {key:8s} {value:7.2f}s")
        print(f"    {'scripts':8s} {found['scripts']:7.2f}s")
    print(f"  capture {found['capture']:.2f}s / git add -A into a fresh index "
          f"{found['floor add']:.2f}s = {found['capture'] / found['floor add']:.2f}x")  # fmt: skip
    print(f"  floor: capture {found['floor capture']:.2f}s + {COPIES} x cp -a "
          f"{found['floor copies']:.2f}s = {floor_s:.2f}s")  # fmt: skip
    for key in ("result.json", "exit"):
        print(f"  evaluate until {key:11s} {found[key]:6.2f}s = {found[key] / floor_s:.2f}x floor "
              "(target: 0.6x at most)")  # fmt: skip
    for other in against:
        for key in ("result.json", "exit"):
            theirs = found[f"{other} {key}"]
            print(f"  {other} until {key:11s} {theirs:6.2f}s; this checkout "
                  f"{found[key]:6.2f}s = {found[key] / theirs:.2f}x")  # fmt: skip
    wait = found["exit"] - found["result.json"]
    print(f"  after result.json the command waits {wait:.2f}s for its archive "
          f"({found['archive bytes'] / 1e6:.0f} MB): {wait / found['archive copy']:.2f}x a kernel "
          f"copy of it ({found['archive copy']:.2f}s)")  # fmt: skip


def both_paths(s: Setup, rounds: int, load: int, against: tuple[Path, ...]) -> None:
    """After the fast path measured free: with `load` CPUs busy, the fast path again; then the
    slow path free and (with `load`) busy, each headed by the load average."""
    if load:
        print(f"with {load} CPU(s) kept busy; load average {load_average()}")
        with busy(load):
            found, worked_in = measure(s, rounds, with_steps=False, against=against)
        report(f"fast path, {load} CPU(s) busy", s, found, rounds, worked_in, against)
    untrust(s)
    for busy_cpus in sorted({0, load}):
        print(f"{busy_cpus} CPU(s) kept busy; load average {load_average()}")
        with busy(busy_cpus):
            slow = measure_untrusted(s, rounds, against)
        report_untrusted(slow, rounds, against)


def trusted(baseline: git.Baseline) -> str:
    """How many entries of the baseline's kept index keep their stat data."""
    if baseline.index is None:
        return "no kept index"
    entries = list(read_entries(baseline.index.read_bytes(), len(baseline.base_tree)))
    kept = sum(1 for entry in entries if entry.ctime)
    return f"{kept} of {len(entries)} entries of the kept index keep their stat data"


def main() -> None:
    """Measure on the tree, then on one `--scale` times larger; print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=20_000, help="number of files (20000)")
    parser.add_argument("--mb", type=int, default=200, help="total size in MB (200)")
    parser.add_argument("--rounds", type=int, default=3, help="repetitions; medians (3)")
    parser.add_argument(
        "--scale", type=int, default=10, help="the larger tree's factor (10; 0: none)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--against",
        type=Path,
        action="append",
        default=[],
        help="another checkout whose evaluate runs in the same rounds (repeatable)",
    )
    parser.add_argument("--where", type=Path, default=Path("/dev/shm"), help="(/dev/shm)")
    parser.add_argument(
        "--load", type=int, default=0, help="then again with this many CPUs kept busy (0)"
    )
    options = parser.parse_args()
    print(f"load average (1/5/15 min) at the start: {load_average()}; {os.cpu_count()} CPUs")
    sizes = [(options.files, options.mb)]
    if options.scale > 1:
        sizes.append((options.files * options.scale, options.mb * options.scale))
    found: list[dict[str, float]] = []
    for number, (count, megabytes) in enumerate(sizes):
        with tempfile.TemporaryDirectory(prefix="bench-evaluate-", dir=options.where) as folder:
            top = Path(folder)
            top.chmod(0o755)
            started = time.perf_counter()
            setup = prepare(top, count, megabytes, options.seed)
            print(f"{count} files, {megabytes} MB made in {time.perf_counter() - started:.0f}s; "
                  f"{trusted(setup.baseline)}")  # fmt: skip
            measured, worked_in = measure(
                setup, options.rounds, with_steps=number == 0, against=tuple(options.against)
            )
            found.append(measured)
            report(
                f"{options.where}, {megabytes} MB",
                setup,
                measured,
                options.rounds,
                worked_in,
                tuple(options.against),
            )
            if number == 0:
                both_paths(setup, options.rounds, options.load, tuple(options.against))
    if len(found) == 2:
        small, large = found
        print(f"{options.scale}x larger tree against the first (evaluate's target: 2x at most):")
        for key in ("capture", "result.json", "exit", "floor capture", "floor copies"):
            ratio = large[key] / small[key]
            print(f"  {key:14s} {large[key]:7.2f}s / {small[key]:6.2f}s = {ratio:.2f}x")
        mb = large["archive bytes"] / 1e6, small["archive bytes"] / 1e6
        print(f"  {'archive':14s} {mb[0]:6.0f}MB / {mb[1]:5.0f}MB = {mb[0] / mb[1]:.2f}x")
    print(f"load average (1/5/15 min) at the end: {load_average()}")


if __name__ == "__main__":
    main()
