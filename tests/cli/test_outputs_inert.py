"""What ssegrade prints or writes is inert: no CSV cell a spreadsheet would run, and `replay`
refuses a crafted trace (deep, huge, a link, a FIFO) with one line and exit 2.

The attacks as they were found: a model named `=2+5+cmd|' -C calc'!A0` and an agent named
`@SUM(1+1)` written as they are; a deeply nested trace (a traceback, exit 1); a FIFO trace
(a hang).
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from interpreters.cli.replay import too_deep
from interpreters.cli.report import report
from tests.support.realtask import ssegrade
from tests.support.runfolders import summary, write_run

ACTIVE = ("=", "+", "-", "@", "\t", "\r")


def cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text, newline="")) for cell in row]


def report_csv(results: Path, *extra: str) -> str:
    done = ssegrade("report", str(results), "--format", "csv", *extra)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_spreadsheet_runs_no_cell_of_the_csv_report(tmp_path: Path) -> None:
    model, agent = "=2+5+cmd|' -C calc'!A0", "@SUM(1+1)"
    write_run(tmp_path, f"-1+1/{model}/{agent}/r", summary(task="-1+1"))
    for text in (report_csv(tmp_path), report_csv(tmp_path, "--per-run")):
        found = cells(text)
        assert "'" + model in found
        assert "'" + agent in found
        assert not [cell for cell in found if cell.startswith(ACTIVE)]


# Names are the run folders' (a document naming others is left out), so no "/" in them.
names = st.builds(
    str.__add__,
    st.sampled_from([*ACTIVE, "'", "a", "0", " "]),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00/"), max_size=12),
)


@settings(max_examples=25, deadline=None)
@given(model=names, agent=names, task=names)
def test_no_cell_of_any_report_starts_as_a_formula(model: str, agent: str, task: str) -> None:
    with tempfile.TemporaryDirectory(prefix="ssegrade-csv-") as top:
        write_run(Path(top), f"{task}/{model}/{agent}/r", summary(task=task))
        for extra in ([], ["--per-run"]):
            out = CliRunner().invoke(report, [top, "--format", "csv", *extra])
            assert out.exit_code == 0, out.output
            for cell in cells(out.stdout):
                assert not cell.startswith(ACTIVE), cell


def one_error(done: object) -> str:
    stderr: str = done.stderr  # type: ignore[attr-defined]
    assert done.returncode == 2, stderr  # type: ignore[attr-defined]
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def test_replay_refuses_a_deeply_nested_trace_with_one_line(tmp_path: Path) -> None:
    trace = tmp_path / "deep.trace"
    trace.write_bytes(b"[" * 100_000 + b"]" * 100_000 + b"\n")
    line = one_error(ssegrade("replay", str(trace)))
    assert line == (
        f"ssegrade: error: {trace}: trace line 1 nests deeper than 64 levels "
        "(not a trace ssegrade wrote)"
    )


def test_replay_refuses_a_fifo_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.trace")
    line = one_error(ssegrade("replay", str(tmp_path / "fifo.trace"), timeout=60))
    assert line == (
        f"ssegrade: error: trace {tmp_path / 'fifo.trace'}: not a file "
        "(a FIFO, a device or a folder)"
    )


def test_replay_refuses_a_huge_trace_and_a_link(tmp_path: Path) -> None:
    huge = tmp_path / "huge.trace"
    with huge.open("wb") as out:
        out.truncate(300 << 20)  # sparse: refused before a byte is read
    line = one_error(ssegrade("replay", str(huge)))
    assert line == f"ssegrade: error: trace {huge}: larger than {256 << 20} bytes"
    (tmp_path / "link.trace").symlink_to(huge)
    line = one_error(ssegrade("replay", str(tmp_path / "link.trace")))
    assert "a symbolic link (links are not followed)" in line


@pytest.mark.parametrize("depth", [1, 63, 64, 65, 1000])
def test_a_trace_line_is_too_deep_iff_it_nests_past_the_limit(depth: int) -> None:
    nested = b'{"a":' * depth + b'"[{[{"' + b"}" * depth
    assert too_deep(nested) is (depth > 64)
