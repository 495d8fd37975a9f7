"""Every entry point grades through the one set-up, `interpreters.app.setup.grading_setup`.

A grading is traced from each entry point (`evaluate`, the daemon, `verify`, `batch`, and the
Python API) to the set-up by the DEBUG record the set-up logs when it has made a grading
ready; `-v` shows DEBUG records, on the command's stderr or its worker's, and nothing else
logs that line. Beside it: the set-up refuses input before any grading starts, and what it
makes goes when it ends.
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from interpreters import grade_patch
from interpreters.app.setup import InputError, Sources, grading_setup, load_inputs
from interpreters.real.runner import resolve_runner
from tests.support.daemons import running_daemon
from tests.support.realtask import FIX, RealTask, make_task, ssegrade

pytestmark = pytest.mark.slow

SET_UP = re.compile(r"grading set up in (\S+): grading repo (\S+)$")
"""The DEBUG line of `grading_setup`: its scratch folder and the grading repo."""


def _set_ups(text: str, prefix: str = "") -> list[tuple[str, str]]:
    """The set-ups a stream of log lines says happened (each line after `prefix`)."""
    found = []
    for line in text.splitlines():
        if line.startswith(prefix) and (match := SET_UP.search(line[len(prefix) :])):
            found.append((match[1], match[2]))
    return found


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ssegrade-setup-") as folder:
        Path(folder).chmod(0o755)
        yield Path(folder)


def _task(root: Path) -> RealTask:
    made = make_task(root, config={"files": {"poc": ["pocs/poc1.bin"], "patch": "fix.diff"}})
    (made.task / "fix.diff").write_text(FIX)
    return made


def test_evaluate_grades_through_the_set_up(workdir: Path) -> None:
    made = _task(workdir)
    recorded = ssegrade("baseline", "--source", str(made.source), "--into", str(made.baseline))
    assert recorded.returncode == 0, recorded.stderr
    made.set_value("fixed")
    common = [*("--task", str(made.task), "--source", str(made.source))]
    common += ["--baseline", str(made.baseline), "--results", str(made.results)]
    done = ssegrade("evaluate", *common, "-v")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "passed\n"  # stdout: the verdict alone
    ((_scratch, repo),) = _set_ups(done.stderr)
    assert repo == str(made.baseline / "repo")  # the tree the baseline keeps
    assert "build: passed (" in done.stderr
    quiet = ssegrade("evaluate", *common, "-q", "--force")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "passed\n", "")


def test_the_daemon_grades_through_the_set_up(workdir: Path) -> None:
    made = _task(workdir)
    with running_daemon(made.task, made.source, made.results, "-v") as daemon:
        made.set_value("fixed")
        graded = ssegrade(
            "evaluate",
            "--task",
            str(made.task),
            "--source",
            str(made.source),
            "--results",
            str(made.results),
            "--daemon",
            str(daemon.admin),
            "-v",
        )
        assert graded.returncode == 0, graded.stderr
        assert graded.stdout == "passed\n"
        assert _set_ups(graded.stderr) == []  # grading through the daemon: the daemon set it up
        said = daemon.output()
    ((_scratch, repo),) = _set_ups(said, "ssegrade daemon: ")
    assert Path(repo).name == "repo"  # the copy of the tree the baseline keeps, recorded now


def test_verify_grades_each_control_through_the_set_up(workdir: Path) -> None:
    made = _task(workdir)
    results = workdir / "verified"
    repo = ("--repo", str(made.source))
    done = ssegrade("verify", str(made.task), *repo, "--results", str(results), "-v", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    for control in ("empty", "reference"):
        run = results / "shell-001" / control / "1"
        ((_scratch, graded),) = _set_ups(done.stderr, f"{run}: ")
        assert graded == str(made.source)


def test_batch_grades_each_job_through_the_set_up(workdir: Path) -> None:
    made = _task(workdir)
    (workdir / "fixed.patch").write_text(FIX)
    job = {"task": str(made.task), "patch": "fixed.patch", "repo": str(made.source)}
    jobs = workdir / "jobs.jsonl"
    jobs.write_text(json.dumps({**job, "run_id": "a"}) + "\n" + json.dumps({**job, "run_id": "b"}))
    results = workdir / "results"
    done = ssegrade("batch", str(jobs), "--results", str(results), "--no-cache", "-v", timeout=600)
    assert done.returncode == 0, done.stderr
    for run_id in ("a", "b"):
        run = next(results.glob(f"shell-001/*/*/{run_id}"))
        ((_scratch, graded),) = _set_ups(done.stderr, f"{run}: ")
        assert graded == str(made.source)
    quiet = ssegrade("batch", str(jobs), "--results", str(results), "-q")
    assert _set_ups(quiet.stderr) == []


def test_the_python_api_grades_through_the_set_up_and_logs_only(
    workdir: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    made = _task(workdir)
    caplog.set_level(logging.DEBUG, logger="interpreters")
    result = grade_patch(made.task, FIX.encode(), made.source, made.results)
    assert result.patch_result.status == "passed"
    set_up = [
        r for r in caplog.records if r.levelno == logging.DEBUG and r.name.endswith("prepare")
    ]
    assert [SET_UP.search(r.getMessage()) is not None for r in set_up] == [True]
    checks = [
        r.getMessage() for r in caplog.records if r.name == "interpreters.real.resultsfolder.writer"
    ]
    assert "build: running…" in checks
    assert any(line.startswith("poc ") and ": passed (" in line for line in checks)
    assert capsys.readouterr() == ("", "")  # no handler was attached: nothing is printed


def test_input_the_set_up_refuses_is_a_plain_error_and_leaves_nothing(workdir: Path) -> None:
    made = _task(workdir)
    inputs = load_inputs(made.task, made.source, None)
    missing = workdir / "no-such-baseline"
    with (
        pytest.raises(InputError) as refused,
        grading_setup(inputs, Sources(baseline=missing), made.results),
    ):
        pytest.fail("a grading set up without its baseline")
    assert not isinstance(refused.value, click.ClickException)  # the CLI alone maps it to 2
    assert "\n" not in str(refused.value)
    done = ssegrade(
        "evaluate",
        "--task",
        str(made.task),
        "--baseline",
        str(missing),
        "--results",
        str(made.results),
    )
    assert done.returncode == 2
    assert done.stderr.startswith("ssegrade: error: ")
    assert len(done.stderr.splitlines()) == 1
    assert not made.results.exists()


def test_the_set_up_gives_every_place_by_name(workdir: Path) -> None:
    made = _task(workdir)
    inputs = load_inputs(made.task, None, None, need_source=False)
    assert inputs.runner == resolve_runner(None).unwrap()
    with grading_setup(inputs, Sources(patch=b"", repo=made.source), made.results) as ready:
        places = ready.places
        assert (places.task, places.repo, places.results) == (
            made.task,
            made.source,
            made.results,
        )
        assert places.source is None  # a recorded patch: no tree, no baseline
        assert places.baseline is None
        assert places.scratch.parent.is_dir()
