"""End to end: `evaluate --trace` records a real grading, `replay` re-grades it offline."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.realtask import RealTask, git, make_task, ssegrade

pytestmark = pytest.mark.slow


@pytest.fixture
def task(tmp_path: Path) -> RealTask:
    made = make_task(tmp_path)
    done = ssegrade("baseline", "--source", str(made.source), "--into", str(made.baseline))
    assert done.returncode == 0, done.stderr
    return made


def evaluate(t: RealTask, trace: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return ssegrade(
        "evaluate",
        "--task",
        str(t.task),
        "--source",
        str(t.source),
        "--baseline",
        str(t.baseline),
        "--results",
        str(t.results),
        "--trace",
        str(trace),
        *extra,
    )


def records(trace: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in trace.read_text().splitlines()]


def write(trace: Path, lines: list[dict[str, object]]) -> None:
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines))


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("ssegrade: error: ")
    return done.stderr


def test_a_recorded_grading_replays_to_its_verdict_and_an_edit_changes_it(
    task: RealTask, tmp_path: Path
) -> None:
    task.set_value("fixed")
    git(task.source, "commit", "-qam", "fix")
    trace = tmp_path / "r1.trace"
    done = evaluate(task, trace)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "passed"
    assert trace.stat().st_mode & 0o777 == 0o600
    written = json.loads((task.results / "result.json").read_bytes())
    lines = records(trace)
    assert lines[-1]["result"] == written
    assert [line["kind"] for line in lines if line["kind"] == "Bench"] == ["Bench"] * 5

    same = ssegrade("replay", str(trace))
    assert same.returncode == 0, same.stderr
    assert same.stdout.splitlines() == ["passed", "same as the recorded result.json"]

    for line in lines:
        effect = line.get("effect")
        if isinstance(effect, dict) and effect.get("poc") == "pocs/poc2.bin":
            answer = line["answer"]
            assert isinstance(answer, dict)
            answer["code"] = 1
    edited = tmp_path / "edited.trace"
    write(edited, lines)
    differs = ssegrade("replay", str(edited))
    assert differs.returncode == 1, differs.stderr
    poc = f"{task.task}/pocs/poc2.bin"
    assert differs.stdout.splitlines()[:2] == [
        f"failed: PoC failed: {poc}",
        "differs from the recorded result.json (passed):",
    ]
    assert "  patch_result.pov_passed: 2 → 1" in differs.stdout.splitlines()

    for line in lines:  # a failed build stops grading: the later steps are not asked for
        if line.get("effect") == {"action": "build", "poc": None}:
            answer = line["answer"]
            assert isinstance(answer, dict)
            answer["code"] = 2
    diverged = tmp_path / "diverged.trace"
    write(diverged, lines)
    assert (
        "step 6: the grading program asks for Archive(), the trace holds CheckStarted: "
        "the rules changed in a way that needs a new grading"
    ) in one_error_line(ssegrade("replay", str(diverged)))

    truncated = tmp_path / "truncated.trace"
    truncated.write_bytes(trace.read_bytes()[:-30])
    assert "not JSON (the trace is truncated or damaged)" in one_error_line(
        ssegrade("replay", str(truncated))
    )
    cut = tmp_path / "cut.trace"
    write(cut, lines[:-2])
    assert "no end record" in one_error_line(ssegrade("replay", str(cut)))
    assert "not an ssegrade trace" in one_error_line(
        ssegrade("replay", str(task.results / "result.json"))
    )
    assert "No such file" in one_error_line(ssegrade("replay", str(tmp_path / "none")))


def test_a_timed_out_grading_is_recorded_and_replayed(task: RealTask, tmp_path: Path) -> None:
    task.script("run.sh", "#!/bin/sh\nsleep 60\n")
    trace = tmp_path / "timeout.trace"
    done = evaluate(task, trace, "--timeout", "3", "--script-timeout", "3600")
    assert done.stdout.strip() == "error: Timeout (3s)", done.stderr
    raised = [line["raised"] for line in records(trace) if "raised" in line]
    assert raised[:1] == [{"exception": "TimeLimitReached", "seconds": 3}]
    again = ssegrade("replay", str(trace))
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == ["error: Timeout (3s)", "same as the recorded result.json"]


def test_a_broken_task_is_recorded_and_replayed(task: RealTask, tmp_path: Path) -> None:
    task.script("build.sh", "#!/nonexistent/interpreter\n")
    trace = tmp_path / "broken.trace"
    done = evaluate(task, trace)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("error: "), done.stdout
    again = ssegrade("replay", str(trace))
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [done.stdout.strip(), "same as the recorded result.json"]


def test_a_trace_that_cannot_be_written_is_refused_before_grading(
    task: RealTask, tmp_path: Path
) -> None:
    message = one_error_line(evaluate(task, tmp_path / "missing" / "t.trace"))
    assert "--trace" in message
    assert not (task.results / "result.json").exists()
    (tmp_path / "folder").mkdir()
    assert "not a regular file" in one_error_line(evaluate(task, tmp_path / "folder"))
    daemon = evaluate(task, tmp_path / "t.trace", "--daemon", str(tmp_path / "sock"))
    assert "--trace and --daemon cannot be used together" in one_error_line(daemon)


def test_help_shows_the_trace_option_and_a_replay_example() -> None:
    evaluate_help = ssegrade("evaluate", "--help")
    assert "--trace FILE" in evaluate_help.stdout
    replay_help = ssegrade("replay", "--help")
    assert replay_help.returncode == 0
    assert "Example:" in replay_help.stdout
    assert "ssegrade replay " in replay_help.stdout
    assert "SPEC" not in replay_help.stdout
