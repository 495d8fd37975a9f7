"""Batch planning, resume and the cache believe only what the batch wrote: a summary planted in
the results folder never becomes a grade, and a link planted there is never written through.

The attacks as they were found: a `summary.json` carrying the digest of an unfixed patch and
a `passed` grade, planted where the runner could write; a link from the results folder to a
folder outside it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from interpreters.batch import BadJobs, run_batch
from interpreters.real.runner import resolve_runner
from tests.support.batchkit import Quiet, saying, verdict_grade
from tests.support.realtask import make_task

pytestmark = pytest.mark.slow

ROOT = os.geteuid() == 0
RUNNER = resolve_runner(None).unwrap()


@pytest.fixture
def world(tmp_path: Path) -> Path:
    make_task(tmp_path / "t")
    (tmp_path / "unfixed.patch").write_text(saying("nothing"))
    job = {"task": "t/task", "patch": "unfixed.patch", "repo": "t/source", "run_id": "mine"}
    (tmp_path / "jobs.jsonl").write_text(json.dumps(job) + "\n")
    return tmp_path


def batch(world: Path, results: Path) -> Any:
    return run_batch(
        world / "jobs.jsonl", results, workers=1, grade=verdict_grade, reporter=Quiet()
    )


def digest_of_the_job(world: Path) -> str:
    """What the unfixed job's digest is (graded once elsewhere)."""
    batch(world, world / "elsewhere")
    run = world / "elsewhere" / "shell-001" / "unknown" / "unknown" / "mine"
    digest: str = json.loads((run / "summary.json").read_bytes())["digest"]
    return digest


def plant(folder: Path, digest: str) -> None:
    """What the runner writes: a `passed` run with the unfixed job's digest, all its own."""
    folder.mkdir(parents=True)
    grade = {"status": "passed", "build_success": True}
    doc = {"patch_result": grade, "runtime_result": {}, "digest": digest}
    (folder / "summary.json").write_text(json.dumps(doc))
    (folder / "result.json").write_text(json.dumps({"patch_result": grade}))
    (folder / "final.patch").write_text("fixed\n")
    for path in (folder, *folder.iterdir()):
        os.chown(path, RUNNER.uid, RUNNER.gid)


@pytest.mark.skipif(not ROOT, reason="needs root to plant files of the runner account")
def test_a_results_folder_the_runner_may_write_to_is_refused_before_its_summaries_are_read(
    world: Path,
) -> None:
    digest = digest_of_the_job(world)
    results = world / "results"
    results.mkdir()
    results.chmod(0o777)
    plant(results / "shell-001" / "x" / "x" / "planted", digest)
    with pytest.raises(BadJobs, match="writable by group or others"):
        batch(world, results)
    assert not (results / "shell-001" / "unknown").exists()


@pytest.mark.skipif(not ROOT, reason="needs root to plant files of the runner account")
def test_a_planted_summary_never_becomes_a_cached_grade(world: Path) -> None:
    digest = digest_of_the_job(world)
    results = world / "results"
    results.mkdir(mode=0o700)
    (results / "shell-001").mkdir(mode=0o700)
    plant(results / "shell-001" / "x" / "x" / "planted", digest)
    report = batch(world, results)
    (outcome,) = report.jobs
    assert (outcome.outcome, outcome.status, outcome.cached_from) == ("graded", "failed", None)
    run = results / "shell-001" / "unknown" / "unknown" / "mine"
    assert "cached_from" not in json.loads((run / "summary.json").read_bytes())


def test_a_link_in_the_results_folder_is_never_written_through(world: Path) -> None:
    outside = world / "outside"
    outside.mkdir()
    results = world / "results"
    results.mkdir(mode=0o700)
    (results / "shell-001").symlink_to(outside)
    with pytest.raises(BadJobs, match="a link or not a folder"):
        batch(world, results)
    assert os.listdir(outside) == []


def test_a_summary_that_is_a_link_is_not_read(world: Path) -> None:
    digest = digest_of_the_job(world)
    results = world / "results"
    other = results / "shell-001" / "x" / "x" / "other"
    other.mkdir(parents=True)
    grade = {"status": "passed"}
    (world / "planted.json").write_text(
        json.dumps({"patch_result": grade, "runtime_result": {}, "digest": digest})
    )
    (other / "summary.json").symlink_to(world / "planted.json")
    (other / "result.json").write_text(json.dumps({"patch_result": grade}))
    (outcome,) = batch(world, results).jobs
    assert (outcome.outcome, outcome.status) == ("graded", "failed")
