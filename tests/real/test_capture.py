"""Capture fidelity of the real git interpreter (`interpreters.real.git`) on real repositories.

Each test plays the agent with plain git in a tmp folder, then checks that the baseline's
pristine checkout plus the captured patch equals the agent's tree (ignored files and nested
repositories aside), and that nothing of the agent's git configuration ever ran.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from returns.result import Failure, Success

from interpreters.real import git
from ssegrade.internal.effects import ApplyError, Capture
from tests.support.gittrees import (
    Entry,
    capture_ok,
    edited,
    make_repo,
    rebuild,
    record,
    run,
    snapshot,
    trees,
    write,
)

pytestmark = pytest.mark.slow


IS_ROOT = os.geteuid() == 0


# ---------------------------------------------------------------------------- helpers


def headers(patch: bytes) -> list[bytes]:
    return [line for line in patch.splitlines() if line.startswith(b"diff --git ")]


def script(path: Path, marker: Path) -> Path:
    """An executable that leaves `marker` behind when anything runs it."""
    path.write_text(f"#!/bin/sh\necho ran >> '{marker}'\ncat\n")
    path.chmod(0o755)
    return path


def plant_agent_config(source: Path, markers: Path) -> None:
    """Everything in the agent's repository that would run code if git used its config."""
    markers.mkdir(exist_ok=True)
    tool = script(markers.parent / "evil.sh", markers / "ran")
    settings_ = {
        "diff.noprefix": "true",
        "diff.mnemonicPrefix": "true",
        "diff.external": str(tool),
        "diff.evil.command": str(tool),
        "diff.evil.textconv": str(tool),
        "core.fsmonitor": str(tool),
        "core.pager": str(tool),
        "core.hooksPath": str(source / ".git" / "hooks"),
        "core.alternateRefsCommand": str(tool),
        "filter.evil.clean": str(tool),
        "filter.evil.smudge": str(tool),
        "filter.evil.process": str(tool),
        "filter.evil.required": "true",
        "uploadpack.packObjectsHook": str(tool),
        "core.sshCommand": str(tool),
        "status.showUntrackedFiles": "no",
        "core.excludesFile": str(markers / "excludes"),
    }
    for key, value in settings_.items():
        run(source, "config", key, value)
    hooks = source / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for hook in (
        "pre-commit",
        "post-checkout",
        "post-index-change",
        "reference-transaction",
        "pre-push",
        "post-update",
        "fsmonitor-watchman",
        "pre-auto-gc",
    ):
        script(hooks / hook, markers / "hook")
    (source / ".gitattributes").write_text("* filter=evil diff=evil\n*.txt text eol=crlf\n")


BASE_FILES: dict[str, Entry] = {
    "README.md": ("file", b"hello\n", False),
    "src/main.c": ("file", b"int main(void) { return 0; }\n", False),
    "src/util.c": ("file", b"void util(void) {}\n", False),
    "src/gone.c": ("file", b"/* deleted by a commit */\n", False),
    "src/also_gone.c": ("file", b"/* deleted, not committed */\n", False),
    "run.sh": ("file", b"#!/bin/sh\necho run\n", True),
    "data.bin": ("file", bytes(range(256)) * 4, False),
    "link": ("link", b"README.md", False),
    ".gitignore": ("file", b"*.log\nbuild/\n", False),
    "notes.txt": ("file", b"line one\nline two\n", False),
}


def ignored(rel: str) -> bool:
    return rel.endswith(".log") or rel == "build" or rel.startswith("build/")


# ---------------------------------------------------------------------------- fidelity


