"""Scratch folders are the grading's own and go with it (SPEC §5 "Containment"): batch and
verify run to their end leave none, and a grading killed together with its guardian leaves
folders that the next grading process to start removes, and nothing else.

Real commands as root; the functions and the `grading` fixture of `tests/support/killkit.py`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from interpreters.real.runner.guardian import owner_tag
from tests.support.killkit import Grading, batch_of, grading, settled, sleeping_task
from tests.support.realtask import fix_to, ssegrade
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: scripts as the runner account"),
]

__all__ = ["grading"]  # the fixture, used by name


def _dead_tag() -> str:
    proc = subprocess.Popen(["sleep", "300"])
    tag = owner_tag(proc.pid)
    proc.kill()
    proc.wait()
    return tag


def test_scratch_of_dead_owners_is_removed_when_any_grading_starts(
    grading: Grading, tmp_path: Path
) -> None:
    # What a grading whose guardian died with it (a kill -9 of the whole tree) leaves.
    dead, live = _dead_tag(), owner_tag()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept").write_text("not ssegrade's\n")
    made = {
        "dead": grading.tmpdir / f"ssegrade-{dead}-abcd1234",
        "dead git": grading.tmpdir / f"ssegrade-git-{dead}-efgh5678",
        "live": grading.tmpdir / f"ssegrade-{live}-ijkl9012",
        "unnamed": grading.tmpdir / "ssegrade-mnop3456",
    }
    for folder in made.values():
        (folder / "work" / "copy").mkdir(parents=True)
        (folder / "work" / "copy" / "file").write_text("x\n")
    link = grading.tmpdir / f"ssegrade-{dead}-link0000"
    link.symlink_to(outside)
    theirs = grading.tmpdir / f"ssegrade-{dead}-user0000"  # another user's: not ours to remove
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    code = (
        "from interpreters.real.runner import release_scratch, scratch_folder\n"
        "release_scratch(scratch_folder())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=grading.env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    wait_until(
        lambda: not made["dead"].exists() and not made["dead git"].exists(),
        "the dead gradings' folders to go",
        30,
        detail=lambda: sorted(os.listdir(grading.tmpdir)),
    )
    assert made["live"].is_dir()
    assert made["unnamed"].is_dir()
    assert link.is_symlink()
    assert (outside / "kept").read_text() == "not ssegrade's\n"
    assert theirs.is_dir()


def test_batch_and_verify_leave_no_scratch_folder_and_no_process(
    tmp_path: Path, grading: Grading
) -> None:
    jobs, results = batch_of(tmp_path / "b", grading.token, 3)
    batch = ssegrade("batch", str(jobs), "--results", str(results), env=grading.env, timeout=300)
    assert batch.returncode == 0, batch.stderr
    made = sleeping_task(tmp_path / "v", grading.token, value=None)
    config = made.task / "config.yaml"
    config.write_text(config.read_text().replace("poc:", "patch: fix.diff\n  poc:", 1))
    (made.task / "fix.diff").write_text(fix_to("fixed"))
    kept = tmp_path / "verified"
    verify = ssegrade(
        "verify",
        str(made.task),
        "--repo",
        str(made.source),
        "--results",
        str(kept),
        env=grading.env,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert settled(grading) == {}
