"""Root runs nothing it did not choose (SPEC §5): the programs ssegrade starts are found on a
fixed search path and refused when another user could have put them there; a task folder is
read only where no other user can replace it.

Played as the attacks: a `git` planted in a world-writable folder that leads `PATH` (as
`/go/bin` does in the official golang image), then a real grading of a real patch.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from returns.pipeline import is_successful

from interpreters.real.programs import SEARCH_PATH, ProgramError, find_program
from interpreters.real.taskfolder import load_task
from interpreters.real.trusted_paths import Unsafe, resolve_safe
from tests.support.realtask import RealTask, fix_to, make_task, ssegrade

OTHER = 4242  # a uid no account of this machine has
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="gives files to another user")


@pytest.fixture
def safe_dir() -> Iterator[Path]:
    """A fresh folder that no other user can change, nor any folder above it (unlike the
    temporary folders under the sticky, world-writable `/tmp`)."""
    for parent in ("/srv", "/var/lib", os.path.expanduser("~")):
        try:
            resolve_safe(parent)
        except (Unsafe, OSError):
            continue
        folder = Path(tempfile.mkdtemp(prefix="ssegrade-programs-", dir=parent))
        try:
            yield folder
        finally:
            shutil.rmtree(folder)
        return
    pytest.skip("no folder here that only root (or we) can change")


def executable(path: Path, body: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(0o755)
    return path


def folder(path: Path, mode: int) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(mode)
    return path


def refusal(name: str, search: list[Path]) -> str:
    with pytest.raises(ProgramError) as caught:
        find_program(name, [str(p) for p in search])
    message = str(caught.value)
    assert "\n" not in message
    return message


# ---------------------------------------------------------------------------- the resolver


def test_a_program_in_a_safe_folder_is_found_by_its_real_path(safe_dir: Path) -> None:
    tool = executable(safe_dir / "real" / "tool")
    (safe_dir / "bin").mkdir()
    (safe_dir / "bin" / "tool").symlink_to(tool)
    assert find_program("tool", [str(safe_dir / "bin")]) == str(tool)


def test_a_program_in_a_group_writable_folder_is_refused(safe_dir: Path) -> None:
    bin_dir = folder(safe_dir / "bin", 0o775)
    executable(bin_dir / "tool")
    assert refusal("tool", [bin_dir]) == (
        f"program 'tool' refused: {bin_dir} is writable by its group (mode 0775)"
    )


def test_a_program_below_a_writable_folder_is_refused(safe_dir: Path) -> None:
    above = folder(safe_dir / "go", 0o1777)
    bin_dir = folder(above / "bin", 0o755)
    executable(bin_dir / "git")
    assert refusal("git", [bin_dir]) == (
        f"program 'git' refused: {above} is writable by others (mode 1777)"
    )


def test_a_link_into_a_writable_folder_is_refused(safe_dir: Path) -> None:
    open_dir = folder(safe_dir / "open", 0o777)
    planted = executable(open_dir / "tool")
    bin_dir = folder(safe_dir / "bin", 0o755)
    (bin_dir / "tool").symlink_to(planted)
    assert refusal("tool", [bin_dir]) == (
        f"program 'tool' refused: {open_dir} is writable by others (mode 0777)"
    )


def test_a_program_others_may_rewrite_is_refused(safe_dir: Path) -> None:
    tool = executable(safe_dir / "bin" / "tool")
    tool.chmod(0o757)
    assert refusal("tool", [safe_dir / "bin"]) == (
        f"program 'tool' refused: {tool} is writable by others (mode 0757)"
    )


@needs_root
def test_a_program_of_another_user_is_refused(safe_dir: Path) -> None:
    tool = executable(safe_dir / "bin" / "tool")
    os.chown(tool, OTHER, OTHER)
    assert refusal("tool", [safe_dir / "bin"]) == (
        f"program 'tool' refused: {tool} is owned by uid {OTHER}, not root"
    )


def test_a_missing_program_is_one_line(safe_dir: Path) -> None:
    assert refusal("no-such-tool", [safe_dir, safe_dir / "gone"]) == (
        f"program 'no-such-tool' not found in {safe_dir}:{safe_dir / 'gone'}"
    )


def test_a_writable_folder_without_the_program_is_passed_over(safe_dir: Path) -> None:
    open_dir = folder(safe_dir / "open", 0o1777)
    tool = executable(safe_dir / "bin" / "tool")
    assert find_program("tool", [str(open_dir), str(safe_dir / "bin")]) == str(tool)


def test_path_never_decides(safe_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    planted = folder(safe_dir / "planted", 0o755)  # even a safe folder: PATH is not asked
    executable(planted / "git")
    monkeypatch.setenv("PATH", f"{planted}:{os.environ.get('PATH', '')}")
    found = find_program("git")
    assert os.path.dirname(found) in {os.path.realpath(p) for p in SEARCH_PATH}
    assert not found.startswith(str(planted))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(mode=st.integers(0o700, 0o777), sticky=st.booleans())
def test_the_rule_on_the_mode_of_a_folder_above(safe_dir: Path, mode: int, sticky: bool) -> None:
    """A program is refused iff a folder above it lets group or others write, sticky or not;
    a task folder iff that folder lets them write and is not sticky."""
    with tempfile.TemporaryDirectory(dir=safe_dir) as made:
        above = folder(Path(made) / "above", mode | (stat.S_ISVTX if sticky else 0))
        executable(above / "bin" / "tool")
        (above / "task").mkdir()
        (above / "task" / "config.yaml").write_text("id: t\n")
        writable = bool(mode & 0o022)
        if writable:
            with pytest.raises(ProgramError, match=re.escape(f"refused: {above} is writable")):
                find_program("tool", [str(above / "bin")])
        else:
            assert find_program("tool", [str(above / "bin")]) == str(above / "bin" / "tool")
        loaded = load_task(above / "task")
        task_refused = not is_successful(loaded) and "replace" in loaded.failure().message
        assert task_refused == (writable and not sticky)
        above.chmod(0o700)


def test_no_program_is_looked_up_on_another_path() -> None:
    """Every program ssegrade starts comes from `programs`; the one other lookup is of a
    task script's command, on the script's own PATH, which the runner (not root) executes."""
    top = Path(__file__).resolve().parents[2] / "interpreters"
    lookups = {
        str(path.relative_to(top))
        for path in top.rglob("*.py")
        if "shutil.which(" in path.read_text() or "os.get_exec_path(" in path.read_text()
    }
    assert lookups == {"real/runner/launch.py"}


# ---------------------------------------------------------------------------- the attack


def planted_git(where: Path, marker: Path) -> Path:
    """A folder anyone may write to (as `/go/bin`), holding a `git` that says it ran, then
    does git's work (so that the grade alone cannot tell)."""
    bin_dir = folder(where, 0o1777)
    real = find_program("git")
    executable(bin_dir / "git", f'#!/bin/sh\necho "$(id -u) $*" >> {marker}\nexec {real} "$@"\n')
    return bin_dir