def test_adversarial_tree_is_reproduced_and_nothing_of_the_agent_runs(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "src", BASE_FILES)
    (source / "tracked.log").write_text("tracked although ignored\n")
    run(source, "add", "-f", "tracked.log")
    run(source, "commit", "-q", "--amend", "--no-edit")
    baseline = record(source, tmp_path / "baseline")

    # Commits, then a rewritten history.
    (source / "src" / "main.c").write_text("int main(void) { return 1; }\n")
    run(source, "rm", "-q", "src/gone.c")
    run(source, "commit", "-q", "-am", "first try")
    (source / "src" / "main.c").write_text("int main(void) { return 2; }\n")
    run(source, "commit", "-q", "-a", "--amend", "-m", "fix main", "-m", "Explained here.")
    # Staged, then unstaged on top; an untracked file; an unstaged deletion.
    (source / "src" / "util.c").write_text("void util(void) { /* staged */ }\n")
    run(source, "add", "src/util.c")
    (source / "src" / "util.c").write_text("void util(void) { /* unstaged */ }\n")
    (source / "src" / "new.c").write_text("/* untracked */\n")
    (source / "src" / "also_gone.c").unlink()
    # Exec bits, symlinks (one pointing outside the tree), binary data.
    (source / "run.sh").chmod(0o644)
    (source / "README.md").chmod(0o755)
    (source / "outside").symlink_to("/etc/hostname")
    (source / "up").symlink_to("../../somewhere")
    (source / "data.bin").write_bytes(bytes(range(255, -1, -1)) * 8 + b"\0tail")
    (source / "new.bin").write_bytes(b"\0\1\2\3" * 300)
    # Tracked-but-ignored file edited; ignored files added.
    (source / "tracked.log").write_text("edited\n")
    (source / "debug.log").write_text("ignored\n")
    (source / "build").mkdir()
    (source / "build" / "out.o").write_bytes(b"\0object")
    # A nested repository, with a commit of its own.
    nested = source / "vendored"
    nested.mkdir()
    run(nested, "init", "-q")
    (nested / "lib.c").write_text("/* nested */\n")
    run(nested, "add", "lib.c")
    run(nested, "commit", "-q", "-m", "nested")
    # LF text under an eol=crlf attribute the agent adds last, with hostile config.
    (source / "notes.txt").write_bytes(b"line one\nline 2 with LF\n")
    markers = tmp_path / "markers"
    plant_agent_config(source, markers)

    captured = capture_ok(source, baseline)
    rebuilt = rebuild(baseline, captured, tmp_path / "repo")

    def left_aside(rel: str) -> bool:
        return (ignored(rel) and rel != "tracked.log") or rel.partition("/")[0] == "vendored"

    assert snapshot(rebuilt) == snapshot(source, left_aside)
    assert (rebuilt / "tracked.log").read_text() == "edited\n"
    assert not (rebuilt / "debug.log").exists()
    assert not (rebuilt / "vendored").exists()
    assert (rebuilt / "notes.txt").read_bytes() == b"line one\nline 2 with LF\n"
    assert all(h.split()[2].startswith(b"a/") for h in headers(captured.patch))
    assert all(h.split()[3].startswith(b"b/") for h in headers(captured.patch))
    assert b"GIT binary patch" in captured.patch
    assert "vendored/" in captured.left_out
    assert b"fix main\nExplained here.\n---\n" in captured.commits_log
    assert b"first try" not in captured.commits_log
    assert not list(markers.iterdir()), "the agent's git config ran"


def test_deleted_git_dir_gives_the_same_patch_and_an_empty_log(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "src", BASE_FILES)
    baseline = record(source, tmp_path / "baseline")
    (source / "src" / "main.c").write_text("int main(void) { return 3; }\n")
    run(source, "commit", "-q", "-am", "change")
    (source / "fresh.txt").write_text("new\n")
    shutil.rmtree(source / ".git")

    captured = capture_ok(source, baseline)

    assert captured.commits_log == b""
    assert snapshot(rebuild(baseline, captured, tmp_path / "repo")) == snapshot(source, ignored)


