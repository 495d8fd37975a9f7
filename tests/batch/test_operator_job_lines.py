"""Off a terminal, a batch's line for each job carries its verdict, the patch guard's flags
and why it did not pass: also for a run that failed and was flagged (an agent that caught
every exception of the bundled TLV example's command line: the guard flags `crash-handler`,
the hidden test still fails it). A real `ssegrade batch` of the example."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.real.files import remove_tree
from tests.support.exampletasks import lay_out
from tests.support.realtask import git, ssegrade


@pytest.fixture
def work() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-op-lines-"))
    folder.chmod(0o755)
    yield folder
    remove_tree(folder)


def test_a_failed_run_s_line_names_the_guard_s_flags_and_why(work: Path) -> None:
    example = lay_out(work, "tlv", "fix.diff", baseline=False)
    cli = example.source / "tlvparse" / "cli.py"
    text = cli.read_text()
    cli.write_text(text.replace("except (OSError, TLVError) as exc:", "except Exception as exc:"))
    (work / "catch.diff").write_text(git(example.source, "diff"))
    git(example.source, "checkout", "-q", ".")
    line = {"task": str(example.task), "repo": str(example.source), "patch": "catch.diff"}
    (work / "jobs.jsonl").write_text(json.dumps(line | {"model": "m", "run_id": "c"}) + "\n")
    done = ssegrade("batch", str(work / "jobs.jsonl"), "--results", str(work / "results"))
    assert done.returncode == 0, done.stderr
    assert re.search(
        r"^\[1/1\] failed, flagged crash-handler tlv-001/m/unknown/c \([0-9.]+ s\): \S",
        done.stderr,
        re.MULTILINE,
    ), done.stderr
