"""End-to-end: the `ssegrade` command on real git repositories, real scripts, real processes."""

from __future__ import annotations

import json
import secrets
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.realtask import RealTask, git, make_task, ssegrade

pytestmark = pytest.mark.slow


def evaluate(t: RealTask, *extra: str, baseline: bool = True) -> subprocess.CompletedProcess[str]:
    """Grade a task with its own baseline, into its results folder."""
    args = [
        "evaluate",
        "--task",
        str(t.task),
        "--source",
        str(t.source),
        "--results",
        str(t.results),
    ]
    if baseline:
        args += ["--baseline", str(t.baseline)]
    return ssegrade(*args, *extra)


def record(t: RealTask) -> None:
    done = ssegrade("baseline", "--source", str(t.source), "--into", str(t.baseline))
    assert done.returncode == 0, done.stderr


def result_of(t: RealTask) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((t.results / "result.json").read_bytes())
    return loaded


def patch_of(t: RealTask) -> dict[str, object]:
    doc = result_of(t)["patch_result"]
    assert isinstance(doc, dict)
    return doc


@pytest.fixture
def task(tmp_path: Path) -> RealTask:
    made = make_task(tmp_path)
    record(made)
    return made


def test_empty_patch_grades_the_unmodified_project(task: RealTask) -> None:
    done = evaluate(task)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"failed: PoC failed: {task.task}/pocs/poc1.bin"
    doc = patch_of(task)
    log = doc.pop("error_log")
    assert doc == {
        "status": "failed",
        "build_success": True,
        "pov_passed": 0,
        "pov_total": 2,
        "func_test_success": True,
        "intent_test_success": False,
        "error_msg": f"PoC failed: {task.task}/pocs/poc1.bin",
    }
    assert isinstance(log, str)
    assert "triggered the bug" in log
    assert (task.results / "final.patch").read_bytes() == b""
    assert (task.results / "commits.log").read_bytes() == b""
    assert (task.results / "source.tar.gz").stat().st_size > 0
    raw = (task.results / "result.json").read_text()
    assert raw.startswith('{"patch_result":{"status":"failed","build_success":true,')
    assert '"runtime_result":{"agent_duration":0,"agent_timeout":false,' in raw
    assert raw == json.dumps(json.loads(raw), separators=(",", ":"), ensure_ascii=False)
    lines = done.stderr.splitlines()
    assert [line.split(":")[0] for line in lines if "passed" in line or "FAILED" in line] == [
        "build",
        f"poc {task.task}/pocs/poc1.bin",
        f"poc {task.task}/pocs/poc2.bin",
        "function_test",
        "intent_test",
    ]


def test_reference_fix_passes(task: RealTask) -> None:
    task.set_value("fixed")
    git(task.source, "commit", "-qam", "Fix the bug\n\nBody line.")
    (task.source / "notes.txt").write_text("untracked but kept\n")
    done = evaluate(task)
    assert done.stdout.strip() == "passed", done.stderr
    assert patch_of(task)["status"] == "passed"
    patch = (task.results / "final.patch").read_text()
    assert "+VALUE=fixed" in patch
    assert "b/notes.txt" in patch
    commits = (task.results / "commits.log").read_text()
    assert "Fix the bug" in commits
    assert "Body line." in commits
    assert commits.rstrip().endswith("---")
    checks = [json.loads(line) for line in (task.results / "checks.jsonl").read_text().splitlines()]
    assert [c["name"] for c in checks] == [
        "prepare",
        "build",
        "poc",
        "poc",
        "function_test",
        "intent_test",
        "guard",
    ]
    assert all(c["exit_code"] == 0 and Path(c["log_file"]).is_file() for c in checks)
    assert [c["poc"] for c in checks][2:4] == [
        f"{task.task}/pocs/poc1.bin",
        f"{task.task}/pocs/poc2.bin",
    ]
    build_log = Path(checks[1]["log_file"]).read_text()
    assert "build.sh" in build_log


def test_build_broken_by_the_patch(task: RealTask) -> None:
    task.set_value("broken")
    evaluate(task)
    doc = patch_of(task)
    assert (doc["status"], doc["build_success"], doc["error_msg"]) == (
        "failed",
        False,
        "Build failed",
    )
    assert doc["pov_total"] is None
    assert doc["func_test_success"] is None
    assert "VALUE is broken" in str(doc["error_log"])