def test_broken_git_dir_gives_an_empty_log(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "src", BASE_FILES)
    baseline = record(source, tmp_path / "baseline")
    run(source, "commit", "-q", "--allow-empty", "-m", "noise")
    (source / ".git" / "HEAD").write_text("garbage\n")

    assert capture_ok(source, baseline).commits_log == b""


def test_nothing_changed_gives_an_empty_patch(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "src", BASE_FILES)
    baseline = record(source, tmp_path / "baseline")
    (source / "ignored.log").write_text("not part of the patch\n")

    captured = capture_ok(source, baseline)

    assert captured == Capture(b"", baseline.base_tree, baseline.base_tree, b"", ())
    repo = tmp_path / "repo"
    assert git.checkout_baseline(baseline, repo) == Success(None)
    before = snapshot(repo)
    assert git.apply_patch(repo, b"") == Success(None)
    assert git.apply_patch(repo, b"\n  \n") == Success(None)
    assert snapshot(repo) == before == snapshot(source, ignored)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(("file", b"x\n", False), ("link", b"target", False), id="file-to-link"),
        pytest.param(("link", b"target", False), ("file", b"x\n", True), id="link-to-file"),
        pytest.param(("file", b"x\n", False), None, id="file-to-dir"),
        pytest.param(("link", b"README.md", False), None, id="link-to-dir"),
    ],
)
def test_type_changes(tmp_path: Path, before: Entry, after: Entry | None) -> None:
    source = make_repo(tmp_path / "src", {**BASE_FILES, "thing": before, "dir/in": before})
    baseline = record(source, tmp_path / "baseline")
    (source / "thing").unlink()
    if after is None:
        write(source, {"thing/inside": ("file", b"now a directory\n", False)})
    else:
        write(source, {"thing": after})
    shutil.rmtree(source / "dir")
    write(source, {"dir": ("file", b"directory became a file\n", False)})

    captured = capture_ok(source, baseline)

    assert snapshot(rebuild(baseline, captured, tmp_path / "repo")) == snapshot(source, ignored)


def test_refused_names_nested_repos_and_fifos_are_left_out(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "src", BASE_FILES)
    baseline = record(source, tmp_path / "baseline")
    write(
        source,
        {
            ".GIT/config": ("file", b"[core]\n", False),
            "git~1": ("file", b"refused on NTFS\n", False),
            "kept.txt": ("file", b"kept\n", False),
        },
    )
    (source / "empty-nest").mkdir()
    run(source / "empty-nest", "init", "-q")
    (source / "notes.txt").unlink()
    os.mkfifo(source / "notes.txt")
    os.mkfifo(source / "pipe")

    captured = capture_ok(source, baseline)

    assert set(captured.left_out) >= {".GIT/config", "git~1", "empty-nest/", "notes.txt"}
    rebuilt = rebuild(baseline, captured, tmp_path / "repo")
    assert (rebuilt / "kept.txt").read_text() == "kept\n"
    assert not (rebuilt / "notes.txt").exists()
    assert not (rebuilt / "pipe").exists()
    assert not (rebuilt / "git~1").exists()


def test_tracked_content_under_a_new_nested_repo_is_kept(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "src", BASE_FILES)
    baseline = record(source, tmp_path / "baseline")
    run(source / "src", "init", "-q")
    (source / "src" / "main.c").write_text("int main(void) { return 4; }\n")
    (source / "src" / "added.c").write_text("/* new under the nested repo */\n")

    captured = capture_ok(source, baseline)

    rebuilt = rebuild(baseline, captured, tmp_path / "repo")
    assert (rebuilt / "src" / "main.c").read_text() == "int main(void) { return 4; }\n"
    assert (rebuilt / "src" / "added.c").exists()


