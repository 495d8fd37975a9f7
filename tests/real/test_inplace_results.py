"""A results folder that comes with an empty `result.json`, as SSEBench's runner makes it.

SSEBench's runner makes the run folder and an empty `result.json` before the container starts,
bind-mounts the folder (or, in its older runner, that very file) into the container, and reads
the file back afterwards (empty: "No result"). The grade is written into that file in place: a
bind-mounted file cannot be replaced by a rename. The attacks: a `result.json` that is a link,
a hard link to a file elsewhere, a FIFO, a file swapped during grading; none is written
through, and none blocks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interpreters.real import resultsfolder
from interpreters.real.resultsfolder import RESULTS_ENTRIES, holding
from tests.support.realtask import FIX, make_task, ssegrade

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the results folder is root's")

RUNNER_UID = 1000
"""The host user that ran SSEBench's runner and made the empty `result.json`."""


def _grade(made_root: Path, results: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Grade the shell task's fix, recorded, into `results`."""
    task, patch = made_root / "task", made_root / "fix.diff"
    if not task.exists():
        make_task(made_root, pocs=1)
        patch.write_text(FIX)
    return ssegrade(
        "evaluate", "--task", str(task), "--patch", str(patch), "--repo",
        str(made_root / "source"), "--results", str(results), "--containment", "weak", *extra,
    )  # fmt: skip


def _premade(results: Path) -> Path:
    """A run folder as SSEBench's runner leaves it: the folder, its archive, an empty grade."""
    results.mkdir(mode=0o700)
    (results / "archive").mkdir()
    made = results / "result.json"
    made.touch(mode=0o644)
    os.chown(made, RUNNER_UID, RUNNER_UID)
    return made


def test_an_empty_premade_result_json_receives_the_grade_in_place(tmp_path: Path) -> None:
    made = _premade(tmp_path / "run")
    before = made.stat()
    done = _grade(tmp_path / "t", tmp_path / "run")
    assert done.returncode == 0, done.stderr
    after = made.stat()
    assert (after.st_ino, after.st_uid, after.st_mode) == (
        before.st_ino,
        RUNNER_UID,
        before.st_mode,
    )
    graded = json.loads(made.read_bytes())
    assert graded["patch_result"]["status"] == "passed"
    assert sorted(p.name for p in (tmp_path / "run").iterdir() if p.name.endswith(".tmp")) == []
    fresh = _grade(tmp_path / "t", tmp_path / "fresh")
    assert fresh.returncode == 0, fresh.stderr
    assert json.loads((tmp_path / "fresh" / "result.json").read_bytes()) == graded


def test_a_premade_result_json_that_holds_a_grade_is_still_refused(tmp_path: Path) -> None:
    made = _premade(tmp_path / "run")
    made.write_text('{"patch_result":{"status":"passed"}}')
    done = _grade(tmp_path / "t", tmp_path / "run")
    assert done.returncode == 2
    assert "already holds result.json" in done.stderr
    assert made.read_text() == '{"patch_result":{"status":"passed"}}'


def test_a_linked_result_json_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir(mode=0o700)
    target = tmp_path / "elsewhere"
    target.touch()
    (tmp_path / "run" / "result.json").symlink_to(target)
    done = _grade(tmp_path / "t", tmp_path / "run")
    assert done.returncode == 2
    assert done.stderr.strip().endswith("a link (links are not followed); not written into")
    assert target.read_bytes() == b""


def test_a_hard_linked_result_json_is_refused_and_the_other_name_untouched(
    tmp_path: Path,
) -> None:
    (tmp_path / "run").mkdir(mode=0o700)
    other = tmp_path / "elsewhere"
    other.touch()
    os.link(other, tmp_path / "run" / "result.json")
    done = _grade(tmp_path / "t", tmp_path / "run")
    assert done.returncode == 2
    assert "2 hard links to it; not written into" in done.stderr
    assert other.read_bytes() == b""


def test_a_fifo_as_result_json_is_refused_without_blocking(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir(mode=0o700)
    os.mkfifo(tmp_path / "run" / "result.json")
    done = _grade(tmp_path / "t", tmp_path / "run")
    assert done.returncode == 2
    assert "result.json: not a regular file; not written into" in done.stderr


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
def test_a_bind_mounted_result_json_receives_the_grade(tmp_path: Path) -> None:
    # SSEBench's older runner mounts the file alone (`-v result.json:/sse_result`): a rename
    # onto a mount point fails (EBUSY), so only a write in place reaches the host's file.
    outside = tmp_path / "host-result.json"
    outside.touch()
    os.chown(outside, RUNNER_UID, RUNNER_UID)
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    (run / "result.json").touch()
    make_task(tmp_path / "t", pocs=1)
    (tmp_path / "t" / "fix.diff").write_text(FIX)
    grade = [
        "evaluate", "--task", str(tmp_path / "t" / "task"), "--patch",
        str(tmp_path / "t" / "fix.diff"), "--repo", str(tmp_path / "t" / "source"),
        "--results", str(run), "--containment", "weak",
    ]  # fmt: skip
    script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
    command = [sys.executable, "-c", "from interpreters.cli.entry import main; main()", *grade]
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "bind",
         str(outside), str(run / "result.json"), *command],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(outside.read_bytes())["patch_result"]["status"] == "passed"
    assert outside.stat().st_uid == RUNNER_UID
    assert (run / "result.json").read_bytes() == b""  # the mount went with its namespace


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
def test_force_empties_a_bind_mounted_grade_and_writes_into_it(tmp_path: Path) -> None:
    # A mount point cannot be removed (EBUSY): --force used to stop there, grading nothing.
    outside = tmp_path / "host-result.json"
    outside.write_text('{"patch_result":{"status":"failed"}}')
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    (run / "result.json").touch()
    (run / "checks.jsonl").write_text("{}\n")  # what the earlier grading left
    make_task(tmp_path / "t", pocs=1)
    (tmp_path / "t" / "fix.diff").write_text(FIX)
    grade = [
        "evaluate", "--task", str(tmp_path / "t" / "task"), "--patch",
        str(tmp_path / "t" / "fix.diff"), "--repo", str(tmp_path / "t" / "source"),
        "--results", str(run), "--containment", "weak", "--force",
    ]  # fmt: skip
    script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
    command = [sys.executable, "-c", "from interpreters.cli.entry import main; main()", *grade]
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "bind",
         str(outside), str(run / "result.json"), *command],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(outside.read_bytes())["patch_result"]["status"] == "passed"
    assert not (run / ".incomplete").exists()


def _held(folder: Path) -> holding.Hold:
    return resultsfolder.hold(folder, RESULTS_ENTRIES)


def test_a_result_json_swapped_during_grading_is_not_written_into(tmp_path: Path) -> None:
    made = _premade(tmp_path / "run")
    held = _held(tmp_path / "run")
    try:
        made.unlink()
        made.write_bytes(b"")  # another file under the name, after the folder was taken
        with pytest.raises(OSError, match="replaced during grading"):
            resultsfolder.write_result(held.path, b"{}")
        assert made.read_bytes() == b""
        assert sorted(os.listdir(tmp_path / "run")) == [".lock", "archive", "logs", "result.json"]
    finally:
        held.release()
    assert holding.held_premade(held.path) is None


@settings(max_examples=25, deadline=None)
@given(data=st.binary(max_size=70_000))
def test_the_grade_written_in_place_is_exactly_its_bytes(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    folder = tmp_path_factory.mktemp("inplace") / "run"
    made = _premade(folder)
    held = _held(folder)
    try:
        resultsfolder.write_result(held.path, data)
    finally:
        held.release()
    assert made.read_bytes() == data
    assert sorted(os.listdir(folder)) == sorted([".lock", "archive", "logs", "result.json"])
