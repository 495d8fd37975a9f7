"""Why runs failed, in every format of the report; and what the page says of itself and of
cached runs (`ssegrade report`, real folder trees, through the command)."""

from __future__ import annotations

import csv
import io
import json
import re
from importlib import metadata
from pathlib import Path

import pytest

from tests.support.reportcommand import invoke
from tests.support.runfolders import summary, write_run

MESSAGES = {
    "t1": "Patch apply failed: error: patch failed: src/a.c:12",
    "t2": "Build failed",
    "t3": "PoC failed: /ssebench/pocs/poc<3>.bin",
    "t4": "Functional test failed",
}


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """One failed run per task with its own first failure, a passed run, an error run (left
    out), and a run whose grade a batch reused from another (cached)."""
    root = tmp_path / "results"
    for task, message in MESSAGES.items():
        doc = summary(task=task, status="failed")
        doc["patch_result"]["error_msg"] = message
        write_run(root, f"{task}/openai/gpt-5/codex/r1", doc)
    write_run(root, "t5/openai/gpt-5/codex/r1", summary(task="t5"))
    error = summary(task="t6", status="error", started_at="2025-07-01T00:00:00Z")
    error["patch_result"]["error_msg"] = "Timeout (3600s)"
    write_run(root, "t6/openai/gpt-5/codex/r1", error)
    source = write_run(root, "t5/openai/gpt-5/claude/r1", summary(task="t5"))
    (source / "logs").mkdir()
    cached = summary(task="t5", cached_from="t5/openai/gpt-5/claude/r1")
    write_run(root, "t5/openai/gpt-5/aider/r2", cached)
    return root


def messages(text: str) -> set[str]:
    """Which of the first failures the text holds."""
    return {m for m in [*MESSAGES.values(), "Timeout (3600s)"] if m in text}


def test_the_table_says_each_runs_first_failure(results: Path) -> None:
    """The text lists each run with its first failure (and counts them), and the error run
    left out with why."""
    out = invoke(str(results), columns=200)
    assert out.exit_code == 0
    assert messages(out.stdout) == {*MESSAGES.values(), "Timeout (3600s)"}
    assert re.search(r"^\s+1\s+Build failed$", out.stdout, re.M)


def test_json_gives_each_runs_error_msg(results: Path) -> None:
    """`--format json`: `error_msg` of each kept run and of each run left out."""
    doc = json.loads(invoke(str(results), "--format", "json").stdout)
    given = {run["task"]: run["error_msg"] for run in [*doc["tasks"], *doc["excluded"]]}
    assert given == {**MESSAGES, "t6": "Timeout (3600s)", "t5": None}


@pytest.mark.parametrize("form", ["jsonl", "csv"])
def test_per_run_exports_give_each_runs_error_msg(results: Path, form: str) -> None:
    """`--format jsonl` and `--format csv --per-run`: each run's `error_msg`."""
    if form == "jsonl":
        text = invoke(str(results), "--format", "jsonl").stdout
        rows = [json.loads(line) for line in text.splitlines()]
    else:
        text = invoke(str(results), "--format", "csv", "--per-run").stdout
        rows = list(csv.DictReader(io.StringIO(text)))
    given = {row["task"]: row["error_msg"] or None for row in rows}
    assert given == {**MESSAGES, "t6": "Timeout (3600s)", "t5": None}


def test_the_page_says_why_escaped(results: Path) -> None:
    """The page's runs' table gives each run's first failure, escaped; the runs that did not
    pass are counted by first failure."""
    page = invoke(str(results), "--format", "html").stdout
    table = page[page.index('<table id="runs">') :]
    assert "PoC failed: /ssebench/pocs/poc&lt;3&gt;.bin" in table
    assert "poc<3>" not in page
    for message in (*MESSAGES.values(), "Timeout (3600s)"):
        assert message.replace("<", "&lt;").replace(">", "&gt;") in table
    assert "Why runs did not pass" in page