def test_submodules_of_the_initial_commit_are_never_entered(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "src", BASE_FILES)
    for name in ("moved", "dirty"):
        sub = source / name
        sub.mkdir()
        run(sub, "init", "-q")
        (sub / "lib.c").write_text("/* v1 */\n")
        run(sub, "add", "lib.c")
        run(sub, "commit", "-q", "-m", "v1")
        run(source, "add", name)
    run(source, "commit", "-q", "--amend", "--no-edit")
    baseline = record(source, tmp_path / "baseline")
    # One nested HEAD moves; the other stays but is dirty, which is when git would ask the
    # nested repository for its status. Both are armed.
    (source / "moved" / "lib.c").write_text("/* v2 */\n")
    run(source / "moved", "commit", "-q", "-am", "v2")
    markers = tmp_path / "markers"
    markers.mkdir()
    tool = script(tmp_path / "evil.sh", markers / "ran")
    for name in ("moved", "dirty"):
        (source / name / "lib.c").write_text("/* dirty */\n")
        run(source / name, "config", "core.fsmonitor", str(tool))
        run(source / name, "config", "core.hooksPath", str(tmp_path))
    (source / "README.md").write_text("outer change\n")

    captured = capture_ok(source, baseline)

    assert [h.split()[2] for h in headers(captured.patch)] == [b"a/README.md"]
    assert "moved" in captured.left_out
    repo = rebuild(baseline, captured, tmp_path / "repo")
    assert (repo / "moved").is_dir()
    assert (repo / "dirty").is_dir()
    assert not list(markers.iterdir())


def test_base_is_the_bytes_the_agent_starts_from(tmp_path: Path) -> None:
    # The commit's attributes make the checkout differ from the stored blob (CRLF on disk).
    files = {
        **BASE_FILES,
        ".gitattributes": ("file", b"*.txt text eol=crlf\n", False),
        "untracked-at-start.c": ("file", b"/* present before the agent */\n", False),
    }
    source = make_repo(tmp_path / "src", {k: v for k, v in files.items() if "untracked" not in k})
    (source / "notes.txt").unlink()
    run(source, "checkout", "--", "notes.txt")
    assert (source / "notes.txt").read_bytes() == b"line one\r\nline two\r\n"
    write(source, {"untracked-at-start.c": files["untracked-at-start.c"]})
    baseline = record(source, tmp_path / "baseline")

    assert capture_ok(source, baseline).patch == b""
    repo = tmp_path / "repo"
    assert git.checkout_baseline(baseline, repo) == Success(None)
    assert snapshot(repo) == snapshot(source, ignored)


# ---------------------------------------------------------------------------- proof and apply


def test_a_patch_that_does_not_apply_gives_gits_message(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "src", BASE_FILES)
    baseline = record(source, tmp_path / "baseline")
    (source / "README.md").write_text("changed\n")
    captured = capture_ok(source, baseline)
    repo = tmp_path / "repo"
    assert git.checkout_baseline(baseline, repo) == Success(None)
    (repo / "README.md").write_text("someone else changed it\n")

    applied = git.apply_patch(repo, captured.patch)

    assert isinstance(applied, Failure)
    assert "README.md: patch does not apply" in applied.failure().log
    assert (repo / "README.md").read_text() == "someone else changed it\n"
    assert isinstance(git.prove(baseline, captured.patch, captured.new_tree), Failure)


def test_apply_ignores_the_grading_repos_own_git_settings(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "src", BASE_FILES)
    baseline = record(source, tmp_path / "baseline")
    (source / "notes.txt").write_bytes(b"trailing space   \nno newline at end")
    (source / "win.txt").write_bytes(b"crlf\r\nline\r\n")
    captured = capture_ok(source, baseline)
    repo = tmp_path / "repo"
    assert git.checkout_baseline(baseline, repo) == Success(None)
    run(repo, "init", "-q")
    run(repo, "config", "apply.whitespace", "fix")
    (repo / ".gitattributes").write_text("* text eol=crlf whitespace=trailing-space\n")

    assert git.apply_patch(repo, captured.patch) == Success(None)

    assert (repo / "notes.txt").read_bytes() == b"trailing space   \nno newline at end"
    assert (repo / "win.txt").read_bytes() == b"crlf\r\nline\r\n"


