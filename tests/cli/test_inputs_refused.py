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

from tests.support.realtask import CLI, FIX, RealTask, make_task, write_jobs

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
    # Not measured by coverage: `nobody` could not write its data file beside the checkout.
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}
    done = subprocess.run(
        [*AS_NOBODY, *CLI, command, *args, "--containment", "full"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=shared,
        env=env,
    )
    line = one_line(done, "--containment", "root")
    assert "Exception" not in line
    assert sorted(os.listdir(shared / "out")) == []


TRAJECTORY = """{
  "messages": [
    {"role": "assistant", "content": "I will fix lib.sh"},
    {"role": "tool", "content": "diff --git a/lib.sh b/lib.sh\\n--- a/lib.sh\\n+++ b/lib.sh\\n"}
  ],
  "final_patch": "diff --git a/lib.sh b/lib.sh\\n@@ -1 +1 @@\\n-VALUE=bug\\n+VALUE=fixed\\n"
}
"""
NOT_DIFFS = {
    "hello": "hello world\n",
    "html": "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n"
    "<body><h1>502 Bad Gateway</h1><hr><center>nginx</center></body></html>\n",
    "trajectory": TRAJECTORY,
}


def evaluate_patch(made: RealTask, patch: Path) -> subprocess.CompletedProcess[str]:
    args = ["evaluate", "--task", str(made.task), "--patch", str(patch)]
    args += ["--repo", str(made.source), "--results", str(made.results), "--containment", "weak"]
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize("kind", sorted(NOT_DIFFS))
def test_a_patch_that_is_not_a_diff_is_refused_before_a_results_folder(
    tmp_path: Path, kind: str
) -> None:
    made = make_task(tmp_path / "t")
    patch = tmp_path / f"{kind}.patch"
    patch.write_text(NOT_DIFFS[kind])
    line = one_line(evaluate_patch(made, patch), "--patch", str(patch), "no change git")
    assert line.startswith("ssegrade: error: ")
    assert not made.results.exists()


@pytest.mark.parametrize("text", ["", " \n\t\n"])
def test_an_empty_or_blank_patch_is_still_the_empty_patch(tmp_path: Path, text: str) -> None:
    made = make_task(tmp_path / "t")
    patch = tmp_path / "empty.patch"
    patch.write_text(text)
    done = evaluate_patch(made, patch)
    assert done.returncode == 0, done.stderr
    assert "failed" in done.stdout
    result = (made.results / "result.json").read_text()
    assert '"status":"failed"' in result.replace(" ", "")


def test_a_batch_with_a_job_whose_patch_is_not_a_diff_refuses_before_grading(
    tmp_path: Path,
) -> None:
    made = make_task(tmp_path / "t")
    jobs = write_jobs(tmp_path, made, {"good": FIX, "empty": "", **NOT_DIFFS})
    results = tmp_path / "results"
    done = subprocess.run(
        [*CLI, "batch", str(jobs), "--results", str(results), "--containment", "weak"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == len(NOT_DIFFS), done.stderr
    for number, (name, line) in enumerate(zip(NOT_DIFFS, lines, strict=True), start=3):
        assert line.startswith(f"ssegrade: error: {jobs}:{number}: patch: "), line
        assert "no change git would apply" in line
        assert line.endswith(f"{name}.patch"), line
    assert not results.exists() or not any(results.iterdir())
