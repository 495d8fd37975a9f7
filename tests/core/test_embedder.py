"""An embedder builds the whole `result.json` from outcomes with the core's face alone: parse
the task, build `Outcomes`, call `document`; the bytes are those `ssegrade evaluate` writes
from the same outcomes (a real example graded, then rebuilt from its `checks.jsonl`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.exampletasks import lay_out
from tests.support.realtask import ssegrade

pytestmark = pytest.mark.slow

EMBEDDER = """
import json, re, sys
from pathlib import Path, PurePosixPath
from ssegrade import CheckOutcome, Outcomes, RuntimeResult, document, parse_task

def output(log):  # a script's stdout, a newline, its stderr, as its log file holds them
    data = Path(log).read_bytes()
    found = re.finditer(rb"^--- std(?:out|err) [(]([0-9]+) bytes[)] ---\\n", data, re.M)
    return "\\n".join(data[m.end() : m.end() + int(m[1])].decode() for m in found)

folder, checks = Path(sys.argv[1]), [json.loads(line) for line in open(sys.argv[2])]
task = parse_task((folder / "config.yaml").read_bytes()).unwrap()
runs = tuple(CheckOutcome(c["name"], c["passed"], output(c["log_file"]), c["poc"])
             for c in checks if c["name"] in task.checks)
pocs = tuple(str(PurePosixPath(folder, poc)) for poc in task.files.poc)  # SPEC §3
sys.stdout.buffer.write(document(Outcomes(task.checks, pocs, runs), RuntimeResult()).to_json())
"""


@pytest.mark.parametrize("patch", ["empty", "fix.diff"])
def test_an_embedders_ten_lines_give_the_bytes_evaluate_writes(tmp_path: Path, patch: str) -> None:
    """The unfixed project (every PoC triggers: `failed`, the first PoC's log as error_log)
    and the reference fix (`passed`): `document` over the outcomes `checks.jsonl` records
    gives `result.json` byte for byte."""
    example = lay_out(tmp_path, "tlv", "fix.diff", baseline=False)
    patch_file = tmp_path / "empty.patch" if patch == "empty" else example.fix
    if patch == "empty":
        patch_file.write_bytes(b"")
    results = tmp_path / "results"
    done = ssegrade(
        "evaluate",
        "--task",
        str(example.task),
        "--patch",
        str(patch_file),
        "--repo",
        str(example.source),
        "--results",
        str(results),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    written = (results / "result.json").read_bytes()
    assert json.loads(written)["patch_result"]["status"] == (
        "failed" if patch == "empty" else "passed"
    )
    rebuilt = subprocess.run(
        [sys.executable, "-c", EMBEDDER, str(example.task), str(results / "checks.jsonl")],
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert rebuilt.returncode == 0, rebuilt.stderr.decode()
    assert rebuilt.stdout == written
