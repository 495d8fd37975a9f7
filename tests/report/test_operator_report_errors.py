"""SPEC §11: beside a row's shares, its `error` runs by kind, with the runs a resume would
grade again. A run whose host fault was already graded again up to the attempts allowed
(`--max-attempts`, default 2) is not one a resume grades again: the report must not count it
so. Real task folders, worker processes and batches (`tests.batchkit`'s stand-in grader:
`fault-always` meets a host fault every time), then the report command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from interpreters.batch import run_batch
from tests.support.batchkit import Quiet, saying, verdict_grade
from tests.support.realtask import make_task
from tests.support.reportcommand import invoke


def errors(results: Path) -> dict[str, Any]:
    out = invoke(str(results), "--runs", "all", "--format", "json")
    assert out.exit_code == 0, out.stderr
    (row,) = json.loads(out.stdout)["rows"]
    found: dict[str, Any] = row["errors"]
    return found


def test_the_runs_to_grade_again_are_those_a_resume_grades(tmp_path: Path) -> None:
    make_task(tmp_path / "t")
    (tmp_path / "always.patch").write_text(saying("fault-always b"))
    (tmp_path / "good.patch").write_text(saying("fixed c"))
    lines = [
        {"task": "t/task", "patch": f"{name}.patch", "repo": "t/source", "run_id": name}
        for name in ("always", "good")
    ]
    (tmp_path / "jobs.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    results = tmp_path / "results"

    def batch() -> int:
        report = run_batch(
            tmp_path / "jobs.jsonl", results, workers=1, grade=verdict_grade, reporter=Quiet()
        )
        return report.tally.graded

    batch()
    assert errors(results) | {"total": 1} == {
        "total": 1, "timeout": 0, "task": 0, "infrastructure": 1, "grader": 0, "again": 1,
    }  # fmt: skip
    assert batch() == 1  # the resume grades it again: its second attempt, a fault again
    assert errors(results)["infrastructure"] == 1
    assert batch() == 0  # no attempt left: the resume grades nothing
    assert errors(results)["again"] == 0
