"""One run folder, one grading: a folder is held by the grading writing it, `--force` leaves no
earlier grade that looks valid whenever it is killed, a resumed batch never writes where a live
grading writes, and no job's run folder lies inside another's.

The attacks as they were found: kill -9 during `evaluate --force`; kill -9 of `batch`, then a
resume while its worker still grades; a model `m/a/r` with the agent `logs`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interpreters.batch import BadJobs, run_batch
from ssegrade.batch import nested_problems
from tests.support.batchkit import Quiet, saying, verdict_grade
from tests.support.realtask import RealTask, fix_to, make_task
from tests.support.scriptmarks import mark, marked
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-c", "from interpreters.cli.entry import main; main()"]

# The build waits for `release` in $MARKS when the tree says VALUE=hold; it marks itself
# `$MARKS/started` (`tests.support.scriptmarks`: a script writes nothing the host sees).
HOLDING_BUILD = f"""#!/bin/sh
. ./lib.sh
if [ "$VALUE" = hold ]; then
    {mark("$MARKS/started")}
    while [ ! -e "$MARKS/release" ]; do sleep 0.05; done
fi
echo "$VALUE" > out.txt
"""
# The functional test marks itself `$MARKS/ready` while it runs, then waits for `release`.
HOLDING_TEST = f"""#!/bin/sh
if [ -e tests/intent.sh ]; then sh tests/intent.sh; exit; fi
{mark("$MARKS/ready")}
while [ ! -e "$MARKS/release" ]; do sleep 0.05; done
for t in tests/*.sh; do sh "$t" || exit 1; done
"""


MARKED = ("--script-env", "MARKS")
"""Scripts get `MARKS` only when it is named (it is on no allow-list)."""


def carrying(marks: Path) -> list[int]:
    """The processes whose environment names `marks`: what a test started (batch workers move
    to process groups of their own, and outlive a driver killed with -9)."""
    entry = f"MARKS={marks}".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if entry in environ.split(b"\0"):
            found.append(int(pid))
    return found


@pytest.fixture
def marks() -> Iterator[Path]:
    """The name scripts mark themselves with to say how far they got, and the folder where the
    test says `release` (root's: scripts see it read-only, as it is). At the end, whatever
    still carries it is killed."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-hold-", dir="/var/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for pid in carrying(folder):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def started(marks: Path) -> Iterator[list[subprocess.Popen[str]]]:
    """Processes a test starts, each in a session of its own (killed with the marks)."""
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for pid in carrying(marks):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for proc in procs:
        proc.communicate(timeout=60)


def launch(procs: list[subprocess.Popen[str]], marks: Path, *args: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [*CLI, *args, *MARKED],
        env={**os.environ, "MARKS": str(marks)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    procs.append(proc)
    return proc


def held(lock: Path) -> bool:
    """Whether a live process holds the lock file `lock` (missing: no)."""
    try:
        fd = os.open(lock, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def graded_folder(root: Path) -> Path:
    """A results folder holding a `passed` grade, and many logs to clear."""
    folder = root / "results"
    (folder / "logs").mkdir(parents=True, mode=0o700)
    folder.chmod(0o700)
    grade = {"patch_result": {"status": "passed"}, "runtime_result": {}}
    (folder / "result.json").write_text(json.dumps(grade))
    for name in ("checks.jsonl", "final.patch", "commits.log"):
        (folder / name).write_text("earlier\n")
    for index in range(20_000):
        (folder / "logs" / f"{index:05d}.log").write_bytes(b"")
    return folder


def test_evaluate_force_killed_at_any_moment_leaves_no_earlier_grade_looking_valid(
    tmp_path: Path, marks: Path, started: list[subprocess.Popen[str]]
) -> None:
    made = make_task(tmp_path / "t")
    made.script("build.sh", HOLDING_BUILD)
    (tmp_path / "hold.patch").write_text(fix_to("hold"))
    folder = graded_folder(tmp_path)
    proc = launch(
        started,
        marks,
        "evaluate",
        "--task",
        str(made.task),
        "--repo",
        str(made.source),
        "--patch",
        str(tmp_path / "hold.patch"),
        "--results",
        str(folder),
        "--force",
    )
    while (folder / "checks.jsonl").exists():  # the clearing has not begun
        assert proc.poll() is None, proc.communicate()
    # Whatever the clearing has removed so far, the earlier grade went first.
    assert not (folder / "result.json").exists()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert (folder / ".incomplete").exists()
    assert not (folder / "result.json").exists()


def test_a_folder_a_live_grading_writes_is_refused_even_with_force(
    tmp_path: Path, marks: Path, started: list[subprocess.Popen[str]]
) -> None:
    made = make_task(tmp_path / "t")
    made.script("build.sh", HOLDING_BUILD)
    (tmp_path / "hold.patch").write_text(fix_to("hold"))
    (tmp_path / "empty.patch").write_bytes(b"")
    results = tmp_path / "results"
    common = ["--task", str(made.task), "--repo", str(made.source), "--results", str(results)]
    first = launch(started, marks, "evaluate", *common, "--patch", str(tmp_path / "hold.patch"))
    wait_until(lambda: bool(marked(marks / "started")) or first.poll() is not None, "build", 120)
    second = subprocess.run(
        [*CLI, "evaluate", *common, "--patch", str(tmp_path / "empty.patch"), "--force", *MARKED],
        env={**os.environ, "MARKS": str(marks)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert second.returncode == 2, second.stderr
    assert second.stderr.strip() == (
        f"ssegrade: error: results folder {results}: being written by another grading"
    )
    (marks / "release").touch()
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert out.startswith("failed: PoC failed")  # its own grade, whole
    records = [json.loads(line) for line in (results / "checks.jsonl").read_text().splitlines()]
    names = ["prepare", "build", "poc", "poc", "function_test", "intent_test", "guard"]
    assert [r["name"] for r in records] == names


def holding_batch(root: Path) -> tuple[RealTask, Path]:
    made = make_task(root / "t")
    made.script("test.sh", HOLDING_TEST)
    (root / "fix.patch").write_text(fix_to("fixed"))
    jobs = root / "jobs.jsonl"
    job = {"task": "t/task", "patch": "fix.patch", "repo": "t/source", "run_id": "r1"}
    jobs.write_text(json.dumps(job) + "\n")
    return made, jobs


def test_a_batch_killed_then_resumed_leaves_each_run_folder_to_one_grading(
    tmp_path: Path, marks: Path, started: list[subprocess.Popen[str]]
) -> None:
    _, jobs = holding_batch(tmp_path)
    results = tmp_path / "results"
    run = results / "shell-001" / "unknown" / "unknown" / "r1"
    first = launch(started, marks, "batch", str(jobs), "--results", str(results), "--workers", "1")
    wait_until(lambda: len(marked(marks / "ready")) == 1, "the first grading", 120)
    ready = set(marked(marks / "ready"))
    first.send_signal(signal.SIGKILL)  # the driver alone: its worker and scripts die with it
    first.wait()
    resumed = launch(started, marks, "batch", str(jobs), "--results", str(results))
    wait_until(
        lambda: resumed.poll() is not None or bool(set(marked(marks / "ready")) - ready),
        "the resumed batch to grade or to stop",
        120,
    )
    (marks / "release").touch()
    _, err = resumed.communicate(timeout=300)
    assert "Traceback" not in err
    wait_until(
        lambda: not carrying(marks) and not held(run / ".lock"),
        "every grading begun to end or die",
        120,
    )
    again = subprocess.run(
        [*CLI, "batch", str(jobs), "--results", str(results), *MARKED],
        env={**os.environ, "MARKS": str(marks)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    records = [json.loads(line) for line in (run / "checks.jsonl").read_text().splitlines()]
    checks = [(r["name"], r["poc"]) for r in records]
    assert len(checks) == len(set(checks)) == 7, checks  # one grading's records, no more
    assert not (run / ".incomplete").exists()
    assert json.loads((run / "summary.json").read_bytes())["patch_result"]["status"] == "passed"


def test_a_resumed_batch_skips_a_run_folder_a_live_grading_writes(
    tmp_path: Path, marks: Path, started: list[subprocess.Popen[str]]
) -> None:
    made = make_task(tmp_path / "t")
    made.script("build.sh", HOLDING_BUILD)
    (tmp_path / "hold.patch").write_text(fix_to("hold"))
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(
        json.dumps({"task": "t/task", "patch": "hold.patch", "repo": "t/source", "run_id": "r"})
        + "\n"
    )
    results = tmp_path / "results"
    run = results / "shell-001" / "unknown" / "unknown" / "r"
    run.mkdir(parents=True, mode=0o700)
    for folder in (results, *run.parents):
        if results in (folder, *folder.parents):
            folder.chmod(0o700)
    (run / ".incomplete").touch()  # as a batch leaves a run it was killed in
    live = launch(
        started,
        marks,
        "evaluate",
        "--task",
        str(made.task),
        "--repo",
        str(made.source),
        "--patch",
        str(tmp_path / "hold.patch"),
        "--results",
        str(run),
        "--force",
    )
    wait_until(lambda: bool(marked(marks / "started")) or live.poll() is not None, "build", 120)
    reporter = Quiet()
    report = run_batch(jobs, results, workers=1, grade=verdict_grade, reporter=reporter)
    assert [o.outcome for o in report.jobs] == ["held"]
    assert report.exit_code == 1
    assert "held shell-001/unknown/unknown/r (being written by another grading)" in reporter.lines
    (marks / "release").touch()
    _, err = live.communicate(timeout=300)
    assert live.returncode == 0, err
    assert not (run / "summary.json").exists()  # the batch wrote nothing there


def test_a_run_folder_inside_another_jobs_run_folder_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    make_task(tmp_path / "t")
    (tmp_path / "p.patch").write_text(saying("fixed"))
    base = {"task": "t/task", "patch": "p.patch", "repo": "t/source"}
    lines = [
        {**base, "model": "m", "agent": "a", "run_id": "r"},
        {**base, "model": "m/a/r", "agent": "logs", "run_id": "x"},
    ]
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    results = tmp_path / "results"
    with pytest.raises(BadJobs) as refused:
        run_batch(jobs, results, workers=2, grade=verdict_grade, reporter=Quiet())
    assert refused.value.problems == (
        f"{jobs}:2: run folder shell-001/m/a/r/logs/x lies inside the run folder of line 1 "
        "(shell-001/m/a/r)",
    )
    assert not (results / "shell-001").exists()
    # Nor inside a run folder an earlier batch left.
    jobs.write_text(json.dumps(lines[0]) + "\n")
    assert run_batch(jobs, results, workers=1, grade=verdict_grade, reporter=Quiet()).exit_code == 0
    jobs.write_text(json.dumps(lines[1]) + "\n")
    with pytest.raises(BadJobs, match="would lie inside the run folder"):
        run_batch(jobs, results, workers=1, grade=verdict_grade, reporter=Quiet())
    assert sorted(os.listdir(results / "shell-001" / "m" / "a" / "r")) == [
        ".lock",
        "checks.jsonl",
        "final.patch",
        "logs",
        "result.json",
        "summary.json",
    ]


folder_parts = st.lists(st.sampled_from("abc"), min_size=1, max_size=4).map(tuple)


@given(st.lists(folder_parts, max_size=8))
def test_a_line_is_refused_iff_its_folder_lies_inside_another_lines(
    folders: list[tuple[str, ...]],
) -> None:
    numbered = list(enumerate(folders, start=1))
    flagged = {p.line for p in nested_problems(numbered)}
    for line, parts in numbered:
        inside = any(other == parts[: len(other)] and other != parts for other in folders)
        assert (line in flagged) == inside
