"""`batch.json`: the pure document (`ssegrade.batch._summary`) as properties, the rule of
which finished runs are graded again, and the file real batches write: one answer for the
whole results folder (resumes included, a cached run counted with the outcome it carries,
rebuilt from the run folders after a crash), written atomically, at the end and on
interrupt, never through a link planted in its place."""

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
from ssegrade.batch import (
    OUTCOMES,
    BatchCommand,
    BatchSummary,
    JobsFile,
    batch_summary,
    next_attempt,
)
from ssegrade.batch._summary import Outcome, RunState
from tests.support.batchkit import Quiet, saying, verdict_grade
from tests.support.realtask import make_task

names = st.text("abc/", min_size=1, max_size=8)
outcomes = st.sampled_from([o for o in OUTCOMES if o != "not_graded"])
times = st.datetimes(timezones=st.just(UTC), min_value=datetime(2000, 1, 1))
START = datetime(2026, 11, 30, 10, tzinfo=UTC)


def command(jobs: str = "jobs.jsonl", start: datetime = START, **extra: Any) -> BatchCommand:
    return BatchCommand(
        ssegrade=extra.get("version", "1.2.3"),
        engine=extra.get("engine", "local"),
        workers=extra.get("workers", 2),
        containment=extra.get("containment", "full"),
        jobs=jobs,
        started_at=start,
        ended_at=start + timedelta(seconds=5),
        interrupted=extra.get("interrupted", False),
    )


def jobs_file(runs: list[str], path: str = "jobs.jsonl") -> JobsFile:
    return JobsFile(path=path, sha256="f" * 64, count=len(runs), runs=tuple(runs))


@given(
    st.dictionaries(names, st.tuples(outcomes, st.booleans()), max_size=30),
    st.lists(names, max_size=10),
    st.none() | st.text(max_size=20),
    st.booleans(),
)
def test_every_run_is_counted_once_with_the_outcome_it_carries(
    graded: dict[str, tuple[Outcome, bool]],
    pending: list[str],
    label: str | None,
    interrupted: bool,
) -> None:
    """Property: every graded run is in the list of its outcome (a cached one too), every run
    of the jobs file without a grade is not yet graded, each counted once; the document
    reads back as written; a command grades what is left, and only then."""
    states = [RunState(folder=f, outcome=o, cached=c) for f, (o, c) in graded.items()]
    runs = [*graded, *pending]
    doc = batch_summary(
        previous=None,
        command=command(interrupted=interrupted),
        jobs=jobs_file(runs),
        label=label,
        states=states,
        results="out dir",
    )
    for kind in OUTCOMES:
        listed = getattr(doc.runs, kind)
        if kind == "not_graded":
            assert set(listed) == set(pending) - set(graded)
        else:
            assert set(listed) == {f for f, (o, _) in graded.items() if o == kind}
        assert getattr(doc.counts, kind) == len(listed)
    assert set(doc.cached) == {f for f, (_, c) in graded.items() if c}
    assert doc.graded == len(graded)
    assert doc.resume == (
        (
            "ssegrade batch jobs.jsonl --results 'out dir'"
            + (f" --label {_q(label)}" if label else ""),
        )
        if set(pending) - set(graded)
        else ()
    )
    assert BatchSummary.model_validate_json(doc.to_json()) == doc
    assert (doc.label, doc.interrupted) == (label, interrupted)


def _q(text: str) -> str:
    import shlex

    return shlex.quote(text)


@given(st.lists(st.tuples(names, outcomes), min_size=1, max_size=10), times, times)
def test_a_second_command_keeps_the_first_ones_history(
    graded: list[tuple[str, Outcome]], first: datetime, second: datetime
) -> None:
    """Property: a resume (or another jobs file) adds its command to the folder's, keeps
    every jobs file (one at the same path replaced), every version, engine and containment
    once, and spans from the first start to the last end; the label stays unless renamed."""
    states = [RunState(folder=f, outcome=o) for f, o in graded]
    runs = [f for f, _ in graded]
    one = batch_summary(
        previous=None,
        command=command(start=first, version="1.0", engine="ray"),
        jobs=jobs_file(runs),
        label="nightly",
        states=[],
        results="out",
    )
    assert one.counts.not_graded == len(set(runs))
    two = batch_summary(
        previous=one,
        command=command("more.jsonl", start=second, version="1.1", containment="weak"),
        jobs=jobs_file([], "more.jsonl"),
        label=None,
        states=states,
        results="out",
    )
    assert [c.ssegrade for c in two.commands] == ["1.0", "1.1"]
    assert (two.ssegrade, two.engines, two.containment) == (
        ("1.0", "1.1"),
        ("ray", "local"),
        ("full", "weak"),
    )
    assert [f.path for f in two.jobs] == ["jobs.jsonl", "more.jsonl"]
    assert two.started_at == min(first, second)
    assert two.ended_at == max(first, second) + timedelta(seconds=5)
    assert (two.label, two.counts.not_graded, two.graded) == ("nightly", 0, len(set(runs)))
    assert two.resume == ()


