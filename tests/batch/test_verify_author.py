"""`verify` as a task author meets it: a verdict that says why (the failing check, the first
lines of its log, the log's path), the author's task folder exactly as it was afterwards
(owners and modes, as root), and no folder left behind by input that is refused; nor by a
refused `evaluate`."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from interpreters import grade_patch
from interpreters.app.setup import InputError
from tests.support.realtask import FIX, make_task, shell_task, ssegrade

pytestmark = pytest.mark.slow

ROOT = os.geteuid() == 0
BUILD_BREAKS_UNFIXED = """#!/bin/sh
. ./lib.sh
if [ "$VALUE" = bug ]; then
  echo "checking the configuration"
  echo "error: the toolchain is missing" >&2
  exit 3
fi
echo "$VALUE" > out.txt
"""


def test_a_broken_task_names_the_failing_check_its_log_and_its_first_lines(
    tmp_path: Path,
) -> None:
    made = shell_task(tmp_path / "t")
    made.script("build.sh", BUILD_BREAKS_UNFIXED)
    results = tmp_path / "r"
    done = ssegrade("verify", str(made.task), "--repo", str(made.source), "--results", str(results))
    assert done.returncode == 1, done.stderr
    (log,) = (results / "shell-001" / "empty" / "1" / "logs").glob("*-build.log")
    assert done.stdout.splitlines() == [
        "task       verdict",
        "shell-001  broken",
        "           - the build fails on the unfixed project",
        f"             log (empty run 1, build): {log}",
        "             | exit code: 3",
        "             | checking the configuration",
        "             | error: the toolchain is missing",
    ]
    as_json = ssegrade(
        "verify",
        str(made.task),
        "--repo",
        str(made.source),
        "--results",
        str(tmp_path / "r2"),
        "--format",
        "json",
    )
    (task,) = json.loads(as_json.stdout)["tasks"]
    assert task["evidence"] == [
        {
            "about": "the build fails on the unfixed project",
            "control": "empty",
            "n": 1,
            "check": "build",
            "log": str(log).replace(f"{results}/", f"{tmp_path / 'r2'}/"),
            "head": [
                "exit code: 3",
                "checking the configuration",
                "error: the toolchain is missing",
            ],
        }
    ]


def test_what_a_script_prints_is_quoted_inert(tmp_path: Path) -> None:
    made = shell_task(tmp_path / "t")
    made.script("build.sh", "#!/bin/sh\nprintf 'boom \\033]0;owned\\007\\033[2J\\n' >&2\nexit 1\n")
    done = ssegrade(
        "verify", str(made.task), "--repo", str(made.source), "--results", str(tmp_path / "r")
    )
    assert done.returncode == 1, done.stderr
    assert "\x1b" not in done.stdout
    assert "\x07" not in done.stdout
    assert "| boom \\x1b]0;owned\\x07\\x1b[2J" in done.stdout


def listing(top: Path) -> list[tuple[str, int, int, int, int, int]]:
    """Every entry below `top` (and `top`): name, mode, owner, group, size, mtime."""
    found = []
    for here, dirs, names in os.walk(top):
        for name in [".", *dirs, *names]:
            path = Path(here) / name
            info = os.lstat(path)
            relative = os.path.relpath(path, top)
            found.append(
                (
                    relative,
                    info.st_mode,
                    info.st_uid,
                    info.st_gid,
                    info.st_size if not stat.S_ISDIR(info.st_mode) else 0,
                    info.st_mtime_ns,
                )
            )
    return sorted(found)


@pytest.mark.skipif(not ROOT, reason="as root, grading locks a task's hidden material")
def test_verify_as_root_leaves_the_authors_task_folder_exactly_as_it_was(tmp_path: Path) -> None:
    made = shell_task(tmp_path / "t")
    author = (4242, 4343)
    modes = {"config.yaml": 0o664, "fix.diff": 0o640, "future.diff": 0o604, "pocs": 0o750}
    for here, dirs, names in os.walk(made.task):
        for name in [*dirs, *names]:
            os.chown(Path(here) / name, *author, follow_symlinks=False)
    os.chown(made.task, *author)
    made.task.chmod(0o755)
    for name, mode in modes.items():
        (made.task / name).chmod(mode)
    (made.task / "scripts" / "run.sh").chmod(0o700)
    (made.task / "notes").symlink_to("/etc/hostname")
    os.chown(made.task / "notes", *author, follow_symlinks=False)
    before = listing(made.task)
    done = ssegrade(
        "verify", str(made.task), "--repo", str(made.source), "--results", str(tmp_path / "r")
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert done.stdout.splitlines()[1] == "shell-001  ok"
    assert listing(made.task) == before


def test_a_refused_evaluate_leaves_no_results_folder(tmp_path: Path) -> None:
    made = make_task(tmp_path / "t")
    patch = tmp_path / "fix.patch"
    patch.write_text(FIX)
    cases: list[tuple[str, ...]] = [
        ("--patch", str(patch), "--repo", str(tmp_path / "no-repo")),
        ("--source", str(made.source), "--baseline", str(tmp_path / "no-baseline")),
        ("--patch", str(tmp_path / "no.patch"), "--repo", str(made.source)),
        ("--source", str(tmp_path / "t" / "task"), "--repo", str(made.source)),
    ]
    for n, case in enumerate(cases):
        results = tmp_path / f"results-{n}"
        done = ssegrade("evaluate", "--task", str(made.task), "--results", str(results), *case)
        assert done.returncode == 2, (case, done.stderr)
        assert len(done.stderr.splitlines()) <= 2, done.stderr
        assert done.stderr.splitlines()[-1].startswith("ssegrade: error: ")
        assert not results.exists(), case
    if ROOT:  # the hidden material cannot be locked: a link is never followed
        (made.task / "future.diff").rename(made.task / "future.real")
        (made.task / "future.diff").symlink_to("future.real")
        with pytest.raises(InputError, match="a symbolic link in the task folder"):
            grade_patch(made.task, FIX.encode(), made.source, tmp_path / "api")
        assert not (tmp_path / "api").exists()
