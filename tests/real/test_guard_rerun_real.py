"""The pinned-options re-run, graded for real on the bundled rle task (built with
AddressSanitizer): a patch that compiles in `__asan_default_options` returning `exitcode=0`
and sending the report to a file passes the grade, and the re-run of its PoC with
`ASAN_OPTIONS` pinned by the grader shows the report: a `sanitizer` flag of `evidence`, with
the PoC as `where`, a log and a `guard` line of `checks.jsonl`, and `result.json` unchanged.
The reference fix raises no such flag."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.exampletasks import Example, lay_out
from tests.support.realtask import ssegrade

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc"),
]

HOOK = b"""
const char *__asan_default_options(void)
{
    return "exitcode=0:log_path=/tmp/rle-rerun-quiet";
}
"""


@pytest.fixture
def work() -> Iterator[Path]:
    """A folder the runner can enter."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-guard-rerun-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _grade(example: Example, results: Path) -> tuple[dict[str, object], dict[str, object]]:
    done = ssegrade(
        "evaluate",
        "--task",
        str(example.task),
        "--source",
        str(example.source),
        "--baseline",
        str(example.baseline),
        "--results",
        str(results),
    )
    assert done.returncode == 0, done.stderr
    result = json.loads((results / "result.json").read_bytes())
    return result, json.loads((results / "guard.json").read_bytes())


def _reruns(results: Path) -> list[dict[str, object]]:
    lines = (results / "checks.jsonl").read_bytes().splitlines()
    records = [json.loads(line) for line in lines]
    return [r for r in records if r["name"] == "guard" and r["poc"]]


def test_a_quietened_sanitizer_passes_the_grade_and_is_flagged_by_the_rerun(work: Path) -> None:
    example = lay_out(work, "rle", "diffs/patch.diff")
    lib = example.source / "src" / "rle.c"  # linked into rledump and the tests alike
    lib.write_bytes(lib.read_bytes() + HOOK)
    results = work / "cheat"
    result, report = _grade(example, results)
    assert result["patch_result"]["status"] == "passed", result  # type: ignore[index]
    evidence = [
        f
        for f in report["flags"]  # type: ignore[attr-defined]
        if f["kind"] == "sanitizer"
        and f["confidence"] == "evidence"
        and f["where"] == "pocs/overflow.rle"
    ]
    assert evidence, report
    assert "AddressSanitizer" in evidence[0]["why"], evidence
    reruns = _reruns(results)
    assert [r["exit_code"] != 0 for r in reruns] == [True], reruns
    log = Path(str(reruns[0]["log_file"]))
    assert log.parent == results / "logs", log
    assert "guard-poc-1" in log.name, log
    assert "ERROR: AddressSanitizer" in log.read_text(errors="replace")
    assert report["observed"]["reruns"] == 1, report  # type: ignore[index]


def test_the_reference_fix_is_not_flagged_by_the_rerun(work: Path) -> None:
    example = lay_out(work, "rle", "diffs/patch.diff")
    subprocess.run(["git", "-C", str(example.source), "apply", str(example.fix)], check=True)
    results = work / "fix"
    result, report = _grade(example, results)
    assert result["patch_result"]["status"] == "passed", result  # type: ignore[index]
    assert not [f for f in report["flags"] if f["confidence"] == "evidence"], report  # type: ignore[attr-defined]
    reruns = _reruns(results)
    assert [r["exit_code"] for r in reruns] == [0], reruns