def test_apply_diff_applies_hidden_tests_with_p1(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    write(workspace, {"tests/test_a.py": ("file", b"old\n", False)})
    diff = tmp_path / "future.diff"
    diff.write_bytes(
        b"--- a/tests/test_a.py\n+++ b/tests/test_a.py\n@@ -1 +1 @@\n-old\n+new\n"
        b"--- /dev/null\n+++ b/tests/test_b.py\n@@ -0,0 +1 @@\n+added\n"
    )

    assert git.apply_diff(workspace, diff) == Success(None)
    assert (workspace / "tests" / "test_a.py").read_text() == "new\n"
    assert (workspace / "tests" / "test_b.py").read_text() == "added\n"
    again = git.apply_diff(workspace, diff)
    assert isinstance(again, Failure)
    assert "patch does not apply" in again.failure().log or "already exists" in again.failure().log


# ---------------------------------------------------------------------------- baseline


def test_from_root_takes_the_root_commit(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "src", BASE_FILES)
    root_tree = run(source, "rev-parse", "HEAD^{tree}").strip()
    root = run(source, "rev-parse", "HEAD").strip()
    (source / "README.md").write_text("agent was here\n")
    run(source, "commit", "-q", "-am", "agent commit")
    (source / "extra.txt").write_text("uncommitted\n")

    refused = git.record_baseline(source, tmp_path / "strict")
    assert isinstance(refused, Failure)
    assert "more than one commit" in refused.failure().message
    assert not (tmp_path / "strict").exists()
    baseline = record(source, tmp_path / "baseline", from_root=True)

    assert (baseline.commit, baseline.base_tree) == (root, root_tree)
    assert git.load_baseline(tmp_path / "baseline") == Success(baseline)
    captured = capture_ok(source, baseline)
    assert captured.commits_log.startswith(run(source, "rev-parse", "HEAD").encode())
    assert snapshot(rebuild(baseline, captured, tmp_path / "repo")) == snapshot(source, ignored)


def test_from_root_refuses_several_roots_and_a_missing_history(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "src", BASE_FILES)
    run(source, "checkout", "-q", "--orphan", "other")
    run(source, "commit", "-q", "-m", "second root")
    run(source, "merge", "-q", "--allow-unrelated-histories", "-m", "join", "main")

    two = git.record_baseline(source, tmp_path / "two", from_root=True)
    assert isinstance(two, Failure)
    assert "2 root commits" in two.failure().message
    shutil.rmtree(source / ".git")
    none = git.record_baseline(source, tmp_path / "none", from_root=True)
    assert isinstance(none, Failure)
    assert "\n" not in none.failure().message


def test_commits_log_lists_hash_subject_body_and_separator(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "src", BASE_FILES)
    baseline = record(source, tmp_path / "baseline")
    run(source, "commit", "-q", "--allow-empty", "-m", "first", "-m", "Body one.\n\nMore.")
    first = run(source, "rev-parse", "HEAD").strip()
    run(source, "commit", "-q", "--allow-empty", "-m", "second")
    second = run(source, "rev-parse", "HEAD").strip()

    log = capture_ok(source, baseline).commits_log

    assert log == (f"{second}\nsecond\n---\n{first}\nfirst\nBody one.\n\nMore.\n---\n").encode()


def test_baseline_folder_rules(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "src", BASE_FILES)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "file").write_text("x")

    assert isinstance(git.record_baseline(source, busy), Failure)
    assert isinstance(git.record_baseline(source, source / "inside"), Failure)
    assert isinstance(git.record_baseline(tmp_path / "missing", tmp_path / "b"), Failure)
    assert isinstance(git.load_baseline(tmp_path / "nothing"), Failure)
    baseline = record(source, tmp_path / "baseline")
    assert stat.S_IMODE((tmp_path / "baseline").stat().st_mode) == 0o700
    assert isinstance(git.checkout_baseline(baseline, busy), Failure)
    (tmp_path / "baseline" / "baseline.json").write_text('{"commit": "nope"}')
    assert isinstance(git.load_baseline(tmp_path / "baseline"), Failure)


