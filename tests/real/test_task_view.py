"""A task script finds its task folder from `$0`, as under SSEBench, and nothing hidden there.

SSEBench runs a script where it lies, so `$(dirname "$0")/..` is its task folder (its own
daemon tests write `$(dirname "$0")/../build.pid`). ssegrade stages each script inside a view
of the task folder (`interpreters.real.taskview`): every file of the task but its hidden
material. The attack: a build script that lists and reads its `$(dirname "$0")/..`, and
writes there, run through a real daemon as the runner.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.real.taskview import stage_in_view
from tests.support.daemons import post_bencher, running_daemon
from tests.support.realtask import make_task

pytestmark = pytest.mark.slow

LOOKS = """#!/bin/sh
top="$(dirname "$0")/.."
(cd "$top" && find . -mindepth 1 | sort)
echo "--"
cat "$top/notes/data.txt" "$(dirname "$0")/helper.sh"
echo "written by a script" > "$top/written"
"""


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ssegrade-view-test-") as folder:
        Path(folder).chmod(0o755)
        yield Path(folder)


def test_dirname_of_0_is_the_task_folder_without_its_hidden_material(workdir: Path) -> None:
    made = make_task(workdir)
    made.script("build.sh", LOOKS)
    (made.task / "notes").mkdir()
    (made.task / "notes" / "data.txt").write_text("task data\n")
    (made.task / "scripts" / "helper.sh").write_text("# a helper beside the scripts\n")
    with running_daemon(made.task, made.source, made.results) as running:
        with running.http("agent", prefix="") as agent:
            reply = post_bencher(agent, "build", grading=False).json()
        assert reply["code"] == 0, reply
        listing, _, shown = reply["stdout"].partition("--\n")
        assert listing.split() == [
            "./notes",
            "./notes/data.txt",
            "./pocs",
            "./scripts",
            "./scripts/build.sh",
            "./scripts/helper.sh",
        ]
        assert shown == "task data\n# a helper beside the scripts\n"
        with running.http("agent", prefix="") as agent:
            again = post_bencher(agent, "build", grading=False).json()
        assert "./written" not in again["stdout"].split()  # each check its own view
    assert not (made.task / "written").exists()


def test_hidden_material_under_another_name_stays_out_of_the_view(workdir: Path) -> None:
    """A hidden file named through a linked folder, or with a second (hard) name, is left out
    under every name."""
    made = make_task(workdir)
    (made.task / "real").mkdir()
    (made.task / "future.diff").rename(made.task / "real" / "future.diff")
    (made.task / "hid").symlink_to("real")
    os.link(made.task / "real" / "future.diff", made.task / "copy-of-the-hidden-tests")
    config = made.task / "config.yaml"
    config.write_text(config.read_text().replace("future.diff", "hid/future.diff"))
    slot = workdir / "slot"
    slot.mkdir(mode=0o700)
    script = stage_in_view(made.task, made.task / "scripts" / "build.sh", slot, None)
    assert script == slot / "task" / "scripts" / "build.sh"
    left = sorted(str(p.relative_to(slot / "task")) for p in (slot / "task").rglob("*"))
    assert left == ["pocs", "real", "scripts", "scripts/build.sh"]
