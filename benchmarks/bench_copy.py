"""How fast is `fresh_copy` next to `cp -a`? Run by hand, not a test.

    .venv/bin/python benchmarks/bench_copy.py [--files 50000] [--mb 300] [--rounds 3] [--dir D]

Makes a tree of `--files` files (`--mb` MiB in all, sizes skewed like a source tree: many small
files, a few large ones, nested folders, some symlinks and executables) in a scratch folder, then
copies it with `cp -a` and with `fresh_copy`, `--rounds` times each (alternating which goes
first, page cache warm, dirty pages flushed before each timing), and prints the best and the
median time of each and their ratios. The copies land on the same filesystem as the tree
(`--dir`, default: the system temp folder) and are only removed at the end: on filesystems
mounted with `discard`, removing a tree is slow and would slow down the next timing.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from interpreters.real.files import fresh_copy, remove_tree


def make_tree(root: Path, files: int, megabytes: int, seed: int = 7) -> int:
    """Write a source-like tree under `root`; return the number of bytes written."""
    rng = random.Random(seed)
    # Pareto-like sizes, scaled so that they add up to the requested total.
    weights = [rng.paretovariate(1.2) for _ in range(files)]
    scale = megabytes * 1024 * 1024 / sum(weights)
    sizes = [max(0, int(w * scale)) for w in weights]
    payload = rng.randbytes(1 << 20) * 4
    dirs = [root]
    written = 0
    for index, size in enumerate(sizes):
        if index % 12 == 0:
            parent = rng.choice(dirs[-200:])
            new = parent / f"d{len(dirs)}"
            new.mkdir()
            dirs.append(new)
        folder = rng.choice(dirs[-50:])
        path = folder / f"f{index}.c"
        with open(path, "wb") as out:
            left = size
            while left:
                chunk = payload[: min(left, len(payload))]
                out.write(chunk)
                left -= len(chunk)
        written += size
        if index % 40 == 0:
            path.chmod(0o755)
        if index % 500 == 0:
            (folder / f"link{index}").symlink_to(path.name)
    return written


def timed(action: Callable[[], object]) -> float:
    """Seconds `action()` takes."""
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    """Parse options, build the tree, race the two copies, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--mb", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--owner", action="store_true", help="chown the copy to nobody (root)")
    args = parser.parse_args()

    owner = (65534, 65534) if args.owner else None
    scratch = Path(tempfile.mkdtemp(prefix="bench_copy.", dir=args.dir))
    try:
        tree = scratch / "tree"
        tree.mkdir()
        start = time.perf_counter()
        size = make_tree(tree, args.files, args.mb)
        print(
            f"tree: {args.files} files, {size / 2**20:.0f} MiB "
            f"(made in {time.perf_counter() - start:.1f} s) in {scratch}"
        )
        subprocess.run(["sync"], check=True)
        cp_times: list[float] = []
        ours: list[float] = []
        for round_ in range(args.rounds):
            a, b = scratch / f"cp{round_}", scratch / f"fc{round_}"
            cp_cmd = ["cp", "-a", str(tree), str(a)]
            # Alternate which goes first, and flush dirty pages before each timing: the
            # writeback of one copy must not be billed to the other.
            for turn in (0, 1) if round_ % 2 == 0 else (1, 0):
                subprocess.run(["sync"], check=True)
                if turn == 0:
                    cp_times.append(timed(partial(subprocess.run, cp_cmd, check=True)))
                else:
                    ours.append(timed(partial(fresh_copy, tree, b, owner)))
            print(f"round {round_ + 1}: cp -a {cp_times[-1]:.3f} s, fresh_copy {ours[-1]:.3f} s")
        best_cp, best_ours = min(cp_times), min(ours)
        mid_cp, mid_ours = statistics.median(cp_times), statistics.median(ours)
        print(f"best:   cp -a {best_cp:.3f} s, fresh_copy {best_ours:.3f} s")
        print(f"median: cp -a {mid_cp:.3f} s, fresh_copy {mid_ours:.3f} s")
        print(
            f"ratio fresh_copy / cp -a = {best_ours / best_cp:.2f} (best), "
            f"{mid_ours / mid_cp:.2f} (median)"
        )
    finally:
        remove_tree(scratch)
        if os.path.exists(scratch):
            print(f"left behind: {scratch}", file=sys.stderr)


if __name__ == "__main__":
    main()
