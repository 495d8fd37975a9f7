"""Every attempt stays on record: a run that resume grades again (an `error` of a kind it
retries) keeps in its `summary.json` what each earlier attempt was (its number, status, error
kind and message), though its folder is cleared for the new one. Real task folders and worker
processes, the stand-in grader of `tests.batchkit` (`fault-always` meets a host fault every
time it is graded)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from interpreters.batch import run_batch
from ssegrade.batch import earlier_attempts
from tests.support.batchkit import Quiet, saying, verdict_grade
from tests.support.realtask import make_task


def _summary(results: Path, run: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(
        (results / "shell-001" / "unknown" / "unknown" / run / "summary.json").read_bytes()
    )
    return doc


def test_each_attempt_of_a_run_graded_again_stays_on_record(tmp_path: Path) -> None:
    make_task(tmp_path / "t")
    (tmp_path / "always.patch").write_text(saying("fault-always b"))
    (tmp_path / "good.patch").write_text(saying("fixed c"))
    lines = [
        {"task": "t/task", "patch": f"{name}.patch", "repo": "t/source", "run_id": name}
        for name in ("always", "good")
    ]
    (tmp_path / "jobs.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    results = tmp_path / "results"
    for _ in range(3):
        run_batch(
            tmp_path / "jobs.jsonl",
            results,
            workers=1,
            max_attempts=3,
            grade=verdict_grade,
            reporter=Quiet(),
        )
    doc = _summary(results, "always")
    assert doc["attempts"] == 3
    earlier = doc["earlier_attempts"]
    assert [item["attempt"] for item in earlier] == [1, 2]
    for item in earlier:
        assert (item["status"], item["error_kind"]) == ("error", "infrastructure")
        assert "No space left on device" in item["error_msg"]
    assert "earlier_attempts" not in _summary(results, "good")  # graded once


summaries = st.fixed_dictionaries(
    {
        "attempts": st.integers(-2, 5) | st.none() | st.booleans(),
        "patch_result": st.fixed_dictionaries(
            {"status": st.sampled_from(["passed", "failed", "error", "bogus"])},
            optional={"error_msg": st.text(max_size=30) | st.integers()},
        )
        | st.none(),
        "runtime_result": st.fixed_dictionaries(
            {},
            optional={
                "error_kind": st.sampled_from(["timeout", "task", "grader", "x"]),
                "evaluator_timeout": st.booleans() | st.text(max_size=3),
            },
        ),
        "earlier_attempts": st.lists(st.dictionaries(st.text(max_size=3), st.integers())),
    }
)


@given(summaries)
def test_the_record_only_grows_and_names_a_status_and_a_kind_of_every_error(
    doc: dict[str, Any],
) -> None:
    """Property: whatever the last attempt's summary holds, the record keeps what it kept
    (bounded), then that attempt: a status of the three, a kind when it is an error."""
    record = earlier_attempts(doc)
    assert record == [*doc["earlier_attempts"], record[-1]][-100:]
    last = record[-1]
    assert last["status"] in ("passed", "failed", "error")
    assert (last["error_kind"] is not None) == (last["status"] == "error")
    assert last["attempt"] >= 1
    json.dumps(record)
