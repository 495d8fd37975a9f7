"""Benchmark of the patch capture (run by hand, not a test).

Generates a large repository (by default ~50,000 files, a few hundred MB) in a temp folder, records
the baseline, applies a realistic patch (a few edits, a new binary, a deletion), then compares our
record + capture with the floor: plain `git add -A && git diff --cached --binary` in a throwaway
copy of the repository. The capture is timed as grading makes it (only the files whose stat data
changed since the baseline are hashed) and with every file hashed (`rehash`). Every figure is a
ratio to that floor, measured in the same run.

    .venv/bin/python benchmarks/bench_capture.py              # ~50,000 files, ~300 MB
    .venv/bin/python benchmarks/bench_capture.py --files 2000 --mb 20
    .venv/bin/python benchmarks/bench_capture.py --untrusted    # the slow path: chmod -R first
    .venv/bin/python benchmarks/bench_capture.py --untrusted --load 1  # and a CPU kept busy
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from interpreters.real import git
from ssegrade.internal.effects import Capture


def plain_env(home: Path) -> dict[str, str]:
    """The environment of the floor's and the generator's git."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "Bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
        "LC_ALL": "C",
    }


def run_git(cwd: Path, home: Path, *args: str) -> bytes:
    # No background `gc --auto`: it would repack the source while it is measured or copied.
    done = subprocess.run(
        ["git", "-c", "gc.auto=0", *args],
        cwd=cwd,
        env=plain_env(home),
        capture_output=True,
        check=True,
    )
    return done.stdout


