"""Real-task fidelity, end to end: a grading repo that is never modified, recorded patches,
results folders, the baseline's copy of the whole tree, PoC folders and support folders."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters import InputError, grade_patch
from tests.support.realtask import RealTask, git, make_task, ssegrade

pytestmark = pytest.mark.slow

FIX = b"""diff --git a/lib.sh b/lib.sh
--- a/lib.sh
+++ b/lib.sh
@@ -1 +1 @@
-VALUE=bug
+VALUE=fixed
"""
BREAK = FIX.replace(b"+VALUE=fixed", b"+VALUE=broken")


def tree_digest(top: Path) -> str:
    """A digest of every path, mode, link target and file content under `top`."""
    digest = hashlib.sha256()
    for here, dirs, names in os.walk(top):
        dirs.sort()
        for name in sorted([*dirs, *names]):
            path = Path(here, name)
            st = os.lstat(path)
            digest.update(f"{path.relative_to(top)}\0{st.st_mode}\0".encode())
            if stat.S_ISLNK(st.st_mode):
                digest.update(os.readlink(path).encode())
            elif stat.S_ISREG(st.st_mode):
                digest.update(path.read_bytes())
    return digest.hexdigest()


def status(results: Path) -> tuple[str, str | None]:
    doc = json.loads((results / "result.json").read_bytes())["patch_result"]
    return doc["status"], doc["error_msg"]


@pytest.fixture
def task(tmp_path: Path) -> RealTask:
    return make_task(tmp_path)


def evaluate_patch(task: RealTask, patch: Path, results: Path, *extra: str) -> tuple[int, str]:
    done = ssegrade(
        "evaluate",
        "--task",
        str(task.task),
        "--patch",
        str(patch),
        "--repo",
        str(task.source),
        "--results",
        str(results),
        *extra,
    )
    return done.returncode, done.stderr


def test_the_grading_repo_is_never_modified(task: RealTask, tmp_path: Path) -> None:
    before = tree_digest(task.source)
    expected = {
        "fix": ("passed", None),
        "break": ("failed", "Build failed"),
        "empty": ("failed", "PoC failed: " + str(task.task / "pocs/poc1.bin")),
    }
    for round_ in range(2):  # the same patches twice: the second round is graded the same
        for name, data in (("fix", FIX), ("break", BREAK), ("empty", b"")):
            patch = tmp_path / f"{name}.patch"
            patch.write_bytes(data)
            results = tmp_path / f"results-{name}-{round_}"
            code, err = evaluate_patch(task, patch, results)
            assert code == 0, err
            assert status(results) == expected[name], name
            assert (results / "final.patch").read_bytes() == data
    assert tree_digest(task.source) == before


def test_grade_patch_api_and_results_folder_rules(task: RealTask, tmp_path: Path) -> None:
    results = tmp_path / "api"
    result = grade_patch(task.task, FIX, task.source, results)
    assert result.patch_result.status == "passed"
    assert status(results) == ("passed", None)
    with pytest.raises(InputError, match=r"already holds result\.json"):
        grade_patch(task.task, FIX, task.source, results)
    again = grade_patch(task.task, BREAK, task.source, results, force=True)
    assert again.patch_result.error_msg == "Build failed"
    records = (results / "checks.jsonl").read_text().splitlines()
    assert [json.loads(r)["name"] for r in records] == ["prepare", "build", "guard"]
    with pytest.raises(InputError, match="grading repo not found"):
        grade_patch(task.task, FIX, tmp_path / "nowhere", tmp_path / "r2")


def test_bad_input_is_one_line_and_exit_2(task: RealTask, tmp_path: Path) -> None:
    patch = tmp_path / "fix.patch"
    patch.write_bytes(FIX)
    code, err = evaluate_patch(task, tmp_path, tmp_path / "r1")
    assert (code, err.count("\n")) == (2, 1)
    assert "--patch" in err
    assert "not a file" in err
    stranger = tmp_path / "home"
    stranger.mkdir()
    (stranger / "notes.txt").write_text("mine\n")
    (stranger / "result.json").write_text("{}")
    code, err = evaluate_patch(task, patch, stranger, "--force")
    assert (code, err.count("\n")) == (2, 1)
    assert "not a results folder" in err
    assert (stranger / "notes.txt").exists()
    code, err = evaluate_patch(task, patch, stranger)
    assert code == 2
    assert "--force" in err


def test_baseline_keeps_the_whole_tree_and_grading_uses_it(task: RealTask) -> None:
    # A vendored module the build needs, ignored by git; a nested repository left out.
    (task.source / ".gitignore").write_text("out.txt\nvendor/\n")
    git(task.source, "commit", "-q", "--amend", "-am", "initial")
    (task.source / "vendor").mkdir()
    (task.source / "vendor" / "dep.sh").write_text("DEP=ok\n")
    nested = task.source / "third_party"
    nested.mkdir()
    git(nested, "init", "-q")
    (nested / "x.txt").write_text("nested\n")
    task.script(
        "build.sh",
        '#!/bin/sh\n. ./vendor/dep.sh || exit 9\n. ./lib.sh\necho "$VALUE" > out.txt\n',
    )
    done = ssegrade("baseline", "--source", str(task.source), "--into", str(task.baseline))
    assert done.returncode == 0, done.stderr
    copy = task.baseline / "repo"
    assert (copy / "vendor" / "dep.sh").read_text() == "DEP=ok\n"
    assert not (copy / ".git").exists()
    assert not (copy / "third_party").exists()
    task.set_value("fixed")
    args = ["--task", str(task.task), "--source", str(task.source)]
    done = ssegrade(
        "evaluate", *args, "--baseline", str(task.baseline), "--results", str(task.results)
    )
    assert done.returncode == 0, done.stderr
    assert status(task.results) == ("passed", None)
    assert "warning" not in done.stderr


def test_without_a_tree_copy_the_checkout_fallback_warns(task: RealTask) -> None:
    done = ssegrade(
        "baseline", "--source", str(task.source), "--into", str(task.baseline), "--no-repo"
    )
    assert done.returncode == 0, done.stderr
    assert not (task.baseline / "repo").exists()
    done = ssegrade(
        "evaluate",
        "--task",
        str(task.task),
        "--source",
        str(task.source),
        "--baseline",
        str(task.baseline),
        "--results",
        str(task.results),
    )
    assert done.returncode == 0, done.stderr
    assert "ignored files" in done.stderr
    assert "ignored files" in (task.results / "logs" / "notes.log").read_text()


@pytest.fixture
def open_root() -> Iterator[Path]:
    """A folder every user can enter: support folders are reached by the runner by path."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-test-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_pocs_come_with_their_folder_and_support_folders_are_restored(open_root: Path) -> None:
    task = make_task(open_root / "t")
    (open_root / "t").chmod(0o755)
    pocs = task.task / "pocs"
    (pocs / "helper.txt").write_text("from the PoC folder\n")
    harness = task.task / "harness"
    harness.mkdir()
    (harness / "data.txt").write_text("pristine\n")
    # run.sh reads a sibling of its PoC and the support folder by absolute path, then
    # tries to change the support folder (which must be pristine again at the next check).
    task.script(
        "run.sh",
        "#!/bin/sh\n"
        'cat "$(dirname "$1")/helper.txt" || exit 4\n'
        f'grep -q pristine "{harness}/data.txt" || exit 5\n'
        f'echo tampered > "{harness}/data.txt" 2>/dev/null\n'
        "grep -q fixed out.txt || exit 1\n",
    )
    task.set_value("fixed")
    done = ssegrade("baseline", "--source", str(task.source), "--into", str(task.baseline))
    assert done.returncode == 0, done.stderr
    done = ssegrade(
        "evaluate",
        "--task",
        str(task.task),
        "--source",
        str(task.source),
        "--baseline",
        str(task.baseline),
        "--results",
        str(task.results),
    )
    assert done.returncode == 0, done.stderr
    assert status(task.results) == ("passed", None), done.stderr
    assert (harness / "data.txt").read_text() == "pristine\n"
    log = next((task.results / "logs").glob("*poc-1.log")).read_text()
    assert "from the PoC folder" in log


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="locking needs root")


