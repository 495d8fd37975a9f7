"""Every Python example of the docs runs as it is written, pasted into a plain script (no
`if __name__ == "__main__":` guard) and run by a fresh interpreter in a folder holding what
the example names. An example that only shows a fragment gets the names it assumes from a
prelude here; a new example needs an entry in `WORLDS`, or the test says so."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
DOCS = TOP / "docs"
EXAMPLES = TOP / "examples"


def examples() -> list[tuple[str, int, str]]:
    """(doc file relative to docs/, index in that file, code) of every ```python block."""
    found = []
    for doc in sorted(DOCS.rglob("*.md")):
        blocks = re.findall(r"^```python\n(.*?)^```$", doc.read_text(), re.MULTILINE | re.DOTALL)
        found += [(doc.relative_to(DOCS).as_posix(), n, code) for n, code in enumerate(blocks)]
    return found


def batch_world(root: Path) -> None:
    """The bundled tlv task, its project and its reference fix as a recorded patch."""
    shutil.copytree(EXAMPLES / "tlv" / "task", root / "tasks" / "t1")
    shutil.copytree(EXAMPLES / "tlv" / "project", root / "repos" / "t1")
    (root / "runs" / "r1").mkdir(parents=True)
    shutil.copy(EXAMPLES / "tlv" / "task" / "fix.diff", root / "runs" / "r1" / "final.patch")
    job = {"task": "tasks/t1", "patch": "runs/r1/final.patch", "repo": "repos/t1", "run_id": "r1"}
    (root / "jobs.jsonl").write_text(json.dumps(job) + "\n")


def check_batch(root: Path, out: str) -> None:
    lines = out.splitlines()
    assert len(lines) == 2, out
    assert re.fullmatch(
        r"1 graded, 1 passed, 0 failed, 0 error, 0 cached, 0 skipped in [0-9.]+ s 0", lines[0]
    ), out
    assert lines[1] == "passed"
    cached = root / "results" / "tlv-001" / "m" / "unknown"
    assert json.loads(next(cached.glob("*/summary.json")).read_bytes())["cached_from"]
    assert json.loads((root / "out" / "r1" / "result.json").read_bytes())["patch_result"][
        "status"
    ] == ("passed")


def check_entry(root: Path, out: str) -> None:
    """The one grading entry's record: the document, the containment, a record per check."""
    status, containment, checks = out.split()
    assert status == "passed", out
    assert containment in ("full", "container", "weak"), out
    assert int(checks) >= 4, out  # build, the PoCs, the functional and intent tests at least
    assert json.loads((root / "out" / "r2" / "result.json").read_bytes())["patch_result"][
        "status"
    ] == ("passed")


def check_conformance(_root: Path, out: str) -> None:
    """The third interpreter of docs/testing.md keeps the contract on every scenario."""
    assert out.splitlines() == [
        "all pass: passed",
        "empty patch: passed",
        "build fails: failed",
        "second poc triggers: failed",
        "both pocs trigger: failed",
        "functional tests fail: failed",
        "intent tests fail: failed",
        "everything after build fails: failed",
        "no pocs: passed",
    ]


GRADING_PRELUDE = """
import time

from ssegrade.testing import FakeWorld
from ssegrade import BenchSession, Deadline, GradeOptions, Task, bencher_interpreter, grade, run
from ssegrade.internal.task import Scripts

task = Task(id="t", scripts=Scripts(build="build.sh", test="test.sh"))
system = FakeWorld(patch=b"--- a/x\\n+++ b/x\\n")
"""

REPORT_PRELUDE = """
import json

from ssegrade import EvaluationResult, PatchResult, Task
from ssegrade.batch import Job, summary_document
from ssegrade.report import RunFolder


def my_documents():
    for n, status in enumerate(["passed", "failed", "passed"]):
        run_id = f"r{n}"
        job = Job(task="t1", patch="p", model="m", agent="a", run_id=run_id)
        result = EvaluationResult(patch_result=PatchResult(status=status))
        doc = summary_document(Task(id="t1"), job, run_id, result, "0" * 64)
        yield RunFolder("t1", "m", "a", run_id), json.dumps(doc).encode()
"""

World = tuple[str, Callable[[Path], None], Callable[[Path, str], None] | None]
WORLDS: dict[tuple[str, int], World] = {
    ("batch.md", 0): ("", batch_world, check_batch),
    ("batch.md", 1): ("from pathlib import Path\n", batch_world, check_entry),
    ("architecture.md", 0): (GRADING_PRELUDE, lambda _root: None, None),
    ("report.md", 0): (REPORT_PRELUDE, lambda _root: None, None),
    ("testing.md", 0): ("", lambda _root: None, check_conformance),
}


@pytest.mark.slow
@pytest.mark.parametrize(("doc", "index", "code"), examples(), ids=lambda v: str(v)[:20])
def test_every_python_example_of_the_docs_runs_as_a_plain_script(
    doc: str, index: int, code: str, tmp_path: Path
) -> None:
    assert (doc, index) in WORLDS, f"docs/{doc}: example {index} has no world to run in"
    prelude, make, check = WORLDS[(doc, index)]
    make(tmp_path)
    script = tmp_path / "example.py"
    script.write_text(prelude + "\n" + code)
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    if check is not None:
        check(tmp_path, done.stdout)


def test_every_example_is_found() -> None:
    assert {(doc, index) for doc, index, _code in examples()} == set(WORLDS)
