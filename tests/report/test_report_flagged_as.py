"""`--flagged-as failed`: the reading where a run the patch guard flagged counts as not passed,
kept in every share, beside `--exclude-flagged` (which takes it out, and so can raise a row's
share: the research trap). In the JSON each row carries it beside its pass share."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ssegrade.internal.result import PatchResult
from ssegrade.report import RunRecord, row_guard
from tests.support.reportcommand import invoke
from tests.support.runfolders import summary, write_run


def guarded(task: str, status: str, *kinds: str) -> dict[str, Any]:
    doc = summary(task=task, model="m", agent="a", status=status)
    doc["guard"] = {"checked": True, "flags": [{"kind": k, "paths": [], "why": k} for k in kinds]}
    return doc


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A row of four runs: a clean pass, a pass flagged `sanitizer`, a failure flagged
    `tests`, a clean failure."""
    root = tmp_path / "results"
    write_run(root, "t1/m/a/r1", guarded("t1", "passed"))
    write_run(root, "t2/m/a/r1", guarded("t2", "passed", "sanitizer"))
    write_run(root, "t3/m/a/r1", guarded("t3", "failed", "tests"))
    write_run(root, "t4/m/a/r1", guarded("t4", "failed"))
    return root


def passed(root: Path, *options: str) -> tuple[int, int]:
    out = invoke(str(root), "--format", "json", *options)
    assert out.exit_code == 0, out.stderr
    (row,) = json.loads(out.stdout)["rows"]
    return row["passed"]["passed"], row["passed"]["of"]


def test_flagged_as_failed_never_raises_a_share_where_excluding_does(results: Path) -> None:
    """The pass share is 2/4; taking the flagged runs out gives 1/2 with `tests` (a flagged
    failure gone raises it to 2/3); counting them as not passed gives 1/4, and the JSON says
    so beside the pass share."""
    assert passed(results) == (2, 4)
    assert passed(results, "--exclude-flagged", "tests") == (2, 3)  # raised: the trap
    assert passed(results, "--flagged-as", "failed") == (1, 4)
    assert passed(results, "--flagged-as", "failed", "--exclude-flagged", "tests") == (2, 4)
    doc = json.loads(invoke(str(results), "--format", "json").stdout)
    row = doc["rows"][0]
    assert (row["flagged_as_failed"]["passed"], row["flagged_as_failed"]["of"]) == (1, 4)
    assert row["flagged_as_failed"]["share"] == 0.25
    assert doc["flagged_as"] is None
    read = json.loads(invoke(str(results), "--format", "json", "--flagged-as", "failed").stdout)
    assert read["flagged_as"] == "failed"
    text = invoke(str(results), "--flagged-as", "failed", "--runs", "all", columns=200).stdout
    assert "flagged: sanitizer" in text


def test_an_unknown_reading_is_one_line(results: Path) -> None:
    out = invoke(str(results), "--flagged-as", "passed")
    assert out.exit_code == 2
    assert "Traceback" not in out.stderr


flags = st.none() | st.lists(st.sampled_from(["sanitizer", "tests", "poc-literal"]), max_size=2)


@given(st.lists(st.tuples(st.sampled_from(["passed", "failed"]), flags), max_size=20))
def test_flagged_as_failed_is_at_most_the_pass_share(
    runs: list[tuple[str, list[str] | None]],
) -> None:
    """Property: the share where a flagged pass counts as not passed is over the same runs as
    the pass share and never above it, and never below the unflagged share."""
    records = [
        RunRecord(
            "t",
            "m",
            "a",
            str(n),
            PatchResult(status=status),  # type: ignore[arg-type]
            flags=None if kinds is None else tuple(kinds),
        )
        for n, (status, kinds) in enumerate(runs)
    ]
    guard = row_guard(records)
    if guard.flagged_as_failed is None:
        assert all(kinds is None for _, kinds in runs)
        return
    assert guard.unflagged is not None
    passes = sum(status == "passed" for status, _ in runs)
    assert guard.flagged_as_failed.of == len(runs)
    assert guard.unflagged.passed <= guard.flagged_as_failed.passed <= passes