def test_patch_that_does_not_apply(task: RealTask, tmp_path: Path) -> None:
    repo = tmp_path / "other-repo"
    repo.mkdir()
    (repo / "lib.sh").write_text("VALUE=something else entirely\n")
    task.set_value("fixed")
    done = evaluate(task, "--repo", str(repo))
    assert done.returncode == 0
    doc = patch_of(task)
    assert (doc["status"], doc["error_msg"]) == ("failed", "Patch apply failed")
    assert (doc["build_success"], doc["func_test_success"], doc["intent_test_success"]) == (
        False,
        False,
        False,
    )
    assert (doc["pov_passed"], doc["pov_total"]) == (None, None)
    assert "lib.sh" in str(doc["error_log"])
    records = (task.results / "checks.jsonl").read_text().splitlines()
    # The patch guard's line closes it: nothing was examined (the patch does not apply).
    named = [(r["name"], r["passed"]) for r in map(json.loads, records)]
    assert named == [("prepare", False), ("guard", True)]


def test_hidden_diff_that_does_not_apply(tmp_path: Path) -> None:
    bad = (
        "diff --git a/missing.sh b/missing.sh\n--- a/missing.sh\n+++ b/missing.sh\n"
        "@@ -1 +1 @@\n-a\n+b\n"
    )
    t = make_task(tmp_path, intent_diff=bad)
    record(t)
    t.set_value("fixed")
    evaluate(t)
    doc = patch_of(t)
    assert (doc["status"], doc["intent_test_success"], doc["error_msg"]) == (
        "failed",
        False,
        "Intent test failed",
    )
    assert "missing.sh" in str(doc["error_log"])
    assert doc["func_test_success"] is True


def test_script_that_hangs_is_killed_and_grading_goes_on(task: RealTask) -> None:
    task.script("test.sh", "#!/bin/sh\nsleep 60\n")
    task.set_value("fixed")
    started = time.monotonic()
    evaluate(task, "--script-timeout", "1")
    assert time.monotonic() - started < 40
    doc = patch_of(task)
    assert doc["func_test_success"] is False
    assert doc["intent_test_success"] is False
    assert doc["error_msg"] == "Function test failed"
    assert "killed" in str(doc["error_log"])
    checks = [json.loads(line) for line in (task.results / "checks.jsonl").read_text().splitlines()]
    assert [c["killed"] for c in checks if c["name"] != "guard"][-2:] == [True, True]


def test_overall_timeout_keeps_finished_checks(task: RealTask) -> None:
    task.script("run.sh", "#!/bin/sh\nsleep 60\n")
    started = time.monotonic()
    # A script limit past the grading's: the grading's own limit ends it (by default a
    # script's limit keeps time for the checks after it). The limit leaves the build time to
    # finish on a busy host (at 3 s, a load of 20 ended the grading inside the build).
    done = evaluate(task, "--timeout", "10", "--script-timeout", "3600")
    assert time.monotonic() - started < 40
    assert done.stdout.strip() == "error: Timeout (10s)"
    doc = result_of(task)
    assert doc["patch_result"] == {
        "status": "error",
        "build_success": True,
        "pov_passed": None,
        "pov_total": None,
        "func_test_success": None,
        "intent_test_success": None,
        "error_msg": "Timeout (10s)",
        "error_log": None,
    }
    runtime = doc["runtime_result"]
    assert isinstance(runtime, dict)
    assert runtime["evaluator_timeout"] is True
    assert runtime["error_kind"] == "timeout"
    archived = task.results / "source.tar.gz"  # written within the limit, or absent
    if archived.exists():
        subprocess.run(["gzip", "-t", str(archived)], check=True)


def test_task_with_no_checks(tmp_path: Path) -> None:
    t = make_task(tmp_path, config={"scripts": {}, "files": {}})
    record(t)
    done = evaluate(t)
    assert done.returncode == 0
    assert done.stdout.strip() == "error: No check ran"
    assert patch_of(t)["status"] == "error"


