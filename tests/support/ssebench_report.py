"""SSEBench's report arithmetic, written anew from its sources, and the run trees it reads.

`ssebench_report` reads every `summary.json` its run summary model reads
(`tests.support.ssebench_models`) and whose task, model and agent are its folder's; keeps the latest
run of each (task, model, agent) by (start time, none the oldest; run id as text); drops
reference runs, then runs whose grade says `error`; per (model, agent), in the order models
then agents first appear, counts the runs whose `build_success` is true, whose `pov_total` is
set and equals `pov_passed` (PoCs that never ran, after a failed build or on a task without
PoCs, stopped none), whose functional and intent tests are true, each over every run of the
row. `summary`, `write` and the strategy `runs` make the trees; `as_ssebench` reads
ssegrade's JSON report the same way, and `same` compares the two.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from pydantic import ValidationError

from tests.support.ssebench_models import RunSummary

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