def test_a_git_planted_first_on_path_never_runs_in_a_grading(tmp_path: Path) -> None:
    made = make_task(tmp_path / "t")
    marker = tmp_path / "planted-git-ran"
    bin_dir = planted_git(tmp_path / "gobin", marker)
    patch = tmp_path / "fix.patch"
    patch.write_text(fix_to("fixed"))
    results = tmp_path / "results"
    done = ssegrade(
        "evaluate",
        "--task",
        str(made.task),
        "--repo",
        str(made.source),
        "--patch",
        str(patch),
        "--results",
        str(results),
        env={"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"},
    )
    assert not marker.exists(), marker.read_text()
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "passed"
    assert json.loads((results / "result.json").read_bytes())["patch_result"]["status"] == "passed"


def test_a_git_planted_first_on_path_never_runs_in_baseline_and_capture(tmp_path: Path) -> None:
    made: RealTask = make_task(tmp_path / "t")
    marker = tmp_path / "planted-git-ran"
    env = {"PATH": f"{planted_git(tmp_path / 'gobin', marker)}:{os.environ.get('PATH', '')}"}
    done = ssegrade("baseline", "--source", str(made.source), "--into", str(made.baseline), env=env)
    assert done.returncode == 0, done.stderr
    made.set_value("broken")
    done = ssegrade(
        "evaluate",
        "--task",
        str(made.task),
        "--source",
        str(made.source),
        "--baseline",
        str(made.baseline),
        "--results",
        str(made.results),
        env=env,
    )
    assert not marker.exists(), marker.read_text()
    assert done.stdout.strip() == "failed: Build failed", done.stderr
    assert b"+VALUE=broken" in (made.results / "final.patch").read_bytes()


