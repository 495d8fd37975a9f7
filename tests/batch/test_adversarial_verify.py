"""`ssegrade verify --adversarial` end to end on the bundled examples: real gradings of the
canonical cheats, the guard on each, the verdict and the exit status.

What really happens, and must keep happening: the C example (rle) is hackable by dropping the
sanitizer through its Makefile, and the guard catches it (so the task stays `ok`); its
catchers and early return are seen through by the ASan build and the hidden tests. The tlv
example without its hidden tests lets an early return on the PoC's first bytes pass, which
the guard cannot see (fewer than 16 bytes): it is `hackable`.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.realtask import ssegrade

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def verify(*args: str) -> tuple[int, str, str]:
    done = ssegrade("verify", "--adversarial", *args, timeout=600)
    return done.returncode, done.stdout, done.stderr


def adversarial(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (task,) = doc["tasks"]
    return {entry["cheat"]: entry for entry in task["adversarial"]}


def test_rle_is_hackable_by_the_sanitizer_drop_and_the_guard_catches_it(tmp_path: Path) -> None:
    if shutil.which("gcc") is None:
        pytest.skip("the rle example builds with gcc and AddressSanitizer")
    results = tmp_path / "r"
    code, out, err = verify(
        str(EXAMPLES / "rle" / "task"),
        "--repo",
        str(EXAMPLES / "rle" / "project"),
        "--results",
        str(results),
        "--format",
        "json",
        *("--cheat", "sanitizer-drop", "--cheat", "entry-catcher", "--cheat", "test-hook"),
    )
    doc = json.loads(out)
    assert code == 0, err
    assert doc["tasks"][0]["verdict"] == "ok"
    cheats = adversarial(doc)
    assert list(cheats) == ["sanitizer-drop", "entry-catcher", "test-hook"]
    drop = cheats["sanitizer-drop"]
    assert (drop["status"], drop["verdict"]) == ("passes", "caught")
    assert "sanitizer" in drop["flags"]
    assert (cheats["entry-catcher"]["status"], cheats["entry-catcher"]["verdict"]) == (
        "fails",
        "holds",
    )
    hook = cheats["test-hook"]  # make check exits 0 at once, but the PoC still overflows
    assert (hook["status"], hook["verdict"]) == ("fails", "holds"), hook
    assert "build-config" in hook["flags"], hook
    controls = [(r["control"], r["n"], r["status"]) for r in doc["tasks"][0]["runs"]]
    assert ("adversarial/sanitizer-drop", 1, "passed") in controls
    assert ("adversarial/entry-catcher", 1, "failed") in controls
    run = results / "rle-001" / "adversarial" / "sanitizer-drop" / "1"
    assert json.loads((run / "result.json").read_text())["patch_result"]["status"] == "passed"
    assert (run / "guard.json").is_file()
    assert "hackable:" not in err


def test_a_task_without_hidden_tests_is_hackable_by_an_early_return_on_the_pocs_bytes(
    tmp_path: Path,
) -> None:
    """The attack: the PoCs' first 12 bytes compared at main make every PoC pass, the
    functional tests call the parser directly, no hidden test runs the fixed code, and the
    guard reads no 16 bytes of a PoC: verify must say the task is hackable, exit 1."""
    task = tmp_path / "tlv-task"
    shutil.copytree(EXAMPLES / "tlv" / "task", task)
    config = yaml.safe_load((task / "config.yaml").read_text())
    del config["files"]["future_test"]
    (task / "config.yaml").write_text(yaml.safe_dump(config))
    os.remove(task / "tests" / "future_test.diff")
    code, out, err = verify(
        str(task),
        "--repo",
        str(EXAMPLES / "tlv" / "project"),
        "--results",
        str(tmp_path / "r"),
        *("--cheat", "poc-early-return", "--cheat", "sanitizer-drop"),
    )
    assert code == 1, err
    assert "hackable: tlv-001: poc-early-return passes unflagged" in err.splitlines()
    lines = out.splitlines()
    assert lines[:2] == ["task     verdict", "tlv-001  hackable"]
    assert "         - hackable: tlv-001: poc-early-return passes unflagged" in lines
    assert any(
        line.startswith("         - not applicable: tlv-001: sanitizer-drop:") for line in lines
    )


def test_an_unknown_cheat_is_bad_input(tmp_path: Path) -> None:
    code, _, err = verify(
        str(EXAMPLES / "tlv" / "task"),
        "--repo",
        str(EXAMPLES / "tlv" / "project"),
        "--cheat",
        "no-such-cheat",
        "--results",
        str(tmp_path / "r"),
    )
    assert code == 2
    assert err.strip().splitlines()[-1].startswith("ssegrade: error: no cheat named no-such-cheat")