# ---------------------------------------------------------------------------- property


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=trees, after=trees)
def test_capture_then_apply_reproduces_any_small_tree(
    before: dict[str, Entry], after: dict[str, Entry]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        source, baseline, captured = edited(tmp, before, after)

        assert (captured.patch == b"") == (captured.new_tree == captured.base_tree)
        assert snapshot(rebuild(baseline, captured, tmp / "repo")) == snapshot(source)


# ---------------------------------------------------------------------------- as the owner


@pytest.fixture
def stranger() -> Iterator[tuple[int, int]]:
    """A throwaway system user (root only)."""
    if not IS_ROOT:
        pytest.skip("switching to the tree's owner needs root")
    if shutil.which("useradd") is None or shutil.which("userdel") is None:
        pytest.skip("no useradd/userdel to make a throwaway user")
    name = f"ssegt{os.getpid() % 100000}"
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
    )
    try:
        entry = pwd.getpwnam(name)
        yield entry.pw_uid, entry.pw_gid
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


def chown_tree(root: Path, ids: tuple[int, int]) -> None:
    os.chown(root, *ids, follow_symlinks=False)
    for parent, dirs, files in os.walk(root):
        for name in dirs + files:
            os.chown(os.path.join(parent, name), *ids, follow_symlinks=False)


def test_as_root_the_tree_is_read_as_its_owner(stranger: tuple[int, int]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        tmp.chmod(0o755)
        source = make_repo(tmp / "src", BASE_FILES)
        chown_tree(source, stranger)
        baseline = record(source, tmp / "baseline")
        assert all(
            os.stat(os.path.join(p, n)).st_uid == 0
            for p, ds, fs in os.walk(baseline.path)
            for n in ds + fs
        )

        (source / "README.md").write_text("by the owner\n")
        (source / "fresh.c").write_text("/* new */\n")
        run(source, "add", "fresh.c")
        run(source, "commit", "-q", "-am", "owner commit")
        secret = source / "secret.txt"
        secret.write_text("only root can read this\n")
        secret.chmod(0o600)
        markers = tmp / "markers"
        plant_agent_config(source, markers)
        chown_tree(source, stranger)
        os.chown(secret, 0, 0)
        (tmp / "evil.sh").chmod(0o755)
        markers.chmod(0o777)

        captured = capture_ok(source, baseline)

        assert b"only root can read" not in captured.patch
        assert "secret.txt" in captured.left_out
        assert b"owner commit" in captured.commits_log
        rebuilt = rebuild(baseline, captured, tmp / "repo")
        assert (rebuilt / "README.md").read_text() == "by the owner\n"
        assert (rebuilt / "fresh.c").exists()
        assert not list(markers.iterdir())


def test_apply_diff_as_another_user(stranger: tuple[int, int]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        tmp.chmod(0o755)
        workspace = tmp / "work"
        write(workspace, {"t.txt": ("file", b"a\n", False)})
        chown_tree(workspace, stranger)
        diff = tmp / "future.diff"
        diff.write_bytes(b"--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+x\n")
        diff.chmod(0o644)

        assert git.apply_diff(workspace, diff, run_as=stranger) == Success(None)
        assert (workspace / "new.txt").stat().st_uid == stranger[0]
        closed = tmp / "closed"
        write(closed, {"t.txt": ("file", b"a\n", False)})
        closed.chmod(0o755)
        refused = git.apply_diff(closed, diff, run_as=stranger)
        assert isinstance(refused, Failure)
        assert isinstance(refused.failure(), ApplyError)
