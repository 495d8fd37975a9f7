"""A container's staging folder taken into the driver's run folder (`interpreters.engine.
ingest`): what a hostile container leaves there (a link, a huge file, a file no run folder
holds, no grade) is refused, bounded or an `error` of kind `infrastructure`; never followed."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.batch.landing import Arrival
from interpreters.engine.ingest import ingest
from interpreters.real.resultsfolder.holding import Hold
from interpreters.real.resultsfolder.runs import RunFolders
from ssegrade import EvaluationResult, RuntimeResult
from ssegrade.batch import RESULTS_AT

RESULT = {
    "patch_result": {"status": "failed", "error_msg": "PoC failed"},
    "runtime_result": {"agent_duration": 3},
}


@pytest.fixture
def place() -> Iterator[tuple[Path, Hold, RunFolders]]:
    """A staging folder with a run in it, and a held run folder to ingest it into."""
    top = Path(tempfile.mkdtemp(prefix="ssegrade-ingest-"))
    staging = top / "staging"
    (staging / "run" / "logs").mkdir(parents=True)
    folders = RunFolders(top / "results")
    held = folders.prepare(("t", "m", "a", "r"))
    try:
        yield staging, held, folders
    finally:
        held.release()
        folders.close()
        shutil.rmtree(top, ignore_errors=True)


def _graded(staging: Path) -> None:
    run = staging / "run"
    (run / "result.json").write_text(json.dumps(RESULT))
    (run / "logs" / "03-build.log").write_text("built\n")
    log = f"{RESULTS_AT}/logs/03-build.log"
    (run / "checks.jsonl").write_text(json.dumps({"name": "build", "log_file": log}) + "\n")


def test_a_whole_grading_arrives_with_its_log_paths_said_as_the_drivers(
    place: tuple[Path, Hold, RunFolders],
) -> None:
    staging, held, _ = place
    _graded(staging)
    result = ingest(staging, Arrival(held, RuntimeResult()), str(held.path), 1 << 20)
    assert isinstance(result, EvaluationResult)
    assert result.patch_result.status == "failed"
    assert (held.path / "logs" / "03-build.log").read_text() == "built\n"
    record = json.loads((held.path / "checks.jsonl").read_text())
    assert record["log_file"] == f"{held.path}/logs/03-build.log"


def test_a_result_json_that_is_a_link_is_never_followed(
    place: tuple[Path, Hold, RunFolders],
) -> None:
    # The attack: the container links its result to a file of the host's it wants read
    # (or believed): the driver takes no link, so there is no grade.
    staging, held, _ = place
    secret = staging.parent / "secret.json"
    secret.write_text(json.dumps({**RESULT, "patch_result": {"status": "passed"}}))
    (staging / "run" / "result.json").symlink_to(secret)
    (staging / "run" / "logs" / "x.log").symlink_to("/etc/shadow")
    result = ingest(staging, Arrival(held, RuntimeResult()), str(held.path), 1 << 20)
    assert result == "no result.json"
    assert not (held.path / "logs" / "x.log").exists()


def test_a_run_folder_that_is_a_link_is_refused(place: tuple[Path, Hold, RunFolders]) -> None:
    staging, held, _ = place
    elsewhere = staging.parent / "elsewhere"
    shutil.move(staging / "run", elsewhere)
    (elsewhere / "result.json").write_text(json.dumps(RESULT))
    (staging / "run").symlink_to(elsewhere)
    result = ingest(staging, Arrival(held, RuntimeResult()), str(held.path), 1 << 20)
    assert isinstance(result, str)
    assert result.startswith("no results folder")


def test_a_huge_file_is_taken_no_further_than_the_limit(
    place: tuple[Path, Hold, RunFolders],
) -> None:
    # The attack: a log as big as the container can write, to fill the driver's disk.
    staging, held, _ = place
    _graded(staging)
    with open(staging / "run" / "logs" / "huge.log", "wb") as huge:
        huge.truncate(64 << 20)
    arrival = Arrival(held, RuntimeResult())
    result = ingest(staging, arrival, str(held.path), 8 << 20)
    assert result == f"its results hold more than {8 << 20} bytes"
    arrival.close()
    assert arrival.received <= 8 << 20
    sizes = [p.stat().st_size for p in held.path.rglob("*") if p.is_file()]
    assert sum(sizes) <= 8 << 20


def test_a_file_no_run_folder_holds_is_refused(place: tuple[Path, Hold, RunFolders]) -> None:
    staging, held, _ = place
    _graded(staging)
    (staging / "run" / "summary.json").write_text("{}")  # the driver's own, never the node's
    result = ingest(staging, Arrival(held, RuntimeResult()), str(held.path), 1 << 20)
    assert isinstance(result, str)
    assert result.startswith("refused: ")


def test_no_grade_and_a_false_grade_are_errors_of_the_infrastructure(
    place: tuple[Path, Hold, RunFolders],
) -> None:
    staging, held, _ = place
    arrival = Arrival(held, RuntimeResult(agent_duration=3))
    assert ingest(staging, arrival, str(held.path), 1 << 20) == "no result.json"
    (staging / "run" / "result.json").write_text('{"patch_result": {"status": "great"}}')
    said = ingest(staging, arrival, str(held.path), 1 << 20)
    assert isinstance(said, str)
    assert said.startswith("result.json is not a result")
    lost = arrival.lost(f"the container exited 0 without a grade: {said}")
    assert lost.patch_result.status == "error"
    assert lost.runtime_result.error_kind == "infrastructure"
    assert lost.runtime_result.agent_duration == 3
    on_disk = json.loads((held.path / "result.json").read_text())
    assert on_disk["patch_result"]["status"] == "error"
    assert os.listdir(held.path / "logs") == []