def generate(root: Path, files: int, megabytes: int, rng: random.Random) -> list[Path]:
    """A source-like tree: ~100 files per folder, 5 % binary, sizes around the mean."""
    mean = max(1, megabytes * 1024 * 1024 // max(files, 1))
    pool = bytes(
        rng.choice(b"abcdefghijklmnopqrstuvwxyz_(){};= \n\t0123456789") for _ in range(1 << 20)
    )
    made: list[Path] = []
    for number in range(files):
        folder = root / f"mod{number // 2000:03d}" / f"pkg{number // 100 % 20:02d}"
        if number % 100 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        size = max(16, int(rng.expovariate(1 / mean)))
        if number % 20 == 0:
            path = folder / f"blob{number}.bin"
            data = rng.randbytes(size)
        else:
            path = folder / f"file{number}.c"
            start = rng.randrange(0, len(pool) - 1)
            chunk = (pool[start:] + pool[:start])[: size % len(pool)]
            data = f"/* {path.name} */\n".encode() + chunk
        path.write_bytes(data)
        made.append(path)
    (root / ".gitignore").write_text("*.o\nbuild/\n")
    return made


def agent_patch(root: Path, made: list[Path], rng: random.Random) -> None:
    """A realistic patch: a few edits, a new binary, a deletion, an ignored build output."""
    texts = [path for path in made if path.suffix == ".c"]
    for path in rng.sample(texts, 5):
        data = path.read_bytes()
        middle = len(data) // 2
        path.write_bytes(data[:middle] + b"\nif (len > MAX) return -1; /* fix */\n" + data[middle:])
    (root / "mod000" / "pkg00" / "fixture.bin").write_bytes(rng.randbytes(2 * 1024 * 1024))
    rng.choice(texts).unlink()
    (root / "build").mkdir()
    (root / "build" / "out.o").write_bytes(rng.randbytes(1024 * 1024))


SPIN = "while True:\n    pass\n"


@contextlib.contextmanager
def busy(count: int) -> Iterator[None]:
    """`count` processes that spin on a CPU each while the block runs, each in a session of its
    own (as another user's work on the host is: its own scheduling group), stopped after."""
    spinners = [
        subprocess.Popen([sys.executable, "-c", SPIN], start_new_session=True) for _ in range(count)
    ]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def load_average() -> str:
    """The load average over 1, 5 and 15 minutes."""
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def headers(patch: bytes) -> list[bytes]:
    """The `diff --git` lines of a patch: the files it changes."""
    return [line for line in patch.splitlines() if line.startswith(b"diff --git")]


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=50_000, help="number of files (50000)")
    parser.add_argument("--mb", type=int, default=300, help="total size in MB (300)")
    parser.add_argument("--rounds", type=int, default=3, help="repetitions; medians (3)")
    parser.add_argument("--pack", action="store_true", help="repack the source repo first")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--load", type=int, default=0, help="CPUs kept busy while the rounds run (0)"
    )
    parser.add_argument(
        "--untrusted",
        action="store_true",
        help="chmod -R the tree after the baseline: every file's stat data changed (slow path)",
    )
    options = parser.parse_args()
    rng = random.Random(options.seed)

    with tempfile.TemporaryDirectory(prefix="bench-capture-") as folder:
        top = Path(folder)
        home = top / "home"
        home.mkdir()
        source = top / "source"
        source.mkdir()
        started = time.perf_counter()
        made = generate(source, options.files, options.mb, rng)
        run_git(source, home, "init", "-q", "-b", "main")
        run_git(source, home, "add", "-A")
        run_git(source, home, "commit", "-q", "-m", "initial")
        if options.pack:
            run_git(source, home, "repack", "-adq")
        size = sum(path.stat().st_size for path in made) / 1e6
        print(
            f"tree: {len(made)} files, {size:.0f} MB, made in {time.perf_counter() - started:.1f}s"
        )

        records: list[float] = []
        baseline: git.Baseline | None = None
        for round_ in range(options.rounds):
            into = top / f"baseline{round_}"

            def record(into: Path = into) -> None:
                nonlocal baseline
                baseline = git.record_baseline(source, into).unwrap()

            records.append(timed(record))
        assert baseline is not None
        agent_patch(source, made, rng)
        if options.untrusted:
            subprocess.run(["chmod", "-R", "g+w", str(source)], check=True)

        copies: list[float] = []
        floors: list[float] = []
        captures: list[float] = []
        rehashes: list[float] = []
        proofs: list[float] = []
        floor_files: set[bytes] = set()
        our_files: set[bytes] = set()
        print(f"load average at the start of the rounds: {load_average()}; {options.load} busy")
        with busy(options.load):
            for _ in range(options.rounds):
                copy = top / "copy"

                def make_copy(copy: Path = copy) -> None:
                    shutil.copytree(source, copy, symlinks=True)

                copies.append(timed(make_copy))

                def floor(copy: Path = copy) -> None:
                    run_git(copy, home, "add", "-A")
                    patch = run_git(copy, home, "diff", "--cached", "--binary")
                    floor_files.update(headers(patch))

                floors.append(timed(floor))
                shutil.rmtree(copy)

                def ours(chosen: git.Baseline = baseline) -> None:
                    captured = git.capture(source, chosen).unwrap()
                    our_files.update(headers(captured.patch))

                captures.append(timed(ours))

                def rehash(chosen: git.Baseline = baseline) -> None:
                    git.capture(source, chosen, rehash=True).unwrap()

                rehashes.append(timed(rehash))
                got = git.capture(source, baseline).unwrap()

                def prove(chosen: git.Baseline = baseline, got: Capture = got) -> None:
                    git.prove(chosen, got.patch, got.base_tree).unwrap()

                proofs.append(timed(prove))
        print(f"load average at the end of the rounds: {load_average()}")
        assert floor_files == our_files, floor_files ^ our_files

        record_s, capture_s = statistics.median(records), statistics.median(captures)
        floor_s, copy_s = statistics.median(floors), statistics.median(copies)
        total = record_s + capture_s
        changed = len(our_files)
        print(f"patch: {changed} files changed, as in the floor's; medians of {options.rounds}")
        rows = [
            ("floor: git add -A && git diff --cached --binary", floor_s),
            ("copying the repository for the floor", copy_s),
            ("ours: record_baseline", record_s),
            ("ours: capture", capture_s),
            ("ours: capture, every file hashed", statistics.median(rehashes)),
            ("ours: fidelity proof", statistics.median(proofs)),
        ]
        for label, seconds in rows:
            print(f"  {label:<50} {seconds:7.2f}s  {seconds / floor_s:5.2f}x floor")
        print(f"  {'ratio: record + capture / floor':<50} {total / floor_s:15.2f}x")
        with_copy = total / (copy_s + floor_s)
        print(f"  {'ratio: record + capture / (copy + floor)':<50} {with_copy:15.2f}x")
        print(f"  {'ratio: capture / floor':<50} {capture_s / floor_s:15.2f}x")


if __name__ == "__main__":
    main()