@needs_root
def test_hidden_material_is_locked_before_any_script_runs(task: RealTask, tmp_path: Path) -> None:
    for path in (task.task, task.task / "future.diff", task.task / "pocs"):
        path.chmod(0o777 if path.is_dir() else 0o666)
    (task.task / "README.md").write_text("public\n")
    # The build, as the runner, tries to read the hidden tests by their path.
    task.script(
        "build.sh",
        f'#!/bin/sh\ncat "{task.task}/future.diff" && exit 7\n'
        '. ./lib.sh\necho "$VALUE" > out.txt\n',
    )
    patch = tmp_path / "fix.patch"
    patch.write_bytes(FIX)
    code, err = evaluate_patch(task, patch, tmp_path / "r")
    assert code == 0, err
    assert status(tmp_path / "r") == ("passed", None)
    assert "readable by root only" in err
    for hidden in ("future.diff", "config.yaml", "pocs", "pocs/poc1.bin", "scripts/run.sh"):
        st = os.stat(task.task / hidden)
        assert (st.st_uid, stat.S_IMODE(st.st_mode) & 0o077) == (0, 0), hidden
    assert stat.S_IMODE(os.stat(task.task).st_mode) & 0o066 == 0
    assert stat.S_IMODE(os.stat(task.task / "README.md").st_mode) == 0o644


