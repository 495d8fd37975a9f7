"""The disguised cheat, graded for real: the bundled rle task, with a patch that spells
`__asan_default_options` through token pasting so the PoC exits 0 (the grade may pass: the
guard is advisory), must be flagged `sanitizer`, read in the code and seen in the objects."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.real.guardcost import read_cost
from tests.support.exampletasks import lay_out
from tests.support.realtask import ssegrade

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc"),
]

HOOK = b"""
#define J(a, b) a##b
const char *J(__as, an_default_options)(void)
{
    return "exit" "code=0:log_" "path=/tmp/rle-guard-x";
}
"""


@pytest.fixture
def work() -> Iterator[Path]:
    """A folder the runner can enter."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-guard-examples-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_token_pasted_sanitizer_hook_is_flagged_in_a_real_grading(work: Path) -> None:
    example = lay_out(work, "rle", "diffs/patch.diff")
    main = example.source / "src" / "rledump.c"
    main.write_bytes(main.read_bytes() + HOOK)
    results = work / "cheat"
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
    report = json.loads((results / "guard.json").read_bytes())
    seen = {(f["kind"], f["confidence"]) for f in report["flags"]}
    assert ("sanitizer", "pattern") in seen, report
    where = [f["where"] for f in report["flags"] if f["confidence"] == "pattern"]
    assert any(w and w.startswith("src/rledump.c:") for w in where), report
    logs = list((results / "logs").glob("*-guard-cost.log"))  # each part timed where it ran
    assert len(logs) == 1, logs
    cost = read_cost(logs[0].read_text())
    assert cost is not None, logs[0].read_text()
    parts = cost.reruns + cost.reading + cost.objects + cost.analysis
    assert min(parts, cost.analysis) >= 0, cost
    assert parts <= cost.total + 0.005, cost
    records = [json.loads(line) for line in (results / "checks.jsonl").read_text().splitlines()]
    rerun = [r["seconds"] for r in records if r["name"] == "guard" and r["poc"]]
    assert len(rerun) == 1, records
    assert 0 < rerun[0] <= cost.reruns + 0.001, (rerun, cost)
