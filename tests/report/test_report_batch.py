"""`ssegrade report DIR --batch`: the batch's own summary, `DIR/batch.json`, read safely and
printed readably (`interpreters.report.batch`, `ssegrade.report._batch`): any document the
batch's own model writes (`ssegrade.batch_summary`) reads back, and so does the file a real
`ssegrade batch` of a bundled example writes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

import interpreters.report.reader
from ssegrade.batch import OUTCOMES
from ssegrade.batch import _summary as written
from ssegrade.report import parse_batch
from tests.support.exampletasks import lay_out
from tests.support.realtask import ssegrade
from tests.support.reportcommand import invoke, one_line_error
from tests.support.runfolders import summary, write_run

SHA = "3f" * 32
RUNS: dict[str, list[str]] = {
    "passed": ["t1/openai/gpt-5/codex/r1", "t1/openai/gpt-5/codex/r9", "t2/openai/gpt-5/codex/r1"],
    "flagged": ["t5/openai/gpt-5/codex/r1"],
    "failed": ["t3/openai/gpt-5/codex/r1"],
    "error": ["t4/qwen/openhands/r2"],
    "not_graded": ["t6/openai/gpt-5/codex/r1"],
}


def document(runs: dict[str, list[str]] = RUNS, **changes: Any) -> dict[str, Any]:
    """A batch.json document as `ssegrade batch` writes it."""
    command = {
        "ssegrade": "1.4.0",
        "engine": "local",
        "workers": 2,
        "containment": "full",
        "jobs": "jobs.jsonl",
        "started_at": "2026-11-30T10:00:00Z",
        "ended_at": "2026-11-30T10:42:13Z",
        "interrupted": changes.pop("interrupted", False),
    }
    doc: dict[str, Any] = {
        "label": "nightly",
        "ssegrade": ["1.4.0"],
        "engines": [changes.pop("engine", "local")],
        "containment": ["full"],
        "jobs": [{"path": "jobs.jsonl", "sha256": SHA, "count": 6}],
        "commands": [command],
        "started_at": "2026-11-30T10:00:00Z",
        "ended_at": "2026-11-30T10:42:13Z",
        "interrupted": command["interrupted"],
        "counts": {kind: len(runs[kind]) for kind in OUTCOMES},
        "runs": runs,
        "errors": {"timeout": runs["error"]} if runs["error"] else {},
        "cached": runs["passed"][1:2],
        "resume": ["ssegrade batch jobs.jsonl --results results"] if runs["not_graded"] else [],
    }
    doc.update(changes)
    return doc


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    """A results folder with its batch.json and the failed and error runs' summaries."""
    root = tmp_path / "results"
    root.mkdir()
    (root / "batch.json").write_text(json.dumps(document(), indent=1) + "\n")
    failed = summary(task="t3", model="openai/gpt-5", agent="codex", status="failed")
    failed["patch_result"]["error_msg"] = "PoC failed: /ssebench/pocs/poc.bin"
    write_run(root, RUNS["failed"][0], failed)
    error = summary(task="t4", model="qwen", agent="openhands", status="error")
    error["patch_result"]["error_msg"] = "Timeout (3600s)"
    write_run(root, RUNS["error"][0], error)
    return root


def test_the_summary_reads_readably(batch: Path) -> None:
    """Label, versions, engines, containment, the JOBS files and their digests, first start and
    last end, the counts per outcome (a cached run with its outcome, errors by kind), the run
    folders of the flagged, error, failed and not graded runs, each failure with its first
    failure, and the command that grades what is left; not the passed runs' folders."""
    out = invoke(str(batch), "--batch")
    assert out.exit_code == 0, out.stderr
    text = out.stdout
    for piece in (
        'Results folder "nightly": 1 batch command, by ssegrade 1.4.0',
        "engine local; containment: full",
        f"jobs: jobs.jsonl (6 jobs, sha256 {SHA[:16]}…)",
        "first started 2026-11-30 10:00:00 UTC, last ended 2026-11-30 10:42:13 UTC",
        "last command: 2 workers, 42 min 13 s",
        "runs: 6 graded (1 of them cached), 1 not yet graded",
        "graded: 3 passed, 1 passed and flagged, 1 failed, 1 error (1 timeout)",
        "Passed and flagged by the patch guard (1):\n  t5/openai/gpt-5/codex/r1",
        "Error (1):\n  t4/qwen/openhands/r2: Timeout (3600s)",
        "Failed (1):\n  t3/openai/gpt-5/codex/r1: PoC failed: /ssebench/pocs/poc.bin",
        "Not yet graded (1):\n  t6/openai/gpt-5/codex/r1",
        "To grade what is left:\n  ssegrade batch jobs.jsonl --results results",
        "-v lists the run folders of every outcome",
    ):
        assert piece in text, piece
    assert text.index("Error (1)") < text.index("Failed (1)")
    assert RUNS["passed"][0] not in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_verbose_lists_every_outcome(batch: Path) -> None:
    """`-v`: the run folders of every outcome."""
    text = invoke(str(batch), "--batch", "-v").stdout
    assert f"Passed ({len(RUNS['passed'])}):" in text
    for folder in RUNS["passed"]:
        assert f"  {folder}\n" in text


