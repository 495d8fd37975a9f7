"""Paths a task or a job line names are read with least privilege: a task's `source` only when
the account it speaks for could read it, a patch file only when it is a regular file (no link
followed, no FIFO waited on; `/dev/null` is the empty patch).

The attacks as they were found: a task whose `source` is a root-only folder, whose copy went
to the runner; `--patch` a link to a root-only file, copied into `final.patch`; a job's patch
that is a FIFO, on which planning hung.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from interpreters.batch import BadJobs, run_batch
from interpreters.real.runner import resolve_runner
from tests.support.batchkit import Quiet, verdict_grade
from tests.support.realtask import make_task, ssegrade

pytestmark = pytest.mark.slow

ROOT = os.geteuid() == 0
RUNNER = resolve_runner(None).unwrap()
SECRET = "root-only-secret-4f1c"

# Shows what the grading repo's copy holds: the secret file and the keys folder.
SHOW = """#!/bin/sh
cat secret.txt 2>&1
ls -a .ssh 2>&1
. ./lib.sh
echo "$VALUE" > out.txt
"""


@pytest.fixture
def world() -> Iterator[Path]:
    """A folder the runner account can reach."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-paths-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def root_only(top: Path) -> Path:
    """A folder like `/root`: mode 0700, a 0600 file and a `.ssh` folder, a git project."""
    folder = top / "private"
    shutil.copytree(top / "t" / "source", folder, symlinks=True)
    (folder / "secret.txt").write_text(SECRET + "\n")
    (folder / "secret.txt").chmod(0o600)
    (folder / ".ssh").mkdir(mode=0o700)
    (folder / ".ssh" / "id_ed25519").write_text("key\n")
    folder.chmod(0o700)
    return folder


def source_is(task: Path, source: Path) -> None:
    config = yaml.safe_load((task / "config.yaml").read_text())
    config["source"] = str(source)
    (task / "config.yaml").write_text(yaml.safe_dump(config))


@pytest.mark.skipif(not ROOT, reason="as root only: otherwise ssegrade reads as its caller")
def test_verify_does_not_hand_the_runner_a_copy_of_a_root_only_source(
    world: Path, tmp_path: Path
) -> None:
    made = make_task(world / "t")
    made.script("build.sh", SHOW)
    private = root_only(world)
    source_is(made.task, private)
    done = ssegrade("verify", str(made.task), "--results", str(tmp_path / "r"))
    assert SECRET not in done.stdout + done.stderr
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ssegrade: error")]
    assert errors == [
        f"ssegrade: error: {made.task}: the task's source is not read as root: "
        f"{private} is not readable by sse-runner (uid {RUNNER.uid})"
    ]
    found = [p for p in (tmp_path / "r").rglob("*") if p.is_file() and SECRET in p.read_text()]
    assert found == []


@pytest.mark.skipif(not ROOT, reason="as root only: otherwise ssegrade reads as its caller")
def test_batch_without_repo_refuses_a_source_the_task_cannot_read(world: Path) -> None:
    made = make_task(world / "t")
    source_is(made.task, root_only(world))
    (world / "empty.patch").write_bytes(b"")
    jobs = world / "jobs.jsonl"
    jobs.write_text(json.dumps({"task": "t/task", "patch": "empty.patch"}) + "\n")
    with pytest.raises(BadJobs, match="the task's source is not read as root"):
        run_batch(jobs, world / "results", workers=1, reporter=Quiet())
    # Named by the operator in the job line, it is graded as it is.
    jobs.write_text(
        json.dumps({"task": "t/task", "patch": "empty.patch", "repo": "private"}) + "\n"
    )
    report = run_batch(jobs, world / "results", workers=1, grade=verdict_grade, reporter=Quiet())
    assert report.tally.graded == 1


@pytest.mark.skipif(not ROOT, reason="needs root to give a task folder to another user")
def test_a_source_is_read_with_the_rights_of_the_task_folders_owner(world: Path) -> None:
    made = make_task(world / "t")
    owner = 4242
    theirs = root_only(world)
    for here, dirs, names in os.walk(theirs):
        for name in [".", *dirs, *names]:
            os.chown(os.path.join(here, name), owner, owner, follow_symlinks=False)
    os.chown(made.task, owner, owner)
    source_is(made.task, theirs)
    (world / "empty.patch").write_bytes(b"")
    jobs = world / "jobs.jsonl"
    jobs.write_text(json.dumps({"task": "t/task", "patch": "empty.patch"}) + "\n")
    report = run_batch(jobs, world / "results", workers=1, grade=verdict_grade, reporter=Quiet())
    assert report.tally.graded == 1  # its owner may read it: graded
    os.chown(theirs / "secret.txt", 0, 0)  # one file its owner cannot read
    with pytest.raises(BadJobs, match=r"secret\.txt is not readable by uid 4242"):
        run_batch(jobs, world / "results2", workers=1, grade=verdict_grade, reporter=Quiet())


def test_a_patch_that_is_a_link_is_refused_and_nothing_is_copied(
    world: Path, tmp_path: Path
) -> None:
    made = make_task(world / "t")
    (tmp_path / "shadow").write_text(SECRET + "\n")
    (tmp_path / "shadow").chmod(0o600)
    (tmp_path / "link.patch").symlink_to(tmp_path / "shadow")
    results = tmp_path / "r"
    done = ssegrade(
        "evaluate",
        "--task",
        str(made.task),
        "--repo",
        str(made.source),
        "--patch",
        str(tmp_path / "link.patch"),
        "--results",
        str(results),
    )
    assert done.returncode == 2
    assert done.stderr == (
        f"ssegrade: error: --patch {tmp_path / 'link.patch'}: a symbolic link "
        "(links are not followed)\n"
    )
    assert not results.exists()
    jobs = world / "jobs.jsonl"
    job = {"task": "t/task", "patch": str(tmp_path / "link.patch"), "repo": "t/source"}
    jobs.write_text(json.dumps(job) + "\n")
    with pytest.raises(BadJobs, match="patch: a symbolic link"):
        run_batch(jobs, tmp_path / "b", workers=1, grade=verdict_grade, reporter=Quiet())


def test_a_job_whose_patch_is_a_fifo_is_refused_at_once(world: Path, tmp_path: Path) -> None:
    make_task(world / "t")
    os.mkfifo(world / "fifo.patch")
    jobs = world / "jobs.jsonl"
    jobs.write_text(
        json.dumps({"task": "t/task", "patch": "fifo.patch", "repo": "t/source"}) + "\n"
    )
    done = ssegrade("batch", str(jobs), "--results", str(tmp_path / "r"), timeout=60)
    assert done.returncode == 2
    assert done.stderr == (
        f"ssegrade: error: {jobs}:1: patch: not a file (a FIFO, a device or a folder): "
        f"{world / 'fifo.patch'}\n"
    )


def test_dev_null_is_the_empty_patch(world: Path, tmp_path: Path) -> None:
    made = make_task(world / "t")
    done = ssegrade(
        "evaluate",
        "--task",
        str(made.task),
        "--repo",
        str(made.source),
        "--patch",
        "/dev/null",
        "--results",
        str(tmp_path / "r"),
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "r" / "final.patch").read_bytes() == b""
    jobs = world / "jobs.jsonl"
    jobs.write_text(json.dumps({"task": "t/task", "patch": "/dev/null", "repo": "t/source"}) + "\n")
    report = run_batch(jobs, tmp_path / "b", workers=1, grade=verdict_grade, reporter=Quiet())
    assert report.tally.graded == 1
