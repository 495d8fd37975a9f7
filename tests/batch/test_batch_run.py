"""`run_batch` on real task folders and real worker processes, with a small grading function
injected (the engines take the grading function as an argument): run folders, summaries,
digests, resume, refusal, the cache, validation of the jobs file, exit codes."""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from interpreters.batch import BadJobs, run_batch
from ssegrade.internal.guard_document import GuardReport
from ssegrade.internal.request import Graded, Request
from ssegrade.report import RunFolder, parse_run
from tests.support.batchkit import Quiet, saying, verdict_grade
from tests.support.realtask import make_task

pytestmark = pytest.mark.slow


@pytest.fixture
def world(tmp_path: Path) -> Path:
    made = make_task(tmp_path / "t")
    (tmp_path / "patches").mkdir()
    (tmp_path / "patches" / "fixed.patch").write_text(saying("fixed"))
    (tmp_path / "patches" / "fixed-too.patch").write_text(saying("fixed"))
    (tmp_path / "patches" / "broken.patch").write_text(saying("nothing"))
    (tmp_path / "patches" / "empty.patch").write_bytes(b"")
    assert made.task == tmp_path / "t" / "task"
    return tmp_path


def write_jobs(where: Path, *jobs: dict[str, Any]) -> Path:
    path = where / "jobs.jsonl"
    path.write_text("".join(json.dumps(job) + "\n" for job in jobs))
    return path


def job(patch: str, **extra: Any) -> dict[str, Any]:
    return {"task": "t/task", "patch": f"patches/{patch}", "repo": "t/source", **extra}


def batch(jobs: Path, results: Path, **options: Any) -> Any:
    return run_batch(jobs, results, workers=2, grade=verdict_grade, reporter=Quiet(), **options)


def test_each_job_gets_a_run_folder_and_a_summary_the_report_reads(world: Path) -> None:
    jobs = write_jobs(
        world,
        job(
            "fixed.patch",
            model="openai/gpt-5",
            agent="codex",
            run_id="r1",
            spend=0.42,
            agent_duration=312,
            started_at="2026-11-30T10:00:00Z",
        ),
        job("broken.patch", model="m", agent="a", run_id="r2", reference_run=True),
    )
    report = batch(jobs, world / "results")
    assert report.exit_code == 0
    run = world / "results" / "shell-001" / "openai" / "gpt-5" / "codex" / "r1"
    assert sorted(p.name for p in run.iterdir()) == [
        ".lock",
        "checks.jsonl",
        "final.patch",
        "logs",
        "result.json",
        "summary.json",
    ]
    summary = json.loads((run / "summary.json").read_bytes())
    assert summary["task"]["id"] == "shell-001"
    assert summary["task"]["scripts"]["build"] == "scripts/build.sh"
    assert summary["config"] == {
        "agent": "codex",
        "model": "openai/gpt-5",
        "mode": "sandbox",
        "timeout": 3600,
        "difficulty": 2,
        "tool_layer": "sandbox",
        "egress": "restricted",
        "reference_run": False,
        "plugins": [],
    }
    assert summary["patch_result"]["status"] == "passed"
    assert summary["runtime_result"]["agent_duration"] == 312
    assert summary["spend"] == 0.42
    assert summary["run_id"] == "r1"
    assert summary["started_at"] == "2026-11-30T10:00:00Z"
    assert len(summary["digest"]) == 64
    assert "cached_from" not in summary
    record = parse_run(
        (run / "summary.json").read_bytes(), RunFolder("shell-001", "openai/gpt-5", "codex", "r1")
    ).unwrap()
    assert (record.model, record.agent, record.spend, record.patch.status) == (
        "openai/gpt-5",
        "codex",
        0.42,
        "passed",
    )
    other = json.loads((world / "results/shell-001/m/a/r2/summary.json").read_bytes())
    assert other["patch_result"]["status"] == "failed"
    assert other["config"]["reference_run"] is True
    last = "2 graded, 1 passed, 1 failed, 0 error, 0 cached, 0 skipped in "
    assert report.last_line.startswith(last)


def test_run_id_defaults_to_the_digest_and_a_rerun_skips_everything(world: Path) -> None:
    jobs = write_jobs(world, job("fixed.patch"), job("broken.patch"))
    first = batch(jobs, world / "results")
    folders = sorted((world / "results" / "shell-001" / "unknown" / "unknown").iterdir())
    assert len(folders) == 2
    for folder in folders:
        digest = json.loads((folder / "summary.json").read_bytes())["digest"]
        assert folder.name == digest[:12]
    before = {f: (f / "summary.json").stat().st_mtime_ns for f in folders}
    again = batch(jobs, world / "results")
    assert (first.tally.graded, again.tally.graded, again.tally.skipped) == (2, 0, 2)
    assert {f: (f / "summary.json").stat().st_mtime_ns for f in folders} == before
    assert again.exit_code == 0


