"""`ssegrade report --rules ssebench` gives SSEBench's report's shares, exactly.

`ssebench_report` below is SSEBench's report arithmetic, written anew from its sources: read
every `summary.json` its run summary model reads (`tests.ssebench_models`) and whose task,
model and agent are its folder's; keep the latest run of each (task, model, agent) by (start
time, none the oldest; run id as text); drop reference runs, then runs whose grade says
`error`; per (model, agent), in the order models then agents first appear, count the runs
whose `build_success` is true, whose `pov_total` is set and equals `pov_passed` (PoCs that
never ran, after a failed build or on a task without PoCs, stopped none), whose functional and
intent tests are true, each over every run of the row. The same trees, made by
hypothesis, must give the same rows through the command; the default rules give the seed's.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from interpreters.report_cli import report
from ssegrade.report import DIFFERENCE
from tests.ssebench_models import RunSummary

NEVER = datetime.min.replace(tzinfo=UTC)
CHECKS = ("build", "poc", "func", "intent")


def task_config(task: str, checks: str = "bpfi") -> dict[str, Any]:
    return {
        "id": task,
        "project": "demo",
        "repository": "https://example.org/demo",
        "language": "go",
        "source": "/src/demo",
        "task_description": {"issue": "it crashes"},
        "scripts": {
            "build": "build.sh" if "b" in checks else None,
            "run": "run.sh" if "p" in checks else None,
            "test": "test.sh" if "f" in checks else None,
        },
        "files": {"poc": ["pocs/a"] if "p" in checks else None, "future_test": None}
        | ({"future_test": "t.diff"} if "i" in checks else {}),
    }


def summary(
    task: str,
    model: str,
    agent: str,
    run_id: str,
    grade: dict[str, Any],
    *,
    started_at: str | None = "2026-06-01T10:00:00Z",
    reference: bool = False,
    spend: float = 0.5,
    minutes: int = 10,
    checks: str = "bpfi",
) -> dict[str, Any]:
    return {
        "task": task_config(task, checks),
        "config": {
            "agent": agent,
            "model": model,
            "mode": "sandbox",
            "timeout": 3600,
            "difficulty": 2,
            "tool_layer": "generic",
            "egress": "restricted",
            "reference_run": reference,
        },
        "patch_result": grade,
        "runtime_result": {
            "agent_duration": minutes * 60,
            "agent_timeout": False,
            "evaluator_timeout": False,
        },
        "spend": spend,
        "run_id": run_id,
        "started_at": started_at,
    }


def write(root: Path, doc: dict[str, Any], name: str = "summary.json") -> None:
    config = doc["config"]
    folder = root / doc["task"]["id"] / config["model"] / config["agent"] / doc["run_id"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(doc))


# ---------------------------------------------------------------------------- SSEBench's


def ssebench_report(root: Path, runs: str = "latest") -> list[dict[str, Any]]:
    """The rows of SSEBench's report for the summaries under `root`."""
    found = []
    for here, subdirs, files in os.walk(root):
        if "summary.json" in files or "result.json" in files:
            subdirs.clear()
        if "summary.json" not in files:
            continue
        folder = Path(here)
        if len(folder.relative_to(root).parts) < 4:
            continue
        text = (folder / "summary.json").read_text()
        try:
            read = RunSummary.model_validate_json(text)
        except ValidationError:
            continue
        named = root / read.task.id / read.config.model / read.config.agent / folder.name
        if named != folder:
            continue
        key = (read.task.id, read.config.model, read.config.agent)
        found.append((key, (read.started_at or NEVER, folder.name), json.loads(text)))
    groups: dict[tuple[str, str, str], list[Any]] = defaultdict(list)
    for key, order, doc in found:
        groups[key].append((order, doc))
    chosen = []
    for key in sorted(groups):
        ordered = [doc for _, doc in sorted(groups[key], key=lambda pair: pair[0])]
        chosen += ordered[-1:] if runs == "latest" else ordered
    scored = [
        doc
        for doc in chosen
        if not doc["config"].get("reference_run", False)
        and doc["patch_result"].get("status") != "error"
    ]
    models = list(dict.fromkeys(doc["config"]["model"] for doc in scored))
    agents = list(dict.fromkeys(doc["config"]["agent"] for doc in scored))
    rows = []
    for model in models:
        for agent in agents:
            subset = [
                doc
                for doc in scored
                if (doc["config"]["model"], doc["config"]["agent"]) == (model, agent)
            ]
            if not subset:
                continue
            grades = [doc["patch_result"] for doc in subset]
            rows.append(
                {
                    "model": model,
                    "agent": agent,
                    "runs": len(subset),
                    "build": sum(g.get("build_success") is True for g in grades),
                    "poc": sum(
                        g.get("pov_total") is not None and g.get("pov_passed") == g.get("pov_total")
                        for g in grades
                    ),
                    "func": sum(g.get("func_test_success") is True for g in grades),
                    "intent": sum(g.get("intent_test_success") is True for g in grades),
                    "spend": sum(doc["spend"] for doc in subset) / len(subset),
                    "minutes": sum(doc["runtime_result"]["agent_duration"] for doc in subset)
                    / len(subset)
                    / 60,
                }
            )
    return rows


def ours(root: Path, *args: str) -> dict[str, Any]:
    out = CliRunner().invoke(report, [str(root), "--format", "json", *args])
    assert out.exit_code == 0, out.output
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def as_ssebench(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "model": row["model"],
            "agent": row["agent"],
            "runs": row["runs"],
            **{check: row[check]["passed"] for check in CHECKS},
            "spend": row["spend"],
            "minutes": row["minutes"],
        }
        for row in doc["rows"]
    ]


def same(theirs: list[dict[str, Any]], mine: list[dict[str, Any]]) -> None:
    for row in theirs:
        row["spend"] = round(row["spend"], 3)
        row["minutes"] = round(row["minutes"], 3)
    assert mine == theirs
    for row in mine:  # every share is over all the row's runs
        assert row["runs"] >= max(row[check] for check in CHECKS)


# ---------------------------------------------------------------------------- a known tree


def grade(status: str | None, build: bool | None, pocs: str | None, func: Any, intent: Any) -> Any:
    passed, _, total = (pocs or "/").partition("/")
    doc = {
        "build_success": build,
        "pov_passed": int(passed) if pocs else None,
        "pov_total": int(total) if pocs else None,
        "func_test_success": func,
        "intent_test_success": intent,
        "error_msg": None,
        "error_log": None,
    }
    return doc if status is None else {"status": status, **doc}


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

grades = st.builds(
    grade,
    st.sampled_from([None, "passed", "failed", "error"]),
    st.sampled_from([None, True, False]),
    st.sampled_from([None, "0/1", "1/1", "1/2", "2/2"]),
    st.sampled_from([None, True, False]),
    st.sampled_from([None, True, False]),
)
runs = st.tuples(
    st.sampled_from(["t1", "t2", "t3"]),
    st.sampled_from(["m1", "org/m2"]),
    st.sampled_from(["a1", "a2"]),
    st.sampled_from(["run-9", "run-10", "r1", "r2"]),
    grades,
    st.sampled_from([None, "2026-06-01T10:00:00Z", "2026-06-02T10:00:00Z"]),
    st.booleans(),
    st.sampled_from(["bpfi", "bpf", "bf", "f"]),
)


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