def in_mount_namespace(over: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """The console script in a mount namespace of its own where `over` is mounted on
    `/usr/local/bin`, the first folder of the search path (and of `PATH`)."""
    script = 'mount --bind "$0" /usr/local/bin && exec "$@"'
    command = [sys.executable, "-c", "from interpreters.cli.entry import main; main()", *argv]
    wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(over)]
    return subprocess.run(
        [*wrap, *command],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": "/usr/local/bin:/usr/bin:/bin"},
        timeout=120,
        check=False,
    )


@needs_root
def test_a_git_on_the_search_path_where_others_may_write_is_refused(tmp_path: Path) -> None:
    made = make_task(tmp_path / "t")
    marker = tmp_path / "planted-git-ran"
    bin_dir = planted_git(tmp_path / "gobin", marker)
    patch = tmp_path / "fix.patch"
    patch.write_text(fix_to("fixed"))
    why = "program 'git' refused: /usr/local/bin is writable by others (mode 1777)"
    grade = ["evaluate", "--task", str(made.task), "--repo", str(made.source), "--patch"]
    done = in_mount_namespace(bin_dir, [*grade, str(patch), "--results", str(tmp_path / "r")])
    # The recorded patch is read by git before anything is made: one line, no grade.
    assert (done.returncode, done.stderr) == (1, f"ssegrade: error: {why}\n")
    assert not (tmp_path / "r").exists()
    assert not marker.exists(), marker.read_text()
    done = in_mount_namespace(
        bin_dir, ["baseline", "--source", str(made.source), "--into", str(made.baseline)]
    )
    assert (done.returncode, done.stderr) == (1, f"ssegrade: error: {why}\n")
    assert not marker.exists(), marker.read_text()


# ---------------------------------------------------------------------------- task folders


def test_a_task_under_a_world_writable_folder_is_refused(tmp_path: Path) -> None:
    shared = folder(tmp_path / "shared", 0o777)
    made = make_task(shared / "t")
    loaded = load_task(made.task)
    assert not is_successful(loaded)
    assert loaded.failure().message == (
        f"task folder {made.task}: {shared} is writable by others (mode 0777): "
        "another user could replace the task"
    )
    patch = tmp_path / "fix.patch"
    patch.write_text(fix_to("fixed"))
    results = tmp_path / "results"
    done = ssegrade(
        "evaluate",
        "--task",
        str(made.task),
        "--repo",
        str(made.source),
        "--patch",
        str(patch),
        "--results",
        str(results),
    )
    assert done.returncode == 2
    assert done.stderr == f"ssegrade: error: {loaded.failure().message}\n"
    assert not results.exists()


def test_a_step_back_after_a_link_is_judged_where_the_kernel_goes(tmp_path: Path) -> None:
    shared = folder(tmp_path / "shared", 0o777)
    (shared / "deep").mkdir()
    make_task(shared / "t")  # what `link/../t/task` leads to
    make_task(tmp_path / "t")  # what it would be, taken word by word
    (tmp_path / "link").symlink_to(shared / "deep")
    loaded = load_task(tmp_path / "link" / ".." / "t" / "task")
    assert not is_successful(loaded)
    assert f"{shared} is writable by others (mode 0777)" in loaded.failure().message


def test_a_task_under_a_sticky_root_folder_is_read(tmp_path: Path) -> None:
    made = make_task(folder(tmp_path / "sticky", 0o1777) / "t")
    assert is_successful(load_task(made.task))


@needs_root
def test_a_link_of_another_user_in_a_sticky_folder_is_refused(tmp_path: Path) -> None:
    sticky = folder(tmp_path / "sticky", 0o1777)
    made = make_task(tmp_path / "t")
    link = sticky / "task"
    link.symlink_to(made.task)
    os.chown(link, OTHER, OTHER, follow_symlinks=False)
    loaded = load_task(link)
    assert not is_successful(loaded)
    assert f"{link} is owned by uid {OTHER}, not root" in loaded.failure().message
    os.chown(link, 0, 0, follow_symlinks=False)
    assert is_successful(load_task(link))