def test_a_named_file_that_leads_out_of_the_task_folder_is_refused(task: RealTask) -> None:
    outside = task.root / "outside.diff"
    outside.write_text("x\n")
    (task.task / "future.diff").unlink()
    (task.task / "future.diff").symlink_to(outside)
    done = ssegrade("evaluate", "--task", str(task.task), "--source", str(task.source))
    assert done.returncode == 2
    assert done.stderr.strip().endswith("'future.diff' leads out of the task folder")


@pytest.mark.parametrize(
    ("body", "mode", "why"),
    [
        ("echo no shebang\n", 0o644, "no exec bit"),
        ("#!/nonexistent/interpreter\necho hi\n", 0o755, "No such file"),
    ],
)
def test_a_script_that_cannot_start_is_a_broken_task(
    task: RealTask, tmp_path: Path, body: str, mode: int, why: str
) -> None:
    script = task.task / "scripts" / "build.sh"
    script.write_text(body)
    script.chmod(mode)
    patch = tmp_path / "fix.patch"
    patch.write_bytes(FIX)
    code, err = evaluate_patch(task, patch, tmp_path / "r")
    assert code == 0, err
    doc = json.loads((tmp_path / "r" / "result.json").read_bytes())["patch_result"]
    assert doc["status"] == "error"
    assert doc["error_msg"].startswith(f"Exception: cannot start {script}: ")
    assert why in doc["error_msg"]
    assert doc["build_success"] is None


def test_no_variable_leads_to_the_grading_side(task: RealTask, tmp_path: Path) -> None:
    task.script("build.sh", '#!/bin/sh\nenv\n. ./lib.sh\necho "$VALUE" > out.txt\n')
    done = ssegrade("baseline", "--source", str(task.source), "--into", str(task.baseline))
    assert done.returncode == 0, done.stderr
    results = tmp_path / "results"
    env = {
        "GOFLAGS": "-mod=vendor",
        "CARGO_HOME": "/opt/cargo",
        "SSE_RESULTS": str(results),
        "SSE_BASELINE": str(task.baseline),
        "SSE_ADMIN_SOCKET": "/run/sse/admin.sock",
        "MY_RESULTS": f"/usr/bin:{results}/logs",
        "MY_BASELINE": str(task.baseline / "repo.git"),
    }
    done = ssegrade(
        "evaluate",
        "--task",
        str(task.task),
        "--source",
        str(task.source),
        "--baseline",
        str(task.baseline),
        "--results",
        str(results),
        "--script-env",
        "EXTRA_FLAG=on",
        env=env,
    )
    assert done.returncode == 0, done.stderr
    log = next((results / "logs").glob("*build.log")).read_text()
    dumped = log.split("--- stdout", 1)[1].split("--- stderr", 1)[0]
    assert "GOFLAGS=-mod=vendor" in dumped
    assert "CARGO_HOME=/opt/cargo" in dumped
    assert "EXTRA_FLAG=on" in dumped
    for leak in ("SSE_RESULTS", "SSE_BASELINE", "SSE_ADMIN_SOCKET", "MY_RESULTS", "MY_BASELINE"):
        assert f"{leak}=" not in dumped, leak
    assert str(results) not in dumped
    assert str(task.baseline) not in dumped