@given(st.lists(st.tuples(names, outcomes), min_size=1, max_size=10), st.sampled_from(OUTCOMES))
def test_a_document_whose_counts_disagree_with_its_runs_is_refused(
    graded: list[tuple[str, Outcome]], kind: Outcome
) -> None:
    doc = batch_summary(
        previous=None,
        command=command(),
        jobs=jobs_file([]),
        label=None,
        states=[RunState(folder=f, outcome=o) for f, o in graded],
        results="out",
    )
    raw = json.loads(doc.to_json())
    raw["counts"][kind] += 1
    with pytest.raises(ValidationError, match=f"counts.{kind} is not the number of runs"):
        BatchSummary.model_validate_json(json.dumps(raw))


def test_times_without_a_zone_are_refused() -> None:
    doc = batch_summary(
        previous=None, command=command(), jobs=jobs_file([]), label=None, states=[], results="o"
    )
    raw = json.loads(doc.to_json())
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


RUN = "shell-001/unknown/unknown/"


def read_summary(results: Path) -> BatchSummary:
    return BatchSummary.model_validate_json((results / "batch.json").read_bytes())


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
    doc = read_summary(results)
    assert doc.runs.passed == (RUN + "a", RUN + "c")
    assert doc.runs.failed == (RUN + "b",)
    assert doc.cached == (RUN + "c",)
    assert doc.counts.model_dump() == {
        "passed": 2,
        "flagged": 0,
        "failed": 1,
        "error": 0,
        "not_graded": 0,
    }
    jobs = (world / "jobs.jsonl").read_bytes()
    (listed,) = doc.jobs
    assert (listed.path, listed.count) == (str(world / "jobs.jsonl"), 3)
    assert listed.sha256 == hashlib.sha256(jobs).hexdigest()
    (ran,) = doc.commands
    assert (doc.label, ran.engine, ran.workers, ran.interrupted) == ("nightly", "local", 2, False)
    assert doc.containment == (ran.containment,)
    assert before <= doc.started_at <= doc.ended_at <= datetime.now(UTC)
    assert doc.resume == ()
    assert sorted(p.name for p in results.iterdir()) == ["batch.json", "shell-001"]


@pytest.mark.slow
def test_a_resume_answers_for_the_whole_folder(world: Path) -> None:
    """The attack of an operator's day: after a resume that grades nothing, batch.json still
    says what the folder holds (it said `0 passed, … 3 skipped`), counting the cached run
    with the outcome it carries; both commands are kept, the label too."""
    results = world / "results"
    run_batch(world / "jobs.jsonl", results, label="nightly", grade=verdict_grade, reporter=Quiet())
    again = run_batch(
        world / "jobs.jsonl", results, workers=1, grade=verdict_grade, reporter=Quiet()
    )
    assert again.tally.skipped == 3
    doc = read_summary(results)
    assert doc.label == "nightly"
    assert doc.runs.passed == (RUN + "a", RUN + "c")
    assert doc.runs.failed == (RUN + "b",)
    assert doc.cached == (RUN + "c",)
    assert len(doc.commands) == 2
    assert len(doc.jobs) == 1


@pytest.mark.slow
def test_a_crash_loses_nothing_that_was_graded(world: Path) -> None:
    """A batch killed before writing batch.json (here: the file gone, and one run never
    graded): the next command that writes there rebuilds the answer from the run folders'
    summaries, and names the run not yet graded with the command that grades it."""
    results = world / "results"
    run_batch(world / "jobs.jsonl", results, grade=verdict_grade, reporter=Quiet())
    (results / "batch.json").unlink()
    lines = (world / "jobs.jsonl").read_text().splitlines()
    extra = json.loads(lines[0]) | {"run_id": "d", "patch": "patches/b.patch"}
    other = world / "other.jsonl"
    other.write_text(json.dumps(extra) + "\n")
    interrupted = world / "left.jsonl"
    interrupted.write_text(json.dumps(extra | {"run_id": "e"}) + "\n")
    run_batch(other, results, grade=verdict_grade, reporter=Quiet())
    doc = read_summary(results)
    assert doc.runs.passed == (RUN + "a", RUN + "c")
    assert doc.runs.failed == (RUN + "b", RUN + "d")
    assert doc.counts.not_graded == 0
    planned = JobsFile(path=str(interrupted), sha256="0" * 64, count=1, runs=(RUN + "e",))
    left = batch_summary(
        previous=doc,
        command=command(str(interrupted), interrupted=True),
        jobs=planned,
        label=None,
        states=[RunState(folder=f, outcome=o) for o in OUTCOMES for f in getattr(doc.runs, o)],
        results=str(results),
    )
    assert left.runs.not_graded == (RUN + "e",)
    assert left.resume == (f"ssegrade batch {interrupted} --results {results}",)
