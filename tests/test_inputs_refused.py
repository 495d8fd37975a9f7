"""Input that cannot be graded is refused before grading, in one line, exit 2, with nothing
made: `--containment full` without root (SPEC §5), a recorded patch that is not a diff (§4).

The attacks as they were found: as a plain user, `evaluate --containment full` made the
results folder, wrote an `error` grade naming a Python exception class and exited 0 (in
`batch`, every job errored and was retried); "hello world", an HTML error page or an agent's
trajectory given as `--patch` or a job's `patch` was graded as the empty patch: `failed`,
exit 0, no note.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realtask import CLI, FIX, RealTask, make_task, write_jobs

AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def one_line(done: subprocess.CompletedProcess[str], *names: str) -> str:
    """The one line of stderr of a run refused as bad input (exit 2), naming `names`."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    for name in names:
        assert name in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder any user may read, and its `out` folder any user may write."""
    top = Path(tempfile.mkdtemp(prefix="ssegrade-inputs-"))
    try:
        top.chmod(0o755)
        (top / "out").mkdir(mode=0o777)
        (top / "out").chmod(0o777)
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def readable_task(top: Path) -> RealTask:
    made = make_task(top / "t")
    (top / "fix.patch").write_text(FIX)
    for here, dirs, files in os.walk(top / "t"):
        for name in [*dirs, *files]:
            path = Path(here, name)
            path.chmod(path.stat().st_mode | (0o555 if path.is_dir() else 0o444))
    (top / "t").chmod(0o755)
    return made


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root")
@pytest.mark.parametrize("command", ["evaluate", "daemon", "batch", "verify"])
def test_full_containment_without_root_is_one_line_and_makes_nothing(
    shared: Path, command: str
) -> None:
    made = readable_task(shared)
    results = shared / "out" / "results"
    jobs = write_jobs(shared, made, {"fix": FIX})
    jobs.chmod(0o644)
    args = {
        "evaluate": [
            "--task", str(made.task), "--patch", str(shared / "fix.patch"),
            "--repo", str(made.source), "--results", str(results),
        ],
        "daemon": [
            "--task", str(made.task), "--source", str(made.source), "--results", str(results),
            "--agent-socket", str(shared / "out" / "a" / "d.sock"),
            "--admin-socket", str(shared / "out" / "b" / "admin.sock"),
            "--baseline", str(shared / "out" / "base"),
        ],
        "batch": [str(jobs), "--results", str(results)],
        "verify": [str(made.task), "--repo", str(made.source)],
    }[command]  # fmt: skip
    done = subprocess.run(
        [*AS_NOBODY, *CLI, command, *args, "--containment", "full"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=shared,
    )
    line = one_line(done, "--containment", "root")
    assert "Exception" not in line
    assert sorted(os.listdir(shared / "out")) == []
