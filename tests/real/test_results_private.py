"""Results are private: what one grading wrote cannot be read by the scripts of another, and a
results folder someone else could write to is refused.

The first test is the attack as it was found: a task's build script reads an earlier run's
`final.patch` in the default results root and applies it. It runs in a mount namespace of its
own, with a fresh `/var/lib`, so that the default root is this test's alone.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from returns.result import Failure, Success

from interpreters.daemon.client import DaemonClient
from interpreters.daemon.remote import PreviewInterpreter
from interpreters.real.runner import resolve_runner
from ssegrade.preview import SpillLog
from tests.support.realtask import fix_to, make_task, ssegrade

pytestmark = pytest.mark.slow

ROOT = os.geteuid() == 0
RUNNER = resolve_runner(None).unwrap()

# Reads the final.patch of an earlier grading in the default results root and, when it holds
# the fix, applies it: a grading that must fail then passes.
THIEF = """#!/bin/sh
if grep -qs 'VALUE=fixed' /var/lib/ssebench/results/final.patch; then
    echo "VALUE=fixed" > lib.sh
    echo "stole the fix"
fi
. ./lib.sh
echo "$VALUE" > out.txt
"""


@pytest.fixture
def world() -> Iterator[Path]:
    """A folder the runner account can reach (a task and its project for scripts to read)."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-private-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.mark.skipif(not ROOT or shutil.which("unshare") is None, reason="needs root and unshare")
def test_a_build_script_cannot_read_an_earlier_runs_patch_in_the_default_results_root(
    world: Path, tmp_path: Path
) -> None:
    made = make_task(world / "t")
    made.script("build.sh", THIEF)
    (world / "fix.patch").write_text(fix_to("fixed"))
    evaluate = [sys.executable, "-c", "from interpreters.cli.entry import main; main()", "evaluate"]
    evaluate += ["--task", str(made.task), "--repo", str(made.source)]
    first = [*evaluate, "--patch", str(world / "fix.patch")]  # into the default results root
    (world / "empty.patch").write_bytes(b"")
    second = [*evaluate, "--patch", str(world / "empty.patch"), "--results", str(tmp_path / "r2")]
    script = "\n".join(
        [
            "mount -t tmpfs -o mode=755 ssegrade-test /var/lib || exit 97",
            shlex.join(first) + " || exit 98",
            "stat -c '%a %U %n' /var/lib/ssebench /var/lib/ssebench/results",
            shlex.join(second) + " 2>&1",
        ]
    )
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "passed"
    (build_log,) = (tmp_path / "r2" / "logs").glob("*-build.log")
    assert "stole the fix" not in build_log.read_text()
    assert lines[-1] == "failed: PoC failed: " + str(made.task / "pocs" / "poc1.bin")
    assert lines[1:3] == ["700 root /var/lib/ssebench", "700 root /var/lib/ssebench/results"]


def test_every_folder_a_grading_makes_is_private_and_nothing_in_it_writable_by_others(
    world: Path, tmp_path: Path
) -> None:
    made = make_task(world / "t")
    (world / "fix.patch").write_text(fix_to("fixed"))
    results = tmp_path / "new" / "deeper" / "r"
    done = ssegrade(
        "evaluate",
        "--task",
        str(made.task),
        "--repo",
        str(made.source),
        "--patch",
        str(world / "fix.patch"),
        "--results",
        str(results),
    )
    assert done.returncode == 0, done.stderr
    for folder in (tmp_path / "new", tmp_path / "new" / "deeper", results):
        assert mode(folder) == 0o700, folder
    for here, dirs, names in os.walk(results):
        for name in dirs:
            assert mode(Path(here) / name) == 0o700, name
        for name in names:
            assert mode(Path(here) / name) in (0o600, 0o644), name
            assert os.lstat(Path(here) / name).st_uid == os.geteuid()


def results_of_another(tmp_path: Path, how: str) -> Path:
    folder = tmp_path / "results"
    if how == "link":
        (tmp_path / "elsewhere").mkdir()
        folder.symlink_to(tmp_path / "elsewhere")
    else:
        folder.mkdir()
        if how == "runner's":
            os.chown(folder, RUNNER.uid, RUNNER.gid)
        else:
            folder.chmod(0o777)
    return folder


@pytest.mark.skipif(not ROOT, reason="needs root to give a folder to another user")
@pytest.mark.parametrize("how", ["runner's", "world-writable", "link"])
@pytest.mark.parametrize("command", ["evaluate", "batch", "verify"])
def test_a_results_folder_another_user_could_write_to_is_refused(
    world: Path, tmp_path: Path, how: str, command: str
) -> None:
    made = make_task(world / "t")
    (world / "empty.patch").write_bytes(b"")
    results = results_of_another(tmp_path, how)
    if command == "evaluate":
        args = ["--task", str(made.task), "--repo", str(made.source)]
        done = ssegrade(
            "evaluate", *args, "--patch", str(world / "empty.patch"), "--results", str(results)
        )
    elif command == "batch":
        jobs = world / "jobs.jsonl"
        jobs.write_text('{"task": "t/task", "patch": "empty.patch", "repo": "t/source"}\n')
        done = ssegrade("batch", str(jobs), "--results", str(results))
    else:
        args = [str(made.task), "--repo", str(made.source)]
        done = ssegrade("verify", *args, "--results", str(results))
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ssegrade: error")]
    assert len(errors) == 1, done.stderr
    assert str(results) in errors[0]
    assert "Traceback" not in done.stderr
    target = tmp_path / "elsewhere" if how == "link" else results
    assert os.listdir(target) == []


def test_a_long_log_is_not_written_into_a_folder_others_may_write_to(tmp_path: Path) -> None:
    shared = tmp_path / "logs"
    shared.mkdir()
    shared.chmod(0o777)
    spill = PreviewInterpreter(DaemonClient(tmp_path / "no.sock"), shared)
    refused = spill(SpillLog("test_patch-build", "word " * 20_000))
    assert isinstance(refused, Failure)
    assert "others may write to the log folder" in refused.failure()
    assert os.listdir(shared) == []
    shared.chmod(0o700)
    written = spill(SpillLog("test_patch-build", "word"))
    assert isinstance(written, Success)
    assert Path(written.unwrap()).parent == shared
