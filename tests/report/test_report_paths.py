"""Task files in `error_msg` named relative to the task folder, in every format of the report
(`ssegrade.report._paths`): a host path is the same failure on every host, groups as one in
"why runs did not pass" and does not fold one path over several lines; SSEBench's own
`/ssebench/…` paths stay as SSEBench prints them."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ssegrade.report import relative_message
from tests.support.reportcommand import invoke
from tests.support.runfolders import summary, write_run

HOSTS = ("/tmp/pytest-of-root/pytest-12/x0/tasks/tlv-001", "/srv/grading/a/tasks/tlv-001")


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """Two runs of one task graded on two hosts, whose first PoC failed, and one run read
    from SSEBench."""
    root = tmp_path / "results"
    for n, host in enumerate(HOSTS):
        doc = summary(task="tlv-001", status="failed")
        doc["task"]["files"] = {"poc": ["pocs/poc.py", "pocs/other.bin"]}
        doc["patch_result"]["error_msg"] = f"PoC failed: {host}/pocs/poc.py"
        write_run(root, f"tlv-001/m/a/r{n}", doc)
    bench = summary(task="zstd-77", status="failed")
    bench["patch_result"]["error_msg"] = "PoC failed: /ssebench/pocs/poc.bin"
    write_run(root, "zstd-77/m/a/r1", bench)
    return root


def test_every_format_names_the_poc_relative_to_the_task(results: Path) -> None:
    """text, json, jsonl, csv and html: `PoC failed: pocs/poc.py`, never the host path."""
    outputs = {
        fmt: invoke(str(results), "--format", fmt, "--runs", "all", *extra).stdout
        for fmt, extra in (
            ("table", ()),
            ("json", ()),
            ("jsonl", ()),
            ("csv", ("--per-run",)),
            ("html", ()),
        )
    }
    for fmt, text in outputs.items():
        assert "PoC failed: pocs/poc.py" in text, fmt
        assert "PoC failed: /ssebench/pocs/poc.bin" in text, fmt
        assert all(host not in text for host in HOSTS), fmt
    runs = [json.loads(line) for line in outputs["jsonl"].splitlines()]
    assert sorted(run["error_msg"] for run in runs) == [
        "PoC failed: /ssebench/pocs/poc.bin",
        "PoC failed: pocs/poc.py",
        "PoC failed: pocs/poc.py",
    ]
    rows = list(csv.DictReader(io.StringIO(outputs["csv"])))
    assert {row["error_msg"] for row in rows} == {
        "PoC failed: pocs/poc.py",
        "PoC failed: /ssebench/pocs/poc.bin",
    }


paths = st.lists(st.text("abc-_.", min_size=1, max_size=6), min_size=1, max_size=4).map("/".join)


@given(paths, paths)
def test_a_task_file_under_any_folder_reads_the_same(folder: str, name: str) -> None:
    """Property: a task file under any host folder is named by its path in the task, and the
    message says nothing of the folder; under `/ssebench/` it is left as it is."""
    message = f"PoC failed: /{folder}/{name}"
    assert relative_message(message, [name]) == f"PoC failed: {name}"
    kept = f"PoC failed: /ssebench/{name}"
    assert relative_message(kept, [name]) == kept
