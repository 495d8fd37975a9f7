"""The archive never holds the grade back: `result.json` is written before it finishes.

The source tree holds a large sparse file, so that its archive takes seconds; the test stops
the archive's child process as soon as it appears and sees `result.json` written while the
archive is not, through the evaluator and through the daemon's grading client. At the time
limit, the archive is stopped and leaves nothing, with one note.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from returns.result import Success

from interpreters.daemon.app import create_app
from interpreters.daemon.client import DaemonClient
from interpreters.daemon.remote import RemoteGrading
from interpreters.daemon.service import Service
from interpreters.real.resultsfolder.writer import ResultsWriter
from ssegrade import EvaluationResult, RuntimeResult, TimeLimitReached
from ssegrade.internal.effects import Archive, WriteResult
from ssegrade.internal.program import GradeOptions, grade
from ssegrade.internal.run import Deadline, run
from ssegrade.internal.verdict import Crashed, escaped
from ssegrade.protocol import LEVELS
from ssegrade.testing import FakeWorld
from tests.support.fakedaemon import FOLDER, TASK, FakeBackend, SyncASGI
from tests.support.realtask import git, make_task, ssegrade
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow

SPARSE = 512 << 20
"""A file of zeros the archive reads for seconds, though it takes no room."""


def archive_child(parent: int) -> int | None:
    """The archive's child process of `parent`, if it runs."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) != parent:
                continue
            if b"_archive_child" in Path(f"/proc/{entry}/cmdline").read_bytes():
                return int(entry)
        except (OSError, ValueError, IndexError):
            continue
    return None


def kill_archive(pid: int | None) -> None:
    """Kill `pid` if it is still an archive's child process (never another process)."""
    try:
        if pid is not None and b"_archive_child" in Path(f"/proc/{pid}/cmdline").read_bytes():
            os.kill(pid, signal.SIGKILL)
    except (OSError, ProcessLookupError):
        pass


def sparse(path: Path) -> None:
    with open(path, "wb") as out:
        out.truncate(SPARSE)


def test_evaluate_writes_the_grade_before_the_archive(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    done = ssegrade("baseline", "--source", str(task.source), "--into", str(task.baseline))
    assert done.returncode == 0, done.stderr
    task.set_value("fixed")
    git(task.source, "commit", "-qam", "fix")
    sparse(task.source / "out.txt")  # ignored: archived, never captured
    command = [sys.executable, "-c", "from interpreters.cli.entry import main; main()", "evaluate"]
    places = ["--task", str(task.task), "--source", str(task.source)]
    places += ["--baseline", str(task.baseline), "--results", str(task.results)]
    grading = subprocess.Popen(
        [*command, *places], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    child: int | None = None
    try:
        found = wait_until(lambda: archive_child(grading.pid), "the archive process", 120, 0.005)
        assert isinstance(found, int)
        child = found
        os.kill(child, signal.SIGSTOP)
        result = task.results / "result.json"
        wait_until(lambda: result.exists() or grading.poll() is not None, "result.json", 120, 0.005)

        assert result.exists(), grading.communicate()
        assert not (task.results / "source.tar.gz").exists()
        assert grading.poll() is None  # the archive is finished before the command ends
        assert json.loads(result.read_bytes())["patch_result"]["status"] == "passed"

        os.kill(child, signal.SIGCONT)
        out, err = grading.communicate(timeout=300)
    finally:
        if grading.poll() is None:
            grading.kill()
            grading.wait()
        kill_archive(child)
    assert grading.returncode == 0, err
    assert out.strip() == "passed"
    with tarfile.open(task.results / "source.tar.gz") as archived:
        assert archived.getmember("source/out.txt").size == SPARSE


def test_through_the_daemon_the_grade_is_written_before_the_archive(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "kept.txt").write_text("kept\n")
    sparse(source / "zeros.img")
    results = tmp_path / "results"
    (results / "logs").mkdir(parents=True)
    writer = ResultsWriter(source, results)
    backend = FakeBackend(graded=FakeWorld(patch=b"diff --git a/x b/x\n"))
    service = Service(
        task=TASK, folder=FOLDER, level=LEVELS[2], **backend.ports(), version="1", script_timeout=60
    )
    deadline = Deadline.starting(3600, time.monotonic)
    client = DaemonClient("in-process", transport=SyncASGI(create_app(service, "admin")))
    graded: list[object] = []

    def grading() -> None:
        with client:
            remote = RemoteGrading(client, writer, deadline)
            graded.append(run(grade(GradeOptions(task=TASK, folder=FOLDER)), remote, deadline))

    thread = threading.Thread(target=grading)
    thread.start()
    try:
        child = wait_until(lambda: archive_child(os.getpid()), "the archive process", 120, 0.005)
        assert isinstance(child, int)
        os.kill(child, signal.SIGSTOP)
        wait_until((results / "result.json").exists, "result.json", 120, 0.005)

        assert not (results / "source.tar.gz").exists()
        assert thread.is_alive()  # waiting for the archive

        os.kill(child, signal.SIGKILL)
        thread.join(60)
    finally:
        if thread.is_alive():
            kill_archive(archive_child(os.getpid()))
            thread.join()
    assert not thread.is_alive()
    assert graded
    assert json.loads((results / "result.json").read_bytes())["patch_result"]["status"] == "passed"
    notes = (results / "logs" / "notes.log").read_text()
    assert "source.tar.gz not written: could not archive" in notes
    kept = ["checks.jsonl", "guard.json", "logs", "result.json"]  # the guard runs after it
    assert sorted(p.name for p in results.iterdir()) == kept


def _said(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The lines the results writer said (its log records)."""
    return [
        r.getMessage() for r in caplog.records if r.name == "interpreters.real.resultsfolder.writer"
    ]


def _writer(tmp_path: Path, check: Callable[[], None]) -> tuple[ResultsWriter, Path]:
    source = tmp_path / "source"
    source.mkdir()
    (source / "kept.txt").write_text("kept\n")
    with open(source / "zeros.img", "wb") as out:
        out.truncate(4 << 30)  # far more than the archive writes before it is stopped
    results = tmp_path / "results"
    (results / "logs").mkdir(parents=True)
    return ResultsWriter(source, results, check=check), results


RESULT = EvaluationResult(patch_result=escaped(Crashed("stopped")), runtime_result=RuntimeResult())


def test_an_archive_grading_did_not_ask_for_is_stopped_without_a_note(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="interpreters")
    writer, results = _writer(tmp_path, lambda: None)
    writer.start_archive()  # as the evaluator does at the end of the capture

    writer(WriteResult(RESULT))  # the time limit came before the archive was asked for

    assert sorted(p.name for p in results.iterdir()) == ["logs", "result.json"]
    assert _said(caplog) == []


def test_the_time_limit_stops_the_archive_with_one_note(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="interpreters")

    def spent() -> None:
        raise TimeLimitReached(3)

    writer, results = _writer(tmp_path, spent)
    assert writer(Archive()) == Success(None)

    writer(WriteResult(RESULT))

    assert sorted(p.name for p in results.iterdir()) == ["logs", "result.json"]
    said = _said(caplog)
    assert said == ["source.tar.gz not written: the time limit of 3s is spent"]
    assert (results / "logs" / "notes.log").read_text() == f"{said[0]}\n"