def test_another_digest_is_refused_unless_forced(world: Path) -> None:
    jobs = write_jobs(world, job("broken.patch", run_id="r1"))
    batch(jobs, world / "results")
    (world / "patches" / "broken.patch").write_text(saying("fixed now"))
    with pytest.raises(BadJobs) as refused:
        batch(jobs, world / "results")
    assert len(refused.value.problems) == 1
    assert "holds a grade with another digest (--force grades it again)" in str(refused.value)
    assert refused.value.problems[0].startswith(f"{jobs}:1: ")
    summary = world / "results/shell-001/unknown/unknown/r1/summary.json"
    assert json.loads(summary.read_bytes())["patch_result"]["status"] == "failed"
    forced = batch(jobs, world / "results", force=True)
    assert forced.tally.graded == 1
    assert json.loads(summary.read_bytes())["patch_result"]["status"] == "passed"


def test_a_changed_task_folder_changes_the_digest(world: Path) -> None:
    jobs = write_jobs(world, job("broken.patch", run_id="r1"))
    batch(jobs, world / "results")
    (world / "t" / "task" / "pocs" / "poc1.bin").write_bytes(b"changed")
    with pytest.raises(BadJobs):
        batch(jobs, world / "results")


def test_same_digest_is_graded_once_and_cached_with_its_own_run_facts(world: Path) -> None:
    jobs = write_jobs(
        world,
        job("fixed.patch", run_id="r1", agent_duration=10, spend=1.0),
        job("fixed-too.patch", run_id="r2", agent_duration=20, spend=2.0, agent="other"),
    )
    report = batch(jobs, world / "results")
    assert (report.tally.graded, report.tally.cached) == (1, 1)
    assert report.last_line.startswith("1 graded, 2 passed, 0 failed, 0 error, 1 cached, ")
    graded = world / "results/shell-001/unknown/unknown/r1"
    cached = world / "results/shell-001/unknown/other/r2"
    summary = json.loads((cached / "summary.json").read_bytes())
    assert summary["cached_from"] == "shell-001/unknown/unknown/r1"
    assert summary["runtime_result"]["agent_duration"] == 20
    assert summary["spend"] == 2.0
    assert summary["config"]["agent"] == "other"
    assert (
        summary["patch_result"]
        == json.loads((graded / "summary.json").read_bytes())["patch_result"]
    )
    result = json.loads((cached / "result.json").read_bytes())
    assert result["runtime_result"]["agent_duration"] == 20
    assert (cached / "final.patch").read_text() == saying("fixed")
    # A later batch reuses the grade found in RESULTS, unless told not to.
    more = write_jobs(world, job("fixed.patch", run_id="r3"))
    assert batch(more, world / "results").tally.cached == 1
    (world / "results/shell-001/unknown/unknown/r3").rename(world / "gone")
    assert batch(more, world / "results", cache=False).tally.graded == 1


def guarded_grade(request: Request[Any]) -> Graded:
    """`verdict_grade`, with the guard.json a grading writes beside result.json."""
    graded = verdict_grade(request)
    flags = [{"kind": "tests", "paths": ["tests/x.sh"], "why": "the patch touches tests"}]
    report = {"version": 1, "checked": True, "flags": flags, "observed": None}
    (Path(request.results) / "guard.json").write_text(json.dumps(report))
    return replace(graded, guard=GuardReport.model_validate(report))


def test_summaries_carry_the_guard_cached_ones_too(world: Path) -> None:
    jobs = write_jobs(world, job("fixed.patch", run_id="r1"), job("fixed-too.patch", run_id="r2"))
    report = run_batch(jobs, world / "results", workers=1, grade=guarded_grade, reporter=Quiet())
    assert (report.tally.graded, report.tally.cached) == (1, 1)
    for run in ("r1", "r2"):
        summary = json.loads(
            (world / f"results/shell-001/unknown/unknown/{run}/summary.json").read_bytes()
        )
        assert [f["kind"] for f in summary["guard"]["flags"]] == ["tests"], run
    without = write_jobs(world, job("broken.patch", run_id="r3"))
    batch(without, world / "results")  # a grading that wrote no guard.json
    summary = json.loads((world / "results/shell-001/unknown/unknown/r3/summary.json").read_bytes())
    assert "guard" not in summary


def test_a_job_that_cannot_be_graded_is_an_error_and_exit_1(world: Path) -> None:
    (world / "patches" / "crash.patch").write_text(saying("crash"))
    jobs = write_jobs(world, job("crash.patch", run_id="c"), job("fixed.patch", run_id="f"))
    report = batch(jobs, world / "results")
    assert report.exit_code == 1
    result = json.loads((world / "results/shell-001/unknown/unknown/c/result.json").read_bytes())
    assert result["patch_result"]["status"] == "error"
    assert "the grading crashed" in result["patch_result"]["error_msg"]
    assert report.last_line.startswith("2 graded, 1 passed, 0 failed, 1 error, 0 cached, ")


