"""Reading patches for the guard: the diffs git itself writes (modes, deletions, symlinks,
binary files, odd paths), plain unified diffs, and generated patches read back line for
line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ssegrade.guard import diff_paths, parse_diff
from tests.support.guardkit import Edit, make_patch
from tests.support.realtask import GIT_ENV, git


def _diff(repo: Path) -> bytes:
    """The patch of the work tree against HEAD, as the capture writes it."""
    git(repo, "add", "-A")
    return subprocess.run(
        ["git", "diff", "--cached", "--binary", "--full-index", "--no-renames", "HEAD"],
        cwd=repo,
        env=GIT_ENV,
        capture_output=True,
        check=True,
    ).stdout


def test_what_git_writes_is_read_file_by_file(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "edit.c").write_text("int a;\nint b;\nint c;\n")
    (repo / "gone.c").write_text("int gone;\n")
    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "blob.bin").write_bytes(bytes(range(256)) * 4)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")

    (repo / "edit.c").write_text("int a;\nint B = 1;\nint c;\nint d;\n")
    (repo / "gone.c").unlink()
    (repo / "run.sh").chmod(0o755)
    (repo / "blob.bin").write_bytes(bytes(range(255, -1, -1)) * 4)
    (repo / "dir with space").mkdir()
    (repo / "dir with space" / 'caf\u00e9\t"q".c').write_text("+not a hunk line\n")
    os.symlink("edit.c", repo / "link")
    (repo / "new.bin").write_bytes(b"\x7fELF\x00\x01payload" * 10)
    (repo / "empty").write_text("")
    changes = {c.path: c for c in parse_diff(_diff(repo))}

    odd = 'dir with space/caf\u00e9\t"q".c'
    assert set(changes) == {
        "edit.c",
        "gone.c",
        "run.sh",
        "blob.bin",
        odd,
        "link",
        "new.bin",
        "empty",
    }
    edit = changes["edit.c"]
    assert (edit.removed, edit.added) == ([b"int b;"], (b"int B = 1;", b"int d;"))
    assert [len(run) for run in edit.runs] == [1, 1]
    gone = changes["gone.c"]
    assert (gone.old_path, gone.new_path, gone.removed, gone.old_mode) == (
        "gone.c",
        None,
        [b"int gone;"],
        "100644",
    )
    assert (changes["run.sh"].old_mode, changes["run.sh"].new_mode) == ("100644", "100755")
    assert changes["run.sh"].added == ()
    assert changes[odd].added == (b"+not a hunk line",)
    assert (changes["link"].new_mode, changes["link"].added) == ("120000", (b"edit.c",))
    assert changes["blob.bin"].binary
    assert changes["new.bin"].binary
    assert changes["new.bin"].content() == b"\x7fELF\x00\x01payload" * 10
    assert (changes["empty"].old_path, changes["empty"].added) == (None, ())


def test_a_plain_unified_diff_is_read_too() -> None:
    patch = (
        b"--- project.orig/src/a.c\t2024-01-01 00:00:00\n+++ project/src/a.c\t2024-01-02\n"
        b"@@ -1,3 +1,3 @@\n ctx\n--- not a header\n+++ not a header\n ctx\n"
        b"--- /dev/null\n+++ b/Makefile\n@@ -0,0 +1 @@\n+all:\n"
    )
    changes = parse_diff(patch)
    assert [(c.old_path, c.new_path) for c in changes] == [
        ("src/a.c", "src/a.c"),
        (None, "Makefile"),
    ]
    assert (changes[0].removed, changes[0].added) == ([b"-- not a header"], (b"++ not a header",))
    assert diff_paths(patch) == ("src/a.c", "Makefile")


@given(
    st.lists(
        st.tuples(
            st.from_regex(r"[a-z]{1,6}(/[a-z_.]{1,6}){0,2}", fullmatch=True),
            st.lists(st.binary(max_size=30).filter(lambda b: b"\n" not in b), max_size=5),
            st.lists(st.binary(max_size=30).filter(lambda b: b"\n" not in b), max_size=5),
        ),
        min_size=1,
        max_size=5,
        unique_by=lambda t: t[0],
    )
)
def test_a_generated_patch_reads_back_line_for_line(
    files: list[tuple[str, list[bytes], list[bytes]]],
) -> None:
    patch = make_patch([Edit(path, tuple(removed), tuple(added)) for path, removed, added in files])
    changes = parse_diff(patch)
    assert [(c.path, c.removed, c.added) for c in changes] == [
        (path, removed, tuple(added)) for path, removed, added in files
    ]


@given(st.binary(max_size=2000))
def test_any_bytes_are_read_without_error(data: bytes) -> None:
    for change in parse_diff(data):
        assert change.path