def test_json_is_the_file_as_it_is(batch: Path) -> None:
    """`--format json`: the file's bytes, once they read as a batch summary."""
    out = invoke(str(batch), "--batch", "--format", "json")
    assert out.exit_code == 0
    assert out.stdout == (batch / "batch.json").read_text()


def test_an_interrupted_batch_says_so(batch: Path) -> None:
    """An interrupted batch says it can be resumed."""
    (batch / "batch.json").write_text(json.dumps(document(interrupted=True, label=None)))
    text = invoke(str(batch), "--batch").stdout
    assert "42 min 13 s, interrupted" in text
    assert "Results folder (no label)" in text


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (None, "batch.json: no such file"),
        ("{", "batch.json: not a batch summary (Invalid JSON"),
        (json.dumps(document(engine="slurm")), "not a batch summary (engines.0: Input should be"),
        (json.dumps({**document(), "counts": {**document()["counts"], "error": 7}}), "counts"),
        (json.dumps(document(started_at="2026-11-30T10:00:00")), "started_at"),
        (json.dumps([1, 2]), "not a batch summary"),
    ],
)
def test_a_missing_or_malformed_summary_is_one_line(
    batch: Path, content: str | None, why: str
) -> None:
    """A missing file, bad JSON, a wrong type, counts that do not match the lists, a time
    without its zone: one line naming the file and the fault, exit 2."""
    target = batch / "batch.json"
    target.unlink()
    if content is not None:
        target.write_text(content)
    out = invoke(str(batch), "--batch")
    assert why in one_line_error(out)
    assert out.exit_code == 2


