"""The text report's width through the real console script: a pipe honours `COLUMNS` and is
80 columns without it; a real terminal (a pseudo-terminal) is as wide as it says."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from tests.support.runfolders import summary, write_run

CODE = "from interpreters.cli.main import main; main()"
MODELS = ("anthropic/claude-sonnet-4-with-a-longer-name", "openai/gpt-5")
AGENTS = ("claude-code", "codex")


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """Two long-named rows over three tasks with every check: one line per row needs far more
    than 80 columns."""
    root = tmp_path / "results"
    for model, agent in zip(MODELS, AGENTS, strict=True):
        for task in ("gjson-196", "libxml2-4011", "zstd-77"):
            doc = summary(task=task, status="failed")
            doc["task"]["scripts"].update(run="run.sh", test="test.sh")
            doc["task"]["files"] = {"poc": ["pocs/a"], "future_test": "f.diff"}
            doc["patch_result"].update(
                pov_passed=0, pov_total=1, func_test_success=True, intent_test_success=False
            )
            doc["patch_result"]["error_msg"] = "PoC failed: /ssebench/pocs/a"
            write_run(root, f"{task}/{model}/{agent}/r1", doc)
    return root


def environment(columns: str | None) -> dict[str, str]:
    """This process's environment, with `COLUMNS` as given (or without it)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = columns
    return env


def piped(results: Path, columns: str | None) -> str:
    """The report's stdout through a pipe."""
    done = subprocess.run(
        [sys.executable, "-c", CODE, "report", str(results)],
        capture_output=True,
        text=True,
        check=True,
        env=environment(columns),
    )
    return done.stdout


def longest(text: str) -> int:
    """The longest line."""
    return max(len(line) for line in text.splitlines())


def test_a_pipe_is_80_columns_without_columns(results: Path) -> None:
    """Piped, without `COLUMNS`: no line is longer than 80, and every share's column is
    there, the intent's too."""
    text = piped(results, None)
    assert longest(text) <= 80
    head = next(line for line in text.splitlines() if "Passed" in line)
    assert re.split(r"\s+", head.strip()) == ["Passed", "Build", "PoCs", "Func", "Intent"]


@pytest.mark.parametrize("columns", ["60", "100", "not-a-number"])
def test_a_pipe_honours_columns(results: Path, columns: str) -> None:
    """Piped, `COLUMNS` sets the width (a value that is not a number is taken as unset)."""
    width = int(columns) if columns.isdigit() else 80
    assert longest(piped(results, columns)) <= width


def test_wide_columns_give_one_line_per_row(results: Path) -> None:
    """Piped with `COLUMNS=300`: one line per row, its shares with their intervals."""
    text = piped(results, "300")
    line = next(line for line in text.splitlines() if line.startswith(MODELS[1]))
    assert "0% 0/3 (0–56%)" in line
    assert longest(text) <= 300


def on_a_terminal(results: Path, columns: int) -> str:
    """The report's output on a pseudo-terminal `columns` wide, without `COLUMNS`."""
    main, side = pty.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    child = subprocess.Popen(
        [sys.executable, "-c", CODE, "report", str(results)],
        stdin=side,
        stdout=side,
        stderr=side,
        env=environment(None),
    )
    os.close(side)
    out = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the other side is closed: the child has written everything
            break
        if not chunk:
            break
        out += chunk
    os.close(main)
    assert child.wait() == 0
    return out.decode().replace("\r\n", "\n")


@pytest.mark.parametrize("columns", [80, 120])
def test_a_terminal_is_as_wide_as_it_says(results: Path, columns: int) -> None:
    """On a real terminal 80 (or 120) columns wide, nothing is cropped: no line is longer,
    the intent's column and the footnote's end are there."""
    text = on_a_terminal(results, columns)
    assert longest(text) <= columns
    assert "Intent" in text
    assert "spend per passed run." in " ".join(text.split())


def test_the_reading_process_takes_no_module_from_the_current_folder(
    results: Path, tmp_path: Path
) -> None:
    """Run from a folder holding a module of ssegrade's name (a results folder an agent
    wrote, say), the report's reading process does not import it."""
    planted = tmp_path / "planted" / "interpreters"
    planted.mkdir(parents=True)
    marker = tmp_path / "ran"
    (planted / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (planted / "report").mkdir()
    for name in ("__init__.py", "reader.py"):
        (planted / "report" / name).write_text(f"open({str(marker)!r}, 'w').close()\n")
    done = subprocess.run(
        # -P: as the console script, which never looks for modules in the current folder
        [sys.executable, "-P", "-c", CODE, "report", str(results), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=planted.parent,
        env=environment(None),
    )
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