def test_every_problem_of_every_line_is_named_in_one_pass_and_nothing_is_graded(
    world: Path,
) -> None:
    foreign = world / "results/shell-001/unknown/unknown/mine"
    foreign.mkdir(parents=True)
    (foreign / "notes.txt").write_text("not a run")
    jobs = world / "jobs.jsonl"
    jobs.write_text(
        "\n".join(
            [
                json.dumps(job("fixed.patch", run_id="a")),
                json.dumps({"task": "nowhere", "patch": "patches/missing.patch"}),
                json.dumps(job("missing.patch")),
                json.dumps(job("fixed.patch", run_id="a")),
                "{not json",
                json.dumps(job("fixed.patch", modle="x", spend="lots")),
                json.dumps(job("fixed.patch", model="../up")),
                json.dumps({"patch": "patches/fixed.patch"}),
                json.dumps(job("fixed.patch", model="unknown/unknown/a", run_id="in")),
                json.dumps(job("fixed.patch", run_id="mine")),
                json.dumps(job("fixed.patch", repo="no-repo", run_id="b")),
            ]
        )
        + "\n"
    )
    with pytest.raises(BadJobs) as bad:
        batch(jobs, world / "results")
    problems = bad.value.problems
    lines = [int(p.removeprefix(f"{jobs}:").split(":")[0]) for p in problems]
    assert lines == [2, 2, 3, 4, 5, 6, 6, 7, 8, 9, 10, 11]
    why = [p.removeprefix(f"{jobs}:").split(": ", 1)[1] for p in problems]
    assert why[0].startswith("task: task folder not found")
    assert why[1].startswith(f"patch: no such file: {world}/patches/missing.patch")
    assert why[2].startswith("patch: no such file")
    assert why[3].startswith("duplicate run: task shell-001, model unknown, agent unknown")
    assert why[4].startswith("not JSON")
    assert why[5:7] == [
        "modle: unknown key (did you mean model?)",
        "spend: Input should be a valid number",
    ]
    assert "cannot name a folder" in why[7]
    assert why[8] == "task: required key is missing"
    assert "lies inside the run folder of line 1" in why[9]
    assert why[10] == f"{foreign} is not a run folder (it holds 'notes.txt')"
    assert why[11].startswith("repo: grading repo not found")
    assert sorted(p.name for p in foreign.parent.iterdir()) == ["mine"]


def test_a_bad_batch_makes_no_results_folder(world: Path) -> None:
    jobs = write_jobs(world, job("missing.patch"))
    with pytest.raises(BadJobs):
        batch(jobs, world / "results")
    assert not (world / "results").exists()


def test_semantic_problems_are_named_with_their_lines(world: Path) -> None:
    jobs = write_jobs(
        world,
        job("fixed.patch", run_id="a"),
        {"task": "nowhere", "patch": "patches/fixed.patch"},
        job("missing.patch"),
        job("fixed.patch", run_id="a"),
        job("fixed.patch", repo="no-repo"),
    )
    with pytest.raises(BadJobs) as bad:
        batch(jobs, world / "results")
    problems = [p.removeprefix(f"{jobs}:") for p in bad.value.problems]
    assert [p.split(":")[0] for p in problems] == ["2", "3", "4", "5"]
    assert "task folder not found" in problems[0]
    assert "patch: no such file" in problems[1]
    assert "duplicate run: task shell-001, model unknown, agent unknown, run id a" in problems[2]
    assert "grading repo not found" in problems[3]
    assert not (world / "results" / "shell-001").exists()


def test_repo_defaults_to_the_task_source(world: Path) -> None:
    # Out of the test's private folder: a source the task names is read as root only when the
    # runner account (for a task folder of root's) could read it.
    with tempfile.TemporaryDirectory(prefix="ssegrade-world-", dir="/tmp") as top:
        Path(top).chmod(0o755)
        made = make_task(Path(top) / "t")
        config = made.task / "config.yaml"
        config.write_text(config.read_text() + "source: ../source\n")
        patch = Path(top) / "fixed.patch"
        patch.write_text(saying("fixed"))
        jobs = write_jobs(Path(top), {"task": "t/task", "patch": "fixed.patch", "run_id": "r"})
        assert batch(jobs, world / "results").tally.graded == 1


def test_a_leftover_of_a_crash_is_graded_again_but_foreign_files_are_refused(
    world: Path,
) -> None:
    jobs = write_jobs(world, job("fixed.patch", run_id="r1"))
    leftover = world / "results/shell-001/unknown/unknown/r1"
    leftover.mkdir(parents=True)
    (leftover / ".incomplete").touch()
    (leftover / "result.json").write_text("{}")
    assert batch(jobs, world / "results").tally.graded == 1
    assert not (leftover / ".incomplete").exists()
    other = write_jobs(world, job("fixed.patch", run_id="r9"))
    foreign = world / "results/shell-001/unknown/unknown/r9"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(BadJobs, match="is not a run folder"):
        batch(other, world / "results", force=True)
    assert (foreign / "notes.txt").read_text() == "mine"