def test_a_link_a_fifo_or_a_huge_file_is_not_read(
    batch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """batch.json is never read through a link (even to a good summary), from a FIFO (without
    hanging) or beyond the size limit."""
    target = batch / "batch.json"
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(target.read_text())
    target.unlink()
    target.symlink_to(elsewhere)
    assert "symbolic link" in one_line_error(invoke(str(batch), "--batch"))
    target.unlink()
    os.mkfifo(target)
    assert "not a regular file" in one_line_error(invoke(str(batch), "--batch"))
    target.unlink()
    target.write_text(elsewhere.read_text())
    monkeypatch.setattr(interpreters.report.reader, "MAX_BYTES", 100)
    assert "larger than" in one_line_error(invoke(str(batch), "--batch"))


def test_a_run_folder_reached_through_a_link_is_not_read(batch: Path, tmp_path: Path) -> None:
    """A listed run folder one of whose parts is a link is not read through it, and one
    outside the results folder is not a run folder."""
    decoy = tmp_path / "decoy"
    error = summary(task="t4", model="qwen", agent="openhands", status="error")
    error["patch_result"]["error_msg"] = "read through a link"
    write_run(decoy, "openhands/r2", error)
    real = batch / "t4/qwen"
    for child in sorted(real.rglob("*"), reverse=True):
        child.unlink() if child.is_file() else child.rmdir()
    real.rmdir()
    real.symlink_to(decoy)
    runs = {**RUNS, "failed": ["../elsewhere/m/a/r"]}
    (batch / "batch.json").write_text(json.dumps(document(runs)))
    text = invoke(str(batch), "--batch").stdout
    assert "t4/qwen/openhands/r2: (no such run folder)" in text
    assert "read through a link" not in text
    assert "../elsewhere/m/a/r: (not a run folder)" in text


def test_batch_goes_with_table_or_json(batch: Path) -> None:
    """`--batch` with another format is bad usage: one line, exit 2."""
    out = invoke(str(batch), "--batch", "--format", "csv")
    assert "--batch goes with --format table or json" in one_line_error(out)


def test_the_console_script_prints_the_summary(batch: Path) -> None:
    """Through the real console script, piped: the summary, and exit 0; a folder without one:
    exit 2, one line."""
    code = "from interpreters.cli.main import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "report", str(batch), "--batch"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "graded: 3 passed, 1 passed and flagged, 1 failed, 1 error (1 timeout)" in done.stdout
    missing = subprocess.run(
        [sys.executable, "-c", code, "report", str(batch / "t1"), "--batch"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode == 2
    assert missing.stderr.count("\n") == 1
    assert "batch.json: no such file" in missing.stderr


folders = st.lists(
    st.lists(st.text("abz09-_.", min_size=1, max_size=6), min_size=4, max_size=6).map("/".join),
    max_size=5,
)


@given(
    st.fixed_dictionaries(dict.fromkeys(OUTCOMES, folders)),
    st.none() | st.text(max_size=20),
    st.sampled_from(["local", "ray"]),
    st.booleans(),
    st.sampled_from(OUTCOMES),
)
def test_any_summary_batch_writes_reads_back(
    runs: dict[str, list[str]],
    label: str | None,
    engine: str,
    interrupted: bool,
    miscounted: str,
) -> None:
    """Property: any summary of the agreed shape reads back with its values, keys a later
    version adds are ignored; a count that is not its list's length is refused, named."""
    doc = document(runs, label=label, engine=engine, interrupted=interrupted, more={"x": 1})
    read = parse_batch(json.dumps(doc).encode()).unwrap()
    assert (read.label, read.engines, read.interrupted) == (label, (engine,), interrupted)
    for kind in OUTCOMES:
        assert list(getattr(read.runs, kind)) == runs[kind]
        assert getattr(read.counts, kind) == len(runs[kind])
    doc["counts"][miscounted] += 1
    failed = parse_batch(json.dumps(doc).encode())
    assert f"counts.{miscounted} is not the number of runs.{miscounted}" in (
        failed.failure().message
    )


@given(
    st.dictionaries(
        folders.map(lambda f: f[0] if f else "t/m/a/r"),
        st.tuples(st.sampled_from(OUTCOMES[:-1]), st.booleans()),
    ),
    st.lists(st.text("abz/", min_size=1, max_size=8), max_size=4),
    st.none() | st.text(max_size=20),
    st.sampled_from(["local", "ray"]),
    st.integers(1, 64),
    st.sampled_from(["full", "weak"]),
    st.booleans(),
    st.datetimes(timezones=st.just(UTC), min_value=datetime(2000, 1, 1)),
)
def test_what_the_batch_writes_the_report_reads(
    graded: dict[str, tuple[written.Outcome, bool]],
    pending: list[str],
    label: str | None,
    engine: Literal["local", "ray"],
    workers: int,
    containment: str,
    interrupted: bool,
    started: datetime,
) -> None:
    """Property: any `batch.json` the batch's own model writes (`batch_summary(...).to_json()`,
    what `ssegrade batch` writes) reads back with `--batch`'s reader, every field the same."""
    doc = written.batch_summary(
        previous=None,
        command=written.BatchCommand(
            ssegrade="0.1.0",
            engine=engine,
            workers=workers,
            containment=containment,
            jobs="jobs.jsonl",
            started_at=started,
            ended_at=started,
            interrupted=interrupted,
        ),
        jobs=written.JobsFile(
            path="jobs.jsonl", sha256=SHA, count=len(graded), runs=(*graded, *pending)
        ),
        label=label,
        states=[written.RunState(folder=f, outcome=o, cached=c) for f, (o, c) in graded.items()],
        results="results",
    )
    read = parse_batch(doc.to_json()).unwrap()
    assert read.model_dump() == doc.model_dump()


@pytest.fixture
def work() -> Iterator[Path]:
    """A folder the runner account can enter."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-report-batch-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_report_batch_reads_what_a_real_batch_wrote(work: Path) -> None:
    """A real `ssegrade batch` of the bundled TLV example (its reference fix, no patch, and the
    fix again under another run id, which reuses the first grade) writes `batch.json`;
    `report --batch` prints it (the failed run with its first failure), `-v` every outcome's
    folders, `--format json` the file as it is; every folder it names is a run the report
    reads."""
    example = lay_out(work, "tlv", "fix.diff", baseline=False)
    lines = [
        {"agent": "fixer", "run_id": "fix", "patch": str(example.fix)},
        {"agent": "idle", "run_id": "empty", "patch": "/dev/null"},
        {"agent": "fixer", "run_id": "again", "patch": str(example.fix)},
    ]
    jobs = work / "jobs.jsonl"
    common = {"task": str(example.task), "repo": str(example.source), "model": "m"}
    jobs.write_text("".join(json.dumps({**common, **line}) + "\n" for line in lines))
    results = work / "results"
    done = ssegrade(
        "batch", str(jobs), "--results", str(results), "--workers", "2", "--label", "demo"
    )
    assert done.returncode == 0, done.stderr
    shown = ssegrade("report", str(results), "--batch")
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert 'Results folder "demo": 1 batch command, by ssegrade' in text
    assert f"jobs: {jobs} (3 jobs, sha256" in text
    assert "last command: 2 workers," in text
    assert "runs: 3 graded (1 of them cached), 0 not yet graded" in text
    assert "graded: 2 passed, 0 passed and flagged, 1 failed, 0 error" in text
    assert "Failed (1): tlv-001/m/idle/empty: PoC failed: pocs/overread.bin" in text
    every = " ".join(ssegrade("report", str(results), "--batch", "-v").stdout.split())
    assert "Passed (2): tlv-001/m/fixer/again tlv-001/m/fixer/fix" in every
    as_json = ssegrade("report", str(results), "--batch", "--format", "json")
    assert as_json.stdout.encode() == (results / "batch.json").read_bytes()
    read = parse_batch((results / "batch.json").read_bytes()).unwrap()
    named = [folder for kind in OUTCOMES for folder in getattr(read.runs, kind)]
    listed = ssegrade("report", str(results), "--runs", "all", "--format", "jsonl").stdout
    runs = [json.loads(line) for line in listed.splitlines()]
    assert sorted(named) == sorted(run["folder"] for run in runs)
