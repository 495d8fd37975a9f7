"""`ssegrade report --rules ssebench` gives SSEBench's report's shares, exactly.

`ssebench_report` (`tests/support/ssebench_report.py`) is SSEBench's report arithmetic, written anew
from its sources. The same trees, made by hypothesis, must give the same rows through the
command; the default rules give the seed's.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from interpreters.cli.report import report
from ssegrade.report import DIFFERENCE
from tests.support.ssebench_report import (
    as_ssebench,
    grade,
    runs,
    same,
    ssebench_report,
    summary,
    write,
)

# ---------------------------------------------------------------------------- SSEBench's


def ours(root: Path, *args: str) -> dict[str, Any]:
    out = CliRunner().invoke(report, [str(root), "--format", "json", *args])
    assert out.exit_code == 0, out.output
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


# ---------------------------------------------------------------------------- a known tree


def known_tree(root: Path) -> None:
    """Two tasks for one model and agent, an older trial, a reference run, a run of a model
    that never answered (graded `error`), a result.json-only folder and a summary that is not
    SSEBench's."""
    cs, cc = "claude-sonnet-4-6", "claude-code"
    failed = grade("failed", True, "0/1", False, False)
    passed = grade("passed", True, "1/1", True, True)
    write(
        root, summary("bluemonday-1", cs, cc, "20260601-091500-a", failed, spend=1.10, minutes=15)
    )
    write(
        root,
        summary(
            "gjson-1",
            cs,
            cc,
            "20260602-090000-b",
            failed,
            spend=0.60,
            minutes=20,
            started_at="2026-06-02T09:00:00Z",
        ),
    )
    write(
        root,
        summary(
            "gjson-1",
            cs,
            cc,
            "20260602-101000-c",
            passed,
            spend=0.42,
            minutes=5,
            started_at="2026-06-02T10:10:00Z",
        ),
    )
    write(
        root,
        summary(
            "bluemonday-1",
            "none",
            "reference",
            "20260601-090000-d",
            passed,
            reference=True,
            spend=0.0,
        ),
    )
    broken = grade("error", True, "0/1", True, None)
    broken["error_msg"] = "The agent exited with status 1 and the model answered no call"
    write(root, summary("gjson-1", "gpt-5.2", "codex", "20260603-080000-e", broken, spend=0.0))
    grade_only = {"patch_result": passed, "config": {"model": cs, "agent": cc}}
    folder = root / "gjson-1" / cs / cc / "20260604-000000-f"
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps(grade_only | {"run_id": "x"}))
    odd = summary("gjson-1", cs, cc, "20260605-000000-g", failed)
    odd["task"]["language"] = "python"
    write(root, odd)


def test_the_known_tree_gives_ssebenchs_published_shares(tmp_path: Path) -> None:
    known_tree(tmp_path)
    latest = ours(tmp_path, "--rules", "ssebench")
    assert latest["rules"] == "ssebench"
    assert as_ssebench(latest) == [
        {
            "model": "claude-sonnet-4-6",
            "agent": "claude-code",
            "runs": 2,
            "build": 2,
            "poc": 1,
            "func": 1,
            "intent": 1,
            "spend": 0.76,
            "minutes": 10.0,
        }
    ]
    whys = {(x["model"], x["why"]) for x in latest["excluded"]}
    assert whys == {
        ("none", "reference run"),
        ("gpt-5.2", "error: The agent exited with status 1 and the model answered no call"),
    }
    every = ours(tmp_path, "--rules", "ssebench", "--runs", "all")
    assert as_ssebench(every)[0] | {"spend": 0.71, "minutes": 13.3} == {
        "model": "claude-sonnet-4-6",
        "agent": "claude-code",
        "runs": 3,
        "build": 3,
        "poc": 1,
        "func": 1,
        "intent": 1,
        "spend": 0.71,
        "minutes": 13.3,
    }
    assert round(every["rows"][0]["spend"], 2) == 0.71
    same(ssebench_report(tmp_path), as_ssebench(latest))
    same(ssebench_report(tmp_path, "all"), as_ssebench(every))


def test_the_default_rules_differ_as_the_footer_says(tmp_path: Path) -> None:
    """A run whose build failed, a task without intent tests and a task without PoCs:
    ssegrade's shares leave a check the task lacks out; SSEBench's count it in, as not passed.
    PoCs that never ran pass under neither."""
    cs, cc = "m", "a"
    write(tmp_path, summary("t1", cs, cc, "r1", grade("failed", False, None, None, None)))
    write(
        tmp_path,
        summary("t2", cs, cc, "r1", grade("passed", True, "1/1", True, None), checks="bpf"),
    )
    write(
        tmp_path,
        summary("t3", cs, cc, "r1", grade("passed", True, None, True, True), checks="bfi"),
    )
    seed = ours(tmp_path)["rows"][0]
    theirs = ours(tmp_path, "--rules", "ssebench")["rows"][0]
    assert (seed["poc"]["passed"], seed["poc"]["of"]) == (1, 2)
    assert (theirs["poc"]["passed"], theirs["poc"]["of"]) == (1, 3)
    assert (seed["intent"]["passed"], seed["intent"]["of"]) == (1, 2)
    assert (theirs["intent"]["passed"], theirs["intent"]["of"]) == (1, 3)
    table = CliRunner().invoke(report, [str(tmp_path)]).stdout
    footer = " ".join(table.split())
    assert f"Rules: ssegrade's. {' '.join(DIFFERENCE.split())}" in footer


def test_ties_and_missing_times_in_ssebenchs_order(tmp_path: Path) -> None:
    """Without start times, `run-9` is SSEBench's latest (text order), `run-10` ssegrade's."""
    fail = grade("failed", False, None, None, None)
    win = grade("passed", True, "1/1", True, True)
    write(tmp_path, summary("t", "m", "a", "run-9", fail, started_at=None))
    write(tmp_path, summary("t", "m", "a", "run-10", win, started_at=None))
    assert [t["run_id"] for t in ours(tmp_path, "--rules", "ssebench")["tasks"]] == ["run-9"]
    assert [t["run_id"] for t in ours(tmp_path)["tasks"]] == ["run-10"]


# ---------------------------------------------------------------------------- any tree


@settings(max_examples=40, deadline=None)
@given(st.lists(runs, min_size=1, max_size=12), st.sampled_from(["latest", "all"]))
def test_any_tree_gives_ssebenchs_rows(made: list[Any], which: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for task, model, agent, run_id, doc, when, reference, checks in made:
            write(
                root,
                summary(
                    task,
                    model,
                    agent,
                    run_id,
                    doc,
                    started_at=when,
                    reference=reference and model == "m1",
                    checks=checks,
                ),
            )
        theirs = ssebench_report(root, which)
        out = CliRunner().invoke(
            report, [str(root), "--format", "json", "--rules", "ssebench", "--runs", which]
        )
        if not theirs:
            assert out.exit_code != 0 or json.loads(out.stdout)["rows"] == []
            return
        assert out.exit_code == 0, out.output
        same(theirs, as_ssebench(json.loads(out.stdout)))
