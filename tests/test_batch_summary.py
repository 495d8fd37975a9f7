"""`batch.json`: the pure document (`ssegrade.batch.summary`) as properties, the rule of
which finished runs are graded again, and the file a real batch writes (atomically, at the
end and on interrupt, never through a link planted in its place)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from interpreters.batch import run_batch
from ssegrade.batch.summary import (
    KINDS,
    BatchSummary,
    JobsFile,
    RunKind,
    batch_summary,
    next_attempt,
)
from tests.batchkit import Quiet, saying, verdict_grade
from tests.realtask import make_task

folders = st.lists(st.text("abc/", min_size=1, max_size=8), min_size=0, max_size=30)
kinds = st.sampled_from(KINDS)
times = st.datetimes(timezones=st.just(UTC), min_value=datetime(2000, 1, 1))

TOP_KEYS = [
    "ssegrade",
    "label",
    "engine",
    "workers",
    "containment",
    "jobs",
    "started_at",
    "ended_at",
    "interrupted",
    "counts",
    "runs",
    "errors",
]


def summary_of(outcomes: list[tuple[str, RunKind]], **extra: Any) -> BatchSummary:
    start = datetime(2026, 11, 30, 10, tzinfo=UTC)
    return batch_summary(
        version=extra.get("version", "1.2.3"),
        label=extra.get("label"),
        engine=extra.get("engine", "local"),
        workers=extra.get("workers", 2),
        containment=extra.get("containment", "PID namespace"),
        jobs=JobsFile(path="jobs.jsonl", sha256="f" * 64, count=len(outcomes)),
        started_at=extra.get("started_at", start),
        ended_at=extra.get("ended_at", start + timedelta(seconds=5)),
        interrupted=extra.get("interrupted", False),
        outcomes=outcomes,
    )


@given(
    st.lists(st.tuples(st.text(min_size=1, max_size=20), kinds), max_size=40),
    st.none() | st.text(max_size=20),
    st.booleans(),
    times,
    st.integers(1, 512),
)
def test_every_run_is_in_the_list_of_its_kind_in_order_and_counted(
    outcomes: list[tuple[str, RunKind]],
    label: str | None,
    interrupted: bool,
    start: datetime,
    workers: int,
) -> None:
    doc = summary_of(
        outcomes,
        label=label,
        interrupted=interrupted,
        started_at=start,
        ended_at=start,
        workers=workers,
    )
    for kind in KINDS:
        listed = getattr(doc.runs, kind)
        assert listed == tuple(folder for folder, k in outcomes if k == kind)
        assert getattr(doc.counts, kind) == len(listed)
    assert sum(getattr(doc.counts, kind) for kind in KINDS) == len(outcomes)
    text = doc.to_json()
    assert BatchSummary.model_validate_json(text) == doc
    raw = json.loads(text)
    assert list(raw) == TOP_KEYS
    assert list(raw["counts"]) == list(raw["runs"]) == list(KINDS)
    assert list(raw["jobs"]) == ["path", "sha256", "count"]
    assert (raw["label"], raw["interrupted"], raw["workers"]) == (label, interrupted, workers)
    assert datetime.fromisoformat(raw["started_at"]) == start


@given(st.lists(st.tuples(folders.map("/".join), kinds), min_size=1, max_size=10), kinds)
def test_a_document_whose_counts_disagree_with_its_runs_is_refused(
    outcomes: list[tuple[str, RunKind]], kind: RunKind
) -> None:
    raw = json.loads(summary_of(outcomes).to_json())
    raw["counts"][kind] += 1
    with pytest.raises(ValidationError, match=f"counts.{kind} is not the number of runs"):
        BatchSummary.model_validate_json(json.dumps(raw))


def test_times_without_a_zone_are_refused() -> None:
    raw = json.loads(summary_of([]).to_json())
    raw["ended_at"] = "2026-11-30T10:00:00"
    with pytest.raises(ValidationError):
        BatchSummary.model_validate_json(json.dumps(raw))


@given(
    st.sampled_from(["passed", "failed", "error"]),
    st.integers(1, 10),
    st.booleans(),
    st.booleans(),
    st.integers(1, 10),
)
def test_which_finished_runs_are_graded_again(
    status: Any, attempts: int, force: bool, retry: bool, max_attempts: int
) -> None:
    again = next_attempt(status, attempts, force=force, retry=retry, max_attempts=max_attempts)
    if force:
        assert again == 1
    elif status == "error" and retry and attempts < max_attempts:
        assert again == attempts + 1
        assert again <= max_attempts
    else:
        assert again is None


# ---------------------------------------------------------------------------- the file


@pytest.fixture
def world(tmp_path: Path) -> Path:
    make_task(tmp_path / "t")
    (tmp_path / "patches").mkdir()
    for name, text in (("a", "fixed"), ("b", "nothing"), ("c", "fixed")):
        (tmp_path / "patches" / f"{name}.patch").write_text(saying(text))
    lines = [
        {"task": "t/task", "patch": f"patches/{n}.patch", "repo": "t/source", "run_id": n}
        for n in "abc"
    ]
    (tmp_path / "jobs.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return tmp_path


@pytest.mark.slow
def test_a_batch_writes_its_summary_whole_and_replaces_a_planted_link(world: Path) -> None:
    results = world / "results"
    results.mkdir(mode=0o700)
    target = world / "elsewhere.json"
    target.write_text("untouched")
    (results / "batch.json").symlink_to(target)
    before = datetime.now(UTC)
    report = run_batch(
        world / "jobs.jsonl",
        results,
        workers=2,
        label="nightly",
        grade=verdict_grade,
        reporter=Quiet(),
    )
    assert report.exit_code == 0
    assert target.read_text() == "untouched"
    assert not (results / "batch.json").is_symlink()
    doc = BatchSummary.model_validate_json((results / "batch.json").read_bytes())
    run = "shell-001/unknown/unknown/"
    assert doc.runs.passed == (run + "a",)
    assert doc.runs.failed == (run + "b",)
    assert doc.runs.cached == (run + "c",)
    assert doc.counts.model_dump() == {
        "passed": 1,
        "failed": 1,
        "error": 0,
        "cached": 1,
        "skipped": 0,
    }
    jobs = (world / "jobs.jsonl").read_bytes()
    assert doc.jobs.path == str(world / "jobs.jsonl")
    assert doc.jobs.count == 3
    assert doc.jobs.sha256 == hashlib.sha256(jobs).hexdigest()
    assert (doc.label, doc.engine, doc.workers, doc.interrupted) == ("nightly", "local", 2, False)
    assert doc.containment
    assert before <= doc.started_at <= doc.ended_at <= datetime.now(UTC)
    assert sorted(p.name for p in results.iterdir()) == ["batch.json", "shell-001"]
    again = run_batch(
        world / "jobs.jsonl", results, workers=1, grade=verdict_grade, reporter=Quiet()
    )
    assert again.tally.skipped == 3
    doc = BatchSummary.model_validate_json((results / "batch.json").read_bytes())
    assert doc.label is None
    assert doc.runs.skipped == tuple(run + n for n in "abc")
