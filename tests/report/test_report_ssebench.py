"""`ssegrade report` on a results tree shaped exactly as the SSEBench runner and `ssegrade
batch` write it: `RESULTS/<task>/<model…>/<agent>/<run-id>/` with `summary.json` (task config
under `task`, run config under `config`), a rewritten `result.json`, an `archive/` folder and a
`latest` link beside the runs of each (task, model, agent)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from interpreters.cli.report import report

TASK_CONFIG = {
    "id": "",
    "project": "demo",
    "repository": "https://example.org/demo",
    "language": "c",
    "source": "/src/demo",
    "task_description": {"issue": "crash"},
    "scripts": {"build": "build.sh", "run": "run.sh", "test": "test.sh"},
    "files": {"patch": "fix.diff", "poc": ["pocs/a"], "future_test": None},
}


def run_config(model: str, agent: str, reference: bool = False) -> dict[str, Any]:
    """The run config the SSEBench runner writes (the report reads agent, model and
    reference_run; the rest is ignored)."""
    return {
        "agent": agent,
        "model": model,
        "mode": "sandbox",
        "timeout": 3600,
        "difficulty": 2,
        "tool_layer": "default",
        "egress": "restricted",
        "reference_run": reference,
        "plugins": [],
    }


def write(
    root: Path,
    task: str,
    model: str,
    agent: str,
    run_id: str,
    status: str,
    started_at: str | None,
    *,
    reference: bool = False,
    extra: dict[str, Any] | None = None,
) -> Path:
    """One run folder: summary.json, the rewritten result.json, archive/, and `latest` pointed
    at it (as the runner does when a run starts)."""
    folder = root / task / model / agent / run_id
    (folder / "archive").mkdir(parents=True)
    passed = status == "passed"
    patch: dict[str, Any] = {"status": status, "error_log": "log " * 50}
    if status == "error":
        patch["error_msg"] = "Timeout (3600s)"
    else:
        patch.update(
            build_success=True,
            pov_passed=1 if passed else 0,
            pov_total=1,
            func_test_success=True,
            intent_test_success=None,
            error_msg=None if passed else "PoC failed: /ssebench/pocs/a",
        )
    runtime = {"agent_duration": 600, "agent_timeout": False, "evaluator_timeout": False}
    config = run_config(model, agent, reference)
    result = {"patch_result": patch, "runtime_result": runtime, "config": config}
    (folder / "result.json").write_text(json.dumps(result))
    summary = {
        "task": {**TASK_CONFIG, "id": task},
        "config": config,
        "patch_result": patch,
        "runtime_result": runtime,
        "spend": 0.5,
        "run_id": run_id,
        "started_at": started_at,
        "plugin_results": [],
        **(extra or {}),
    }
    (folder / "summary.json").write_text(json.dumps(summary))
    latest = folder.parent / "latest"
    latest.unlink(missing_ok=True)
    latest.symlink_to(run_id)
    return folder


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """Three tasks; a model name with `/` (two and three folder levels); a reference run; an
    error run that is the newest of its group; runs without `started_at` named run-9, run-10."""
    root = tmp_path / "results"
    gpt = "openai/gpt-5"
    write(
        root, "gjson-196", gpt, "codex", "20250601-100000-aaaaaa", "passed", "2025-06-01T10:00:00Z"
    )
    write(
        root, "gjson-196", gpt, "codex", "20250602-100000-bbbbbb", "failed", "2025-06-02T10:00:00Z"
    )
    write(root, "libxml-1", gpt, "codex", "run-10", "passed", None)
    write(root, "libxml-1", gpt, "codex", "run-9", "failed", None)
    write(root, "png-3", gpt, "codex", "20250601-100000-cccccc", "passed", "2025-06-01T10:00:00Z")
    write(root, "png-3", gpt, "codex", "20250603-100000-dddddd", "error", "2025-06-03T10:00:00Z")
    write(
        root,
        "gjson-196",
        "none",
        "reference",
        "20250601-090000-eeeeee",
        "passed",
        "2025-06-01T09:00:00Z",
        reference=True,
    )
    deep = "org/team/m"
    for task in ("gjson-196", "libxml-1", "png-3"):
        write(
            root, task, deep, "opencode", "20250605-100000-ffffff", "passed", "2025-06-05T10:00:00Z"
        )
    return root


def report_json(results: Path, *args: str) -> dict[str, Any]:
    """The JSON report of the tree."""
    out = CliRunner().invoke(report, [str(results), "--format", "json", *args])
    assert out.exit_code == 0, out.stderr
    assert out.stderr == ""
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def test_latest_reads_the_run_config_and_leaves_reference_and_error_groups_out(
    results: Path,
) -> None:
    """`config` is the run config: the reference run is seen and left out; the newest run of
    each group is picked among all its runs, and a newest `error` run takes its task out of
    the shares; `latest` links are not runs; run-10 is newer than run-9."""
    doc = report_json(results)
    rows = {(r["model"], r["agent"]): r for r in doc["rows"]}
    assert set(rows) == {("openai/gpt-5", "codex"), ("org/team/m", "opencode")}
    codex = rows[("openai/gpt-5", "codex")]
    assert codex["runs"] == 2
    assert codex["passed"]["passed"] == 1
    kept = sorted(
        (t["task"], t["run_id"], t["trial"]) for t in doc["tasks"] if t["agent"] == "codex"
    )
    assert kept == [("gjson-196", "20250602-100000-bbbbbb", 2), ("libxml-1", "run-10", 2)]
    left = sorted((x["task"], x["agent"], x["why"]) for x in doc["excluded"])
    assert left == [
        ("gjson-196", "reference", "reference run"),
        ("png-3", "codex", "error: Timeout (3600s)"),
    ]
    assert doc["set_aside"] == 3
    assert rows[("org/team/m", "opencode")]["runs"] == 3
    assert doc["rows"][0]["agent"] == "opencode"  # sorted by pass share


def test_all_runs_count_each_folder_once(results: Path) -> None:
    """`--runs all`: every graded run once (links ignored), reference and error runs listed."""
    doc = report_json(results, "--runs", "all")
    codex = [t for t in doc["tasks"] if t["agent"] == "codex"]
    assert len(codex) == 5
    assert len({t["folder"] for t in doc["tasks"]}) == len(doc["tasks"]) == 8
    assert len(doc["excluded"]) == 2
    row = next(r for r in doc["rows"] if r["agent"] == "codex")
    assert row["trials"] == 1
    assert row["clustered"] is not None


def test_result_json_alone_reads_its_run_config(tmp_path: Path) -> None:
    """Without summary.json (a run the runner did not finish recording), the rewritten
    result.json still names the model and agent and marks reference runs."""
    root = tmp_path / "results"
    folder = write(root, "t1", "openai/gpt-5", "codex", "r1", "passed", None)
    (folder / "summary.json").unlink()
    ref = write(root, "t1", "x", "reference", "r1", "passed", None, reference=True)
    (ref / "summary.json").unlink()
    doc = report_json(root)
    assert [(r["model"], r["agent"]) for r in doc["rows"]] == [("openai/gpt-5", "codex")]
    assert [x["why"] for x in doc["excluded"]] == ["reference run"]


def test_a_cached_batch_run_is_an_ordinary_run(tmp_path: Path) -> None:
    """`ssegrade batch` marks a reused result with `cached_from` (and adds `digest`): such a
    run counts as any other."""
    root = tmp_path / "results"
    write(root, "t1", "m", "a", "r1", "passed", "2026-11-30T10:00:00Z", extra={"digest": "d1"})
    write(
        root,
        "t1",
        "m",
        "b",
        "r2",
        "passed",
        "2026-11-30T11:00:00Z",
        extra={"digest": "d1", "cached_from": "t1/m/a/r1"},
    )
    doc = report_json(root)
    rows = {r["agent"]: r for r in doc["rows"]}
    assert rows["b"]["runs"] == 1
    assert rows["b"]["passed"]["passed"] == 1
    cached = next(t for t in doc["tasks"] if t["agent"] == "b")
    assert cached["cached_from"] == "t1/m/a/r1"
