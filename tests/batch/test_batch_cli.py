"""`ssegrade batch` end to end: the console script, real gradings, real signals.

Interrupts are sent as a terminal sends them, to the whole process group of the command; a
readiness file written by the task's test script says when a grading is running.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

from tests.support.batchkit import SCRIPT_ENV, holding_task
from tests.support.realtask import fix_to, make_task, ssegrade, write_jobs
from tests.support.scriptmarks import marked
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-c", "from interpreters.cli.main import main; main()"]


def test_batch_grades_each_job_and_report_reads_the_results(tmp_path: Path) -> None:
    made = make_task(tmp_path / "t")
    jobs = write_jobs(
        tmp_path,
        made,
        {"fixed": fix_to("fixed"), "empty": "", "stale": fix_to("x").replace("bug", "old")},
        model="openai/gpt-5",
        agent="codex",
    )
    results = tmp_path / "results"
    done = ssegrade("batch", str(jobs), "--results", str(results), "--workers", "2", timeout=600)
    assert done.returncode == 0, done.stderr
    # Off a terminal: one line per finished job (verdict, run folder, time), then the last.
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 4, done.stderr
    assert sorted(line.split()[0] for line in lines[:3]) == ["[1/3]", "[2/3]", "[3/3]"]
    folder = "shell-001/openai/gpt-5/codex"
    assert sorted(line.split(" ", 1)[1].split(" (")[0] for line in lines[:3]) == [
        f"failed {folder}/empty",
        f"failed {folder}/stale",
        f"passed {folder}/fixed",
    ]
    said_of = {line.split(" ", 2)[2].split(" (")[0]: line for line in lines[:3]}
    assert re.search(r" \([0-9.]+ s\)$", said_of[f"{folder}/fixed"])
    assert re.search(r" \([0-9.]+ s\): Patch apply failed$", said_of[f"{folder}/stale"])
    assert said_of[f"{folder}/empty"].endswith(" s): PoC failed: pocs/poc1.bin")
    assert lines[-1].startswith("3 graded, 1 passed, 2 failed, 0 error, 0 cached, 0 skipped in ")
    run = results / "shell-001" / "openai" / "gpt-5" / "codex"
    statuses = {
        name: json.loads((run / name / "summary.json").read_bytes())["patch_result"]
        for name in ("fixed", "empty", "stale")
    }
    assert statuses["fixed"]["status"] == "passed"
    assert statuses["empty"]["error_msg"] == f"PoC failed: {made.task}/pocs/poc1.bin"
    assert statuses["stale"]["error_msg"] == "Patch apply failed"
    for name in ("fixed", "empty", "stale"):
        names = {p.name for p in (run / name).iterdir()}
        assert {"result.json", "final.patch", "checks.jsonl", "logs", "summary.json"} <= names
        assert ".incomplete" not in names
    assert (run / "fixed" / "final.patch").read_text() == fix_to("fixed")
    report = ssegrade("report", str(results), "--format", "json", "--runs", "all")
    assert report.returncode == 0, report.stderr
    row = json.loads(report.stdout)["rows"][0]
    assert (row["model"], row["agent"], row["runs"]) == ("openai/gpt-5", "codex", 3)
    assert row["build"]["of"] == 3
    again = ssegrade("batch", str(jobs), "--results", str(results), "-q")
    assert again.returncode == 0
    assert len(again.stderr.splitlines()) == 1, again.stderr
    assert again.stderr.startswith("0 graded, 0 passed, 0 failed, 0 error, 0 cached, 3 skipped in ")
    # -v: each check says when it starts and when it ends, with its log, named by its run;
    # a recorded patch has no source tree to archive, and nothing is said of it.
    said = ssegrade("batch", str(jobs), "--results", str(results), "-v", "--force", timeout=600)
    assert said.returncode == 0, said.stderr
    lines = said.stderr.splitlines()
    assert f"{run / 'fixed'}: build: running…" in lines
    assert any(
        line.startswith(f"{run / 'fixed'}: build: passed (") and "log " in line for line in lines
    )
    assert "source.tar.gz" not in said.stderr
    assert lines[-1].startswith("3 graded, 1 passed, 2 failed, 0 error, 0 cached, 0 skipped in ")
    # A reference run is left out of the shares.
    ref = write_jobs(tmp_path, made, {"ref": fix_to("fixed")}, reference_run=True)
    assert ssegrade("batch", str(ref), "--results", str(results)).returncode == 0
    report = ssegrade("report", str(results), "--format", "json", "--runs", "all")
    assert json.loads(report.stdout)["rows"][0]["runs"] == 3
    assert [e["run_id"] for e in json.loads(report.stdout)["excluded"]] == ["ref"]


def test_bad_lines_are_named_with_their_numbers_and_nothing_runs(tmp_path: Path) -> None:
    made = make_task(tmp_path / "t")
    jobs = write_jobs(tmp_path, made, {"a": fix_to("fixed")})
    with jobs.open("a") as more:
        more.write('{"task": "t/task", "patch": "patches/none.patch", "repo": "t/source"}\n')
        more.write('{"task": "t/nowhere", "patch": "patches/a.patch"}\n')
        more.write('{"task": "t/task", "patch": "patches/a.patch", "run_id": "a"\n')
    results = tmp_path / "results"
    done = ssegrade("batch", str(jobs), "--results", str(results))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"ssegrade: error: {jobs}:2: patch: no such file: {tmp_path}/patches/none.patch",
        f"ssegrade: error: {jobs}:3: task: task folder not found: {tmp_path}/t/nowhere",
        f"ssegrade: error: {jobs}:4: not JSON (Expecting ',' delimiter: line 1 column 61 "
        "(char 60))",
    ]
    assert not results.exists()
    jobs.write_text('{"task": "t/task", "patch": "patches/a.patch", "modle": "m"}\n')
    done = ssegrade("batch", str(jobs), "--results", str(results))
    assert (done.returncode, done.stderr) == (
        2,
        f"ssegrade: error: {jobs}:1: modle: unknown key (did you mean model?)\n",
    )


def test_the_ray_engine_without_ray_is_one_clear_line(tmp_path: Path) -> None:
    made = make_task(tmp_path / "t")
    jobs = write_jobs(tmp_path, made, {"a": ""})
    hide_ray = (
        "import sys; sys.modules['ray'] = None; from interpreters.cli.main import main; main()"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            hide_ray,
            "batch",
            str(jobs),
            "--results",
            str(tmp_path / "r"),
            "--engine",
            "ray",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (
        2,
        "ssegrade: error: the ray engine needs Ray: pip install 'ssegrade[ray]'\n",
    )


# ---------------------------------------------------------------------------- interrupts


@pytest.fixture
def state() -> Iterator[Path]:
    """The name scripts mark themselves with to say they are ready (`tests.support.scriptmarks`),
    and the folder where the test tells them to go on (named in the environment: root's, scripts
    see it read-only, as it is)."""
    folder = Path(tempfile.mkdtemp(prefix="batch-int-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


Start = Callable[..., subprocess.Popen[str]]


@pytest.fixture
def start() -> Iterator[Start]:
    """Start the batch in a session of its own: its process group is what a terminal
    signals. Whatever a test leaves running is killed at the end."""
    started: list[subprocess.Popen[str]] = []

    def launch(jobs: Path, results: Path, state: Path, *extra: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [*CLI, "batch", str(jobs), "--results", str(results), *extra, *SCRIPT_ENV],
            env={**os.environ, "BATCH_STATE": str(state)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        started.append(proc)
        return proc

    yield launch
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def wait_for(paths: list[Path], proc: subprocess.Popen[str], seconds: float = 120) -> None:
    """Wait until a script is marked with each of `paths`."""

    def ready() -> bool:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        return all(marked(p) for p in paths)

    wait_until(ready, f"scripts marked {paths}", seconds)


def read_until(stream: IO[str], text: str) -> list[str]:
    seen = []
    for line in stream:
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"{text!r} never printed: {seen}")


def test_first_interrupt_waits_for_running_jobs_and_a_rerun_resumes(
    tmp_path: Path, state: Path, start: Start
) -> None:
    made = holding_task(
        tmp_path / "t", 'while [ ! -e "$BATCH_STATE/release" ]; do sleep 0.05; done'
    )
    jobs = write_jobs(tmp_path, made, {n: fix_to(f"fixed{n}") for n in ("a", "b", "c")})
    results = tmp_path / "results"
    proc = start(jobs, results, state, "--workers", "2")
    assert proc.stderr is not None
    wait_for([state / "ready-fixeda", state / "ready-fixedb"], proc)
    os.killpg(proc.pid, signal.SIGINT)
    read_until(proc.stderr, "interrupted: waiting for 2 running gradings")
    (state / "release").touch()
    rest = proc.stderr.read()
    assert proc.wait(timeout=120) == 130, rest
    assert "Traceback" not in rest
    # Off a terminal each job's line says why it did not pass; the last line, what is left.
    for name in ("a", "b"):
        assert re.search(
            rf"\] failed shell-001/unknown/unknown/{name} \([0-9.]+ s\): Intent test failed\n",
            rest,
        ), rest
    assert rest.splitlines()[-1].endswith(
        "; interrupted: 1 job never started; the same command resumes"
    ), rest
    run = results / "shell-001" / "unknown" / "unknown"
    for name in ("a", "b"):
        # A real verdict: the held functional test finished and passed (the hidden test wants
        # VALUE=fixed exactly, so the intent test fails).
        patch = json.loads((run / name / "summary.json").read_bytes())["patch_result"]
        assert (patch["func_test_success"], patch["error_msg"]) == (True, "Intent test failed")
    assert not (run / "c").exists()
    again = subprocess.run(
        [*CLI, "batch", str(jobs), "--results", str(results), *SCRIPT_ENV],
        env={**os.environ, "BATCH_STATE": str(state)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    assert (
        again.stderr.strip()
        .splitlines()[-1]
        .startswith("1 graded, 0 passed, 1 failed, 0 error, 0 cached, 2 skipped in ")
    )


def test_second_interrupt_kills_running_jobs_and_leaves_no_trace(
    tmp_path: Path, state: Path, start: Start
) -> None:
    token = f"{secrets.randbelow(10**6) + 1000}.{secrets.randbelow(10**6)}"
    made = holding_task(tmp_path / "t", f"exec sleep {token}")
    jobs = write_jobs(tmp_path, made, {n: fix_to(f"fixed{n}") for n in ("a", "b")})
    results = tmp_path / "results"
    proc = start(jobs, results, state, "--workers", "2")
    assert proc.stderr is not None
    wait_for([state / "ready-fixeda", state / "ready-fixedb"], proc)
    os.killpg(proc.pid, signal.SIGINT)
    read_until(proc.stderr, "interrupted: waiting for 2 running gradings")
    os.killpg(proc.pid, signal.SIGINT)
    rest = proc.stderr.read()
    assert proc.wait(timeout=120) == 130, rest
    # One line, and nothing else (no `Exception ignored in: …` from a worker).
    assert re.fullmatch(
        r"0 graded, 0 passed, 0 failed, 0 error, 0 cached, 0 skipped in [0-9.]+ s; "
        r"interrupted: 2 running gradings killed, folders removed, 0 jobs never started; "
        r"the same command resumes\n",
        rest,
    ), rest
    run = results / "shell-001" / "unknown" / "unknown"
    assert not (run / "a").exists()
    assert not (run / "b").exists()
    summary = json.loads((results / "batch.json").read_bytes())
    assert summary["interrupted"] is True
    assert summary["counts"] == {
        "passed": 0,
        "flagged": 0,
        "failed": 0,
        "error": 0,
        "not_graded": 2,
    }
    assert summary["runs"]["not_graded"] == [f"shell-001/unknown/unknown/{n}" for n in "ab"]
    assert summary["resume"] == [f"ssegrade batch {jobs} --results {results}"]
    survivors = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in cmdline:
            survivors.append(pid)
    assert survivors == []


def test_a_grading_that_ran_out_of_time_is_graded_again_on_resume_when_asked(
    tmp_path: Path, state: Path
) -> None:
    # The host is slow the first time only: the build outlives the grading's time limit (an
    # `error` of kind `timeout`, as an overloaded host or a hanging patch gives), then is
    # quick on resume. A patch's own timeout is kept by default; `--retry-kinds` grades it.
    made = make_task(tmp_path / "t")
    made.script(
        "build.sh",
        "#!/bin/sh\n"
        ". ./lib.sh\n"
        'if [ "$VALUE" = fixed ] && [ -e "$BATCH_STATE/slow" ]; then sleep 60; fi\n'
        'echo "$VALUE" > out.txt\n',
    )
    jobs = write_jobs(tmp_path, made, {"a": fix_to("fixed"), "b": fix_to("other")})
    results = tmp_path / "results"
    command = ["batch", str(jobs), "--results", str(results), "--workers", "1", "--timeout", "8"]
    command += SCRIPT_ENV
    command += ["--script-timeout", "3600"]  # the grading's own limit ends the slow build
    env = {"BATCH_STATE": str(state)}
    (state / "slow").touch()
    first = ssegrade(*command, "--label", "first", env=env, timeout=600)
    (state / "slow").unlink()
    assert first.returncode == 1, first.stderr
    run = results / "shell-001" / "unknown" / "unknown"
    spoiled = json.loads((run / "a" / "summary.json").read_bytes())
    assert (spoiled["patch_result"]["status"], spoiled["attempts"]) == ("error", 1)
    assert spoiled["patch_result"]["error_msg"] == "Timeout (8s)"
    summary = json.loads((results / "batch.json").read_bytes())
    assert (summary["label"], summary["interrupted"]) == ("first", False)
    assert summary["runs"]["error"] == ["shell-001/unknown/unknown/a"]
    assert summary["runs"]["failed"] == ["shell-001/unknown/unknown/b"]
    assert spoiled["runtime_result"]["error_kind"] == "timeout"
    kept = ssegrade(*command, env=env, timeout=600)
    assert kept.returncode == 1, kept.stderr
    assert kept.stderr.splitlines()[-1].startswith("0 graded, 0 passed, 0 failed, 0 error")
    bad = ssegrade(*command, "--retry-kinds", "timeout,weather", env=env, timeout=600)
    assert bad.returncode == 2
    assert "'weather' is not one of timeout, task, infrastructure, grader" in bad.stderr
    assert "Traceback" not in bad.stderr
    second = ssegrade(*command, "--retry-kinds", "timeout", env=env, timeout=600)
    assert second.returncode == 0, second.stderr
    lines = second.stderr.splitlines()
    assert re.fullmatch(
        r"\[2/2\] passed shell-001/unknown/unknown/a \([0-9.]+ s, attempt 2\)", lines[-2]
    ), second.stderr
    assert lines[-1].startswith("1 graded, 1 passed, 0 failed, 0 error, 0 cached, 1 skipped in ")
    graded = json.loads((run / "a" / "summary.json").read_bytes())
    assert (graded["patch_result"]["status"], graded["attempts"]) == ("passed", 2)
    summary = json.loads((results / "batch.json").read_bytes())
    assert summary["label"] == "first"
    assert summary["runs"]["passed"] == ["shell-001/unknown/unknown/a"]
    assert summary["runs"]["failed"] == ["shell-001/unknown/unknown/b"]
    assert len(summary["commands"]) == 3  # the refused command wrote nothing
    third = ssegrade(*command, "--no-retry", env=env, timeout=600)
    assert third.returncode == 0, third.stderr
    assert third.stderr.splitlines()[-1].startswith("0 graded, 0 passed, 0 failed, 0 error")
