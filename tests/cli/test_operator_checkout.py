"""The suite leaves no file where it runs: a property test run from a folder writes none of
Hypothesis's examples or caches there (by default `.hypothesis/` in the current folder, which
is the checkout when the suite runs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent.parent
PROPERTY_TEST = CHECKOUT / "tests" / "batch" / "test_operator_attempts.py"


def test_a_property_test_leaves_nothing_in_the_folder_it_runs_from(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_STORAGE_DIRECTORY"}
    env["PYTHONPATH"] = str(CHECKOUT)
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
            "--rootdir", str(CHECKOUT), str(PROPERTY_TEST),
            "-k", "record_only_grows",
        ],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []
