"""Resume grades again what errored: `run_batch` on real task folders and real worker
processes, with the stand-in grader of `tests.support.batchkit`, whose `fault-once` and
`fault-always` patches meet a host fault the first time they are graded, or every time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from interpreters.batch import BatchReport, run_batch
from tests.support.batchkit import Quiet, saying, verdict_grade
from tests.support.realtask import make_task

pytestmark = pytest.mark.slow


@pytest.fixture
def world(tmp_path: Path) -> Path:
    make_task(tmp_path / "t")
    (tmp_path / "patches").mkdir()
    for name, text in (
        ("once", "fixed fault-once a"),
        ("always", "fault-always b"),
        ("good", "fixed c"),
        ("bad", "nothing d"),
    ):
        (tmp_path / "patches" / f"{name}.patch").write_text(saying(text))
    lines = [
        {"task": "t/task", "patch": f"patches/{name}.patch", "repo": "t/source", "run_id": name}
        for name in ("once", "always", "good", "bad")
    ]
    (tmp_path / "jobs.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return tmp_path


def batch(world: Path, **options: Any) -> tuple[BatchReport, list[str]]:
    """Run the batch; its report and the lines it said."""
    said = Quiet()
    report = run_batch(
        world / "jobs.jsonl",
        world / "results",
        workers=2,
        grade=verdict_grade,
        reporter=said,
        **options,
    )
    return report, said.lines


def summary(world: Path, name: str) -> dict[str, Any]:
    path = world / "results" / "shell-001" / "unknown" / "unknown" / name / "summary.json"
    doc: dict[str, Any] = json.loads(path.read_bytes())
    return doc


def attempts(world: Path) -> dict[str, tuple[str, int]]:
    """Each run's status and attempts, as its summary says."""
    found = {}
    for name in ("once", "always", "good", "bad"):
        doc = summary(world, name)
        found[name] = (doc["patch_result"]["status"], doc["attempts"])
    return found


def test_resume_grades_errors_again_up_to_the_attempts_allowed(world: Path) -> None:
    first, _ = batch(world)
    assert first.exit_code == 1
    assert attempts(world) == {
        "once": ("error", 1),
        "always": ("error", 1),
        "good": ("passed", 1),
        "bad": ("failed", 1),
    }
    assert "No space left on device" in summary(world, "once")["patch_result"]["error_msg"]
    second, said = batch(world)
    assert second.last_line.startswith("2 graded, 1 passed, 0 failed, 1 error, 0 cached, 2 skip")
    assert second.exit_code == 1  # `always` errored again
    assert attempts(world) == {
        "once": ("passed", 2),
        "always": ("error", 2),
        "good": ("passed", 1),
        "bad": ("failed", 1),
    }
    once = [line for line in said if " shell-001/unknown/unknown/once " in line]
    assert len(once) == 1
    assert once[0].startswith("passed ")
    assert once[0].endswith(" s, attempt 2)")
    third, _ = batch(world)
    assert third.last_line.startswith("0 graded, 0 passed, 0 failed, 0 error, 0 cached, 4 skip")
    assert third.exit_code == 1  # the run that kept its error
    more, _ = batch(world, max_attempts=3)
    assert more.tally.graded == 1
    assert attempts(world)["always"] == ("error", 3)


def test_no_retry_keeps_errors_and_force_grades_every_run_again(world: Path) -> None:
    batch(world)
    kept, _ = batch(world, retry=False)
    assert (kept.tally.graded, kept.tally.skipped, kept.exit_code) == (0, 4, 1)
    assert attempts(world)["once"] == ("error", 1)
    forced, _ = batch(world, force=True)
    assert (forced.tally.graded, forced.tally.cached, forced.tally.skipped) == (4, 0, 0)
    assert attempts(world) == {
        "once": ("passed", 1),
        "always": ("error", 1),
        "good": ("passed", 1),
        "bad": ("failed", 1),
    }


def test_force_grades_again_instead_of_reusing_an_earlier_grade(world: Path) -> None:
    (world / "patches" / "good-too.patch").write_text(saying("fixed c"))
    more = {"task": "t/task", "patch": "patches/good-too.patch", "repo": "t/source"}
    with (world / "jobs.jsonl").open("a") as jobs:
        jobs.write(json.dumps({**more, "run_id": "good-too"}) + "\n")
    first, _ = batch(world)
    assert first.tally.cached == 1  # the same patch as `good`, graded in the same batch
    forced, _ = batch(world, force=True)
    assert (forced.tally.graded, forced.tally.cached) == (4, 1)
    assert summary(world, "good-too")["cached_from"] == "shell-001/unknown/unknown/good"


def test_resume_grades_again_the_kinds_of_error_asked_for(tmp_path: Path) -> None:
    """A run that ran out of its time limit (`timeout`) is the patch's doing: resume keeps
    it by default and grades the host's faults (`infrastructure`) again; `retry_kinds`
    chooses. Each summary carries its error's kind."""
    make_task(tmp_path / "t")
    (tmp_path / "patches").mkdir()
    (tmp_path / "patches" / "hang.patch").write_text(saying("hang a"))
    (tmp_path / "patches" / "once.patch").write_text(saying("fixed fault-once b"))
    lines = [
        {"task": "t/task", "patch": f"patches/{name}.patch", "repo": "t/source", "run_id": name}
        for name in ("hang", "once")
    ]
    (tmp_path / "jobs.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))

    def kinds() -> dict[str, tuple[str, str | None, int]]:
        docs = {name: summary(tmp_path, name) for name in ("hang", "once")}
        return {
            name: (d["patch_result"]["status"], d["runtime_result"]["error_kind"], d["attempts"])
            for name, d in docs.items()
        }

    def errors() -> Any:
        return json.loads((tmp_path / "results" / "batch.json").read_bytes())["errors"]

    batch(tmp_path)
    assert kinds() == {"hang": ("error", "timeout", 1), "once": ("error", "infrastructure", 1)}
    run = "shell-001/unknown/unknown"
    assert errors() == {"infrastructure": [f"{run}/once"], "timeout": [f"{run}/hang"]}
    batch(tmp_path)
    assert kinds() == {"hang": ("error", "timeout", 1), "once": ("passed", None, 2)}
    assert errors() == {"timeout": [f"{run}/hang"]}  # kept as it was: skipped, still an error
    batch(tmp_path, retry_kinds={"timeout"}, max_attempts=3)
    assert kinds() == {"hang": ("error", "timeout", 2), "once": ("passed", None, 2)}