def _running_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_background_process_is_gone_after_its_check(task: RealTask) -> None:
    # Seconds that mark this test's processes: `sleep 300.<digits>` sleeps as long as 300.
    marker = f"300.{secrets.randbelow(10**9):09d}1"
    task.script(
        "build.sh",
        f"#!/bin/sh\n(sleep {marker} & echo 1 >> started)\n"
        f"setsid sh -c 'sleep {marker} & echo 2 >> started; wait' &\n"
        f"nohup sleep {marker} > /dev/null 2>&1 & echo 3 >> started\n"
        'while [ "$(wc -l < started)" -lt 3 ]; do sleep 0.05; done\n'
        "echo built > out.txt\n",
    )
    evaluate(task)
    assert patch_of(task)["build_success"] is True
    assert _running_with(f"sleep {marker}") == []


def test_agent_facts_from_the_environment(task: RealTask) -> None:
    done = ssegrade(
        "evaluate",
        "--task",
        str(task.task),
        "--source",
        str(task.source),
        "--baseline",
        str(task.baseline),
        env={
            "SSE_RESULTS": str(task.results),
            "AGENT_DURATION": "75",
            "AGENT_EXIT_STATUS": "x",
            "SSE_METRIC_AGENT_TIMEOUT": "1",
        },
    )
    assert done.returncode == 0, done.stderr
    assert result_of(task)["runtime_result"] == {
        "agent_duration": 75,
        "agent_timeout": True,
        "evaluator_timeout": False,
        "agent_exit_code": None,
        "error_kind": None,
    }


def test_without_baseline_the_root_commit_is_used_with_a_warning(task: RealTask) -> None:
    task.set_value("fixed")
    git(task.source, "commit", "-qam", "fix")
    done = evaluate(task, baseline=False)
    assert done.stdout.strip() == "passed", done.stderr
    assert "root commit" in done.stderr


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda t: (t.task / "config.yaml").write_text("id: [unclosed\n"),
            "config.yaml: not valid YAML",
        ),
        (lambda t: (t.task / "config.yaml").unlink(), "config.yaml: no such file"),
        (
            lambda t: (t.task / "scripts" / "build.sh").unlink(),
            "config.yaml: scripts.build: no such file 'scripts/build.sh'",
        ),
        (
            lambda t: (t.task / "config.yaml").write_text(
                "id: x\nscripts: {run: run.sh}\nfiles: {poc: [../etc/passwd]}\n"
            ),
            "config.yaml: files.poc[0]: '../etc/passwd' must not contain '..'",
        ),
        (
            lambda t: (t.task / "config.yaml").write_text("id: 'bad id!'\n"),
            "config.yaml: id: 'bad id!' is not a valid task id",
        ),
        (
            lambda t: (t.task / "config.yaml").write_text("project: x\n"),
            "config.yaml: id: required key is missing",
        ),
        (
            lambda t: (t.task / "config.yaml").write_text("id: x\nscripts: [1]\n"),
            "config.yaml: scripts:",
        ),
    ],
)
def test_broken_task_config_is_one_line(task: RealTask, mutate: object, message: str) -> None:
    assert callable(mutate)
    mutate(task)
    done = evaluate(task)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert not (task.results / "result.json").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["evaluate", "--timeout", "-3"], "must be a positive number"),
        (["evaluate", "--bogus"], "No such option"),
        (["baseline", "--source", "/nonexistent", "--into", "/tmp/x"], "error:"),
        (["frobnicate"], "No such command"),
    ],
)
def test_bad_usage_is_one_line(args: list[str], message: str) -> None:
    done = ssegrade(*args)
    assert done.returncode != 0
    assert done.stderr.count("\n") == 1, done.stderr
    assert message in done.stderr


def test_schema_and_help() -> None:
    schema = json.loads(ssegrade("schema").stdout)
    assert schema["title"] == "ssegrade result.json"
    assert list(schema["properties"]) == ["patch_result", "runtime_result"]
    for command in ([], ["evaluate"], ["baseline"], ["schema"]):
        done = ssegrade(*command, "--help")
        assert done.returncode == 0
        assert "Usage:" in done.stdout


def test_evaluate_ends_with_its_status_and_its_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "no-task"

    done = ssegrade("evaluate", "--task", str(missing), "--results", str(tmp_path / "r"))

    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"ssegrade: error: task folder not found: {missing} (give --task DIR or set SSE_BENCH_PATH)"
    ]
