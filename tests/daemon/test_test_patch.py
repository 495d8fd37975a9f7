"""`ssegrade test-patch` end to end: the bundled example task behind a real daemon.

The agent's tree is `examples/tlv/project` set up as `examples/demo.sh` does (a git repository
with one commit, beside a copy of `examples/tlv/task`); the preview runs on it through the
agent-facing socket at levels 0 and 2, before and after the reference fix, and a long failing
log is written whole to `--log-dir`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssegrade.preview import INTERNAL_FAILURE
from tests.support.daemons import TOP, RunningDaemon, running_daemon
from tests.support.realtask import git, make_task

pytestmark = pytest.mark.slow

EXAMPLE = TOP / "examples" / "tlv"


@pytest.fixture
def tlv() -> Iterator[Path]:
    """A copy of the example task and of its project, the project committed once."""
    with tempfile.TemporaryDirectory(prefix="ssegrade-test-patch-") as folder:
        root = Path(folder)
        root.chmod(0o755)
        shutil.copytree(EXAMPLE / "task", root / "task")
        shutil.copytree(
            EXAMPLE / "project",
            root / "project",
            ignore=shutil.ignore_patterns("__pycache__", "build"),
        )
        git(root / "project", "init", "-q", "-b", "main")
        git(root / "project", "add", "-A")
        git(root / "project", "commit", "-q", "-m", "Initial commit")
        yield root


def run_test_patch(daemon: RunningDaemon, log_dir: Path) -> subprocess.CompletedProcess[str]:
    """Run `ssegrade test-patch` against the daemon's agent-facing socket."""
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from interpreters.cli.main import main; main()",
            "test-patch",
            "--socket",
            str(daemon.agent),
            "--log-dir",
            str(log_dir),
        ],
        cwd=TOP,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_level_0_unfixed_then_fixed(tlv: Path) -> None:
    with running_daemon(tlv / "task", tlv / "project", tlv / "results", level="0") as daemon:
        before = run_test_patch(daemon, tlv / "logs")
        git(tlv / "project", "apply", str(tlv / "task" / "fix.diff"))
        after = run_test_patch(daemon, tlv / "logs")
    assert before.returncode == 1, before.stderr
    sections = before.stdout.rstrip("\n").split("\n\n")
    assert sections[0] == (
        "test_patch result: FAILED. At least one proof of concept still triggers the "
        "vulnerability. Please reassess whether your patch fixes it."
    )
    assert sections[1] == (
        "Checks:\n"
        "- build: passed\n"
        "- PoCs: FAILED (passed 0 of 2; stopped at the first that still triggers the bug)\n"
        "- intent tests: FAILED\n"
        "- functional tests: passed"
    )
    assert sections[2].startswith("Full log (PoCs):\n")
    assert "IndexError" in before.stdout
    assert "run.sh: CRASH" in before.stdout
    assert after.returncode == 0, after.stdout + after.stderr
    assert after.stdout == (
        "test_patch result: every check passed.\n\n"
        "Checks:\n"
        "- build: passed\n"
        "- PoCs: passed (2 of 2)\n"
        "- intent tests: passed\n"
        "- functional tests: not run (covered by the intent tests)\n"
    )
    assert after.stderr == ""
    assert not (tlv / "results" / "result.json").exists()  # a preview is never a grade


def test_level_2_runs_build_and_functional_tests_only(tlv: Path) -> None:
    with running_daemon(tlv / "task", tlv / "project", tlv / "results", level="2") as daemon:
        done = run_test_patch(daemon, tlv / "logs")
        log = daemon.output()
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == (
        "test_patch result: every check that ran passed.\n\n"
        "Checks:\n"
        "- build: passed\n"
        "- functional tests: passed\n\n"
        "Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is "
        "reported about them. Without the PoCs, this result does not show whether the "
        "vulnerability is fixed.\n"
    )
    assert "run_poc" not in log
    assert "intent_test" not in log


def test_a_long_log_is_written_whole_to_the_log_folder(tmp_path: Path) -> None:
    made = make_task(tmp_path)
    made.script("build.sh", '#!/bin/sh\nfor i in $(seq 12000); do echo "word$i"; done\nexit 2\n')
    with running_daemon(made.task, made.source, made.results, level="3") as daemon:
        done = run_test_patch(daemon, tmp_path / "logs")
    assert done.returncode == 1
    assert done.stdout.startswith("test_patch result: FAILED. The project does not build")
    assert "Truncated log (build):\n" in done.stdout
    saved = sorted((tmp_path / "logs").iterdir())
    assert len(saved) == 1
    assert saved[0].name.startswith("test_patch-build-")
    assert done.stdout.rstrip("\n").endswith(f"Full log available at {saved[0]}")
    words = saved[0].read_text().split()
    assert words[0] == "word1"
    assert words[-1] == "word12000"


def test_unreachable_daemon_is_an_internal_failure(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from interpreters.cli.main import main; main()",
            "test-patch",
            "--socket",
            str(tmp_path / "none.sock"),
        ],
        cwd=TOP,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout == INTERNAL_FAILURE + "\n"
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("test-patch: GET /capabilities: cannot reach the daemon at")


# ---------------------------------------------------------------------------- the log folder

_SPILL = """
import sys
from pathlib import Path
from interpreters.daemon.client import DaemonClient
from interpreters.daemon.remote import PreviewInterpreter
from ssegrade.preview import SpillLog
given = Path(sys.argv[1]) if len(sys.argv) > 1 else None
interpreter = PreviewInterpreter(DaemonClient("/nowhere.sock"), given)
for text in ("first log", "second log"):
    print(interpreter(SpillLog("test_patch-build", text)))
"""


def spill(tmp: Path, *given: Path) -> list[str]:
    """Spill two logs in a fresh process whose temporary folder is `tmp`; answer the results."""
    done = subprocess.run(
        [sys.executable, "-c", _SPILL, *map(str, given)],
        cwd=TOP,
        env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.splitlines()


def test_the_default_log_folder_is_new_private_and_unguessable(tmp_path: Path) -> None:
    # Another user planted the folder name the command once used, as a symlink to theirs.
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (tmp_path / f"ssegrade-test-patch-{os.getuid()}").symlink_to(theirs)
    first, second = spill(tmp_path)
    assert first.startswith("<Success: ")
    paths = [Path(line.removeprefix("<Success: ").removesuffix(">")) for line in (first, second)]
    folder = paths[0].parent
    assert paths[1].parent == folder  # one folder per run
    assert folder.parent == tmp_path
    assert folder.name.startswith("ssegrade-test-patch-")
    assert not folder.is_symlink()
    assert folder.stat().st_mode & 0o777 == 0o700
    assert [p.read_text() for p in paths] == ["first log", "second log"]
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in paths)
    assert list(theirs.iterdir()) == []
    again = Path(spill(tmp_path)[0].removeprefix("<Success: ").removesuffix(">")).parent
    assert again != folder  # a new folder each run: nothing to plant in advance


def test_a_symlinked_log_folder_is_never_followed(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (tmp_path / "logs").symlink_to(target)
    results = spill(tmp_path, tmp_path / "logs")
    assert all(line.startswith("<Failure: ") for line in results), results
    assert "not a folder (or a symlink)" in results[0]
    assert list(target.iterdir()) == []


def test_a_log_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (a folder owned by another user)")
    other = tmp_path / "other"
    other.mkdir(mode=0o777)
    os.chown(other, 65534, 65534)
    results = spill(tmp_path, other)
    assert all(line.startswith("<Failure: ") for line in results), results
    assert "belongs to another user" in results[0]
    assert list(other.iterdir()) == []
