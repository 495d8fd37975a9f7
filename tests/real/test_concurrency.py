"""Several gradings on one host and one runner account at once (SPEC §5): each gives the
verdict it gives alone, though their scripts sleep, fork and leave daemons behind.

End to end with the `ssegrade` command and the default runner account.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.real.files import remove_tree
from tests.support.daemons import running_daemon
from tests.support.processes import live_with, unique
from tests.support.realtask import RealTask, git, make_task, ssegrade

pytestmark = pytest.mark.slow

BUILD = """#!/bin/sh
. ./lib.sh
setsid sleep 300 0.{t} >/dev/null 2>&1 &
nohup sh -c 'sleep 300 0.{t}' >/dev/null 2>&1 &
sleep 0.3
echo "$VALUE" > /tmp/value
if [ "$VALUE" = broken ]; then echo "build: VALUE is broken" >&2; exit 2; fi
cp /tmp/value out.txt
"""
RUN = """#!/bin/sh
sh -c 'sleep 300 0.{t} &' &
sleep 0.2
test -f out.txt || { echo "no build output" >&2; exit 3; }
grep -q fixed out.txt || { echo "the PoC triggered the bug" >&2; exit 1; }
"""
TEST = """#!/bin/sh
for t in tests/*.sh; do sh "$t" || { echo "$t failed" >&2; exit 1; }; done
echo "all tests passed"
"""
VARIANTS = ["fixed", "buggy", "broken"] * 2


@pytest.fixture
def root() -> Iterator[Path]:
    """A folder the runner can reach (the evaluator's scratch folders go in it too)."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-concurrency-"))
    folder.chmod(0o755)
    yield folder
    remove_tree(folder)


def prepared(folder: Path, value: str | None, token: str) -> RealTask:
    """A task whose scripts sleep, fork and leave daemons, and a source tree changed to
    `value` (baseline recorded before the change)."""
    made = make_task(folder, pocs=2)
    for name, body in (("build.sh", BUILD), ("run.sh", RUN), ("test.sh", TEST)):
        made.script(name, body.replace("{t}", token))
    done = ssegrade("baseline", "--source", str(made.source), "--into", str(made.baseline))
    assert done.returncode == 0, done.stderr
    if value is not None:
        change(made, value)
    return made


def change(made: RealTask, value: str) -> None:
    """What the agent does."""
    made.set_value(value)
    git(made.source, "commit", "-qam", "change")


def evaluate_args(made: RealTask, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from interpreters.cli.main import main; main()",
        "evaluate",
        "--task",
        str(made.task),
        "--source",
        str(made.source),
        "--baseline",
        str(made.baseline),
        "--results",
        str(made.results),
        *extra,
    ]


def started(made: RealTask, scratch: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        evaluate_args(made, *extra),
        env={**os.environ, "TMPDIR": str(scratch)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return out


def outcome(made: RealTask, verdict: str) -> tuple[str, str]:
    """The verdict and result.json, with the task's own folder written as `ROOT`."""
    document = (made.results / "result.json").read_text()
    return verdict.replace(str(made.root), "ROOT"), document.replace(str(made.root), "ROOT")


def test_six_evaluations_at_once_give_their_serial_results(root: Path) -> None:
    token = unique()
    serial: dict[int, tuple[str, str]] = {}
    for index, value in enumerate(VARIANTS):
        made = prepared(root / f"serial-{index}", value, token)
        verdict = finished(started(made, root))
        serial[index] = outcome(made, verdict)
    assert not live_with(token)
    tasks = [prepared(root / f"parallel-{i}", value, token) for i, value in enumerate(VARIANTS)]
    procs = [started(made, root) for made in tasks]
    verdicts = [finished(proc) for proc in procs]
    for index, made in enumerate(tasks):
        assert outcome(made, verdicts[index]) == serial[index]
    assert {verdict.split(":")[0].strip() for verdict in verdicts} == {"passed", "failed"}
    assert not live_with(token)


def test_a_daemon_grading_and_an_embedded_one_at_once(root: Path) -> None:
    token = unique()
    embedded = prepared(root / "embedded", "fixed", token)
    remote = prepared(root / "remote", None, token)
    with running_daemon(remote.task, remote.source, root / "daemon-results") as daemon:
        change(remote, "fixed")
        local = started(embedded, root)
        through = started(remote, root, "--daemon", str(daemon.admin))
        verdicts = finished(local), finished(through)
    assert verdicts == ("passed\n", "passed\n")
    assert outcome(remote, "") == outcome(embedded, "")
    assert not live_with(token)