def test_the_page_says_its_version_and_time(results: Path, tmp_path: Path) -> None:
    """The page names the ssegrade that made it and when (UTC)."""

    page = invoke(str(results), "--format", "html").stdout
    version = metadata.version("ssegrade")
    assert f'<meta name="generator" content="ssegrade {version}">' in page
    assert re.search(
        rf"Made by ssegrade {re.escape(version)} on \d{{4}}-\d\d-\d\d \d\d:\d\d UTC", page
    )


def test_a_cached_run_links_the_logs_of_its_source(results: Path, tmp_path: Path) -> None:
    """A cached run links the logs of the run whose grade it reuses; a source outside the
    results folder, or reached through a link, is not linked."""
    out = tmp_path / "report.html"
    assert invoke(str(results), "--format", "html", "-o", str(out)).exit_code == 0
    page = out.read_text()
    href = "results/t5/openai/gpt-5/claude/r1/logs/"
    assert f'href="{href}"' in page
    assert (tmp_path / href).is_dir()
    assert "grade reused from t5/openai/gpt-5/claude/r1" in page
    hostile = summary(task="t7", cached_from="../../etc/x/y")
    write_run(results, "t7/openai/gpt-5/aider/r2", hostile)
    (tmp_path / "outside" / "m" / "a" / "r" / "logs").mkdir(parents=True)
    (results / "t8" / "openai").mkdir(parents=True)
    (results / "t8" / "openai" / "gpt-5").symlink_to(tmp_path / "outside")
    linked = summary(task="t9", cached_from="t8/openai/gpt-5/a/r")
    write_run(results, "t9/openai/gpt-5/aider/r2", linked)
    assert invoke(str(results), "--format", "html", "-o", str(out)).exit_code == 0
    page = out.read_text()
    assert "etc/x/y/logs" not in page
    assert "t8/openai/gpt-5/a/r/logs" not in page


CONTROLS = "\x1b]0;owned\x07\x1b[2J\r\x08\x9b31m"


def test_the_text_is_inert_on_a_terminal(tmp_path: Path) -> None:
    """A first failure, a model's folder or a batch's run folder holding terminal controls
    (escape sequences, a bell, a carriage return, a C1 control) is printed with each control
    shown as `�`: nothing a terminal would act on reaches it, and the layout holds."""
    root = tmp_path / "results"
    model = "evil\x1b[31m"
    doc = summary(task="t1", status="failed")
    doc["patch_result"]["error_msg"] = f"Patch apply failed: {CONTROLS}"
    write_run(root, f"t1/{model}/codex/r1", doc)
    batch = {
        "label": f"night{CONTROLS}",
        "ssegrade": ["1.0"],
        "engines": ["local"],
        "containment": ["full"],
        "jobs": [{"path": "jobs.jsonl", "sha256": "0" * 64, "count": 1}],
        "commands": [
            {
                "ssegrade": "1.0",
                "engine": "local",
                "workers": 1,
                "containment": "full",
                "jobs": "jobs.jsonl",
                "started_at": "2026-11-30T10:00:00Z",
                "ended_at": "2026-11-30T10:00:01Z",
                "interrupted": False,
            }
        ],
        "started_at": "2026-11-30T10:00:00Z",
        "ended_at": "2026-11-30T10:00:01Z",
        "interrupted": False,
        "counts": {"passed": 0, "flagged": 0, "failed": 1, "error": 0, "not_graded": 0},
        "runs": {
            "passed": [],
            "flagged": [],
            "failed": [f"t1/{model}/codex/r1"],
            "error": [],
            "not_graded": [],
        },
    }
    (root / "batch.json").write_text(json.dumps(batch))
    for args in ((), ("--batch",), ("--batch", "-v")):
        text = invoke(str(root), *args).stdout
        assert not [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) < 0xA0]
        assert "�" in text
    table = invoke(str(root)).stdout
    assert "Patch apply failed: �]0;owned��[2J���31m" in table
