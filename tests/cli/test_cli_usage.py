"""The command line as a user meets it: help with examples, one error format, exit codes,
agent facts that are checked rather than coerced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interpreters.cli.main import cli
from tests.support.realtask import make_task, ssegrade

COMMANDS = sorted(cli.commands)


def test_bare_ssegrade_prints_its_help_and_succeeds() -> None:
    done = ssegrade()
    assert done.returncode == 0
    assert done.stdout.startswith("Usage: ssegrade")
    assert "error" not in done.stdout + done.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_an_example_and_cites_no_internal_document(command: str) -> None:
    done = ssegrade(command, "--help")
    assert done.returncode == 0, done.stderr
    assert "Example" in done.stdout, command
    assert "SPEC" not in done.stdout, command


@pytest.mark.parametrize(
    "args",
    [
        ["evaluate", "--no-such-option"],
        ["evaluate", "--agent-duration", "123.4"],
        ["evaluate", "--agent-duration", "abc"],
        ["evaluate", "--agent-duration", "-5"],
        ["evaluate", "--agent-exit-code", "xyz"],
        ["evaluate", "--timeout", "0"],
        ["evaluate"],
        ["report", "/nonexistent"],
        ["nosuchcommand"],
    ],
)
def test_bad_input_is_one_error_line_and_exit_2(args: list[str], tmp_path: Path) -> None:
    done = ssegrade(*args, "--task", str(tmp_path / "none")) if args == ["evaluate"] else None
    done = done or ssegrade(*args)
    assert done.returncode == 2, (args, done.stderr)
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("ssegrade: error: ")
    assert "Traceback" not in done.stderr


def test_a_missing_task_folder_names_the_option() -> None:
    done = ssegrade("evaluate", env={"SSE_BENCH_PATH": "/nonexistent-task"})
    assert done.returncode == 2
    assert "--task" in done.stderr
    assert "SSE_BENCH_PATH" in done.stderr


@pytest.mark.slow
def test_agent_facts_from_the_environment_are_checked_not_coerced(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    patch = tmp_path / "empty.patch"
    patch.write_bytes(b"")
    results = tmp_path / "results"
    args = ["evaluate", "--task", str(task.task), "--patch", str(patch)]
    args += ["--repo", str(task.source), "--results", str(results)]
    done = ssegrade(*args, env={"AGENT_DURATION": "12.5", "AGENT_EXIT_STATUS": "7"})
    assert done.returncode == 0, done.stderr
    assert "AGENT_DURATION='12.5' is not an integer" in done.stderr
    runtime = json.loads((results / "result.json").read_bytes())["runtime_result"]
    assert (runtime["agent_duration"], runtime["agent_exit_code"]) == (0, 7)
