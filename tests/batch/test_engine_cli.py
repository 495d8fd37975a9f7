"""`ssegrade batch --engine …` with image jobs, at the command line: a job its engine cannot
grade is a bad line, named by its number, one line each, and nothing runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from interpreters.real.programs import ProgramError, find_program
from tests.support.realtask import make_task, ssegrade


def _jobs(folder: Path, *lines: dict[str, object]) -> Path:
    (folder / "empty.diff").write_bytes(b"")
    jobs = folder / "jobs.jsonl"
    jobs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return jobs


def test_an_image_job_with_the_local_engine_is_a_bad_line(tmp_path: Path) -> None:
    made = make_task(tmp_path / "t")
    jobs = _jobs(
        tmp_path,
        {"task": str(made.task), "patch": "empty.diff", "repo": str(made.source)},
        {"image": "localhost/x:1", "patch": "empty.diff"},
        {"image": "localhost/x:1", "patch": "empty.diff", "task": "ssebench"},
    )
    done = ssegrade("batch", str(jobs), "--results", str(tmp_path / "r"))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"ssegrade: error: {jobs}:2: image: an image job needs --engine podman or docker "
        "(not local)",
        f"ssegrade: error: {jobs}:3: task: in an image job, an absolute path in the image "
        "('ssebench')",
    ]
    assert not (tmp_path / "r").exists()


@pytest.mark.skipif(shutil.which("podman") is None, reason="podman is not installed")
def test_a_job_without_image_with_a_container_engine_is_a_bad_line(tmp_path: Path) -> None:
    made = make_task(tmp_path / "t")
    jobs = _jobs(tmp_path, {"task": str(made.task), "patch": "empty.diff"})
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    done = ssegrade(
        "batch", str(jobs), "--results", str(tmp_path / "r"), "--engine", "podman",
        "--bundle", str(bundle),
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"ssegrade: error: {jobs}:1: image: --engine podman grades image jobs only: "
        "give this job an `image`"
    ]


def test_a_container_engine_that_is_not_installed_is_one_line(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path, {"image": "localhost/x:1", "patch": "empty.diff"})
    empty = tmp_path / "no-programs"
    empty.mkdir()
    done = ssegrade(
        "batch", str(jobs), "--results", str(tmp_path / "r"), "--engine", "docker",
        "--bundle", str(tmp_path), env={"PATH": str(empty)},
    )  # fmt: skip
    assert done.returncode == 2
    try:  # the engine's program is found on root's trusted search path, whatever PATH says
        find_program("docker")
    except ProgramError:
        assert done.stderr == "ssegrade: error: --engine docker: docker is not installed\n"
    else:  # a docker client without a daemon (as on some hosts): said once, in one line
        assert done.stderr.startswith("ssegrade: error: --engine docker: no docker engine "), (
            done.stderr
        )
        assert done.stderr.count("\n") == 1, done.stderr
