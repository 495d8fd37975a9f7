"""The rules of a results folder: private, held by one grading, cleared in a safe order, and
files named by others read only when they are regular files.

Real folders, real locks, real processes; hypothesis draws what a folder holds and how.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interpreters.app.setup import RESULTS_ENTRIES
from interpreters.real.resultsfolder import DAEMON_OWN, NotReady, hold, holding
from interpreters.real.resultsfolder.holding import INCOMPLETE, LOCK, FolderHeld
from interpreters.real.resultsfolder.private import (
    FolderRefused,
    make_private,
    open_below,
    read_trusted,
)
from interpreters.real.runner import resolve_runner
from interpreters.real.untrusted import NotReadable, read_regular

RUNNER = resolve_runner(None).unwrap()
ROOT = os.geteuid() == 0


@pytest.fixture
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ssegrade-rf-") as folder:
        yield Path(folder)


def fresh(top: Path) -> Path:
    return Path(tempfile.mkdtemp(dir=top))


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


# ---------------------------------------------------------------------------- private folders


def test_a_new_results_folder_and_its_missing_parents_are_private(scratch: Path) -> None:
    old = os.umask(0o022)
    try:
        fd = make_private(scratch / "a" / "b" / "results")
    finally:
        os.umask(old)
    os.close(fd)
    for path in (scratch / "a", scratch / "a" / "b", scratch / "a" / "b" / "results"):
        assert mode(path) == 0o700


@pytest.mark.skipif(not ROOT, reason="needs root to give a folder to another user")
@settings(max_examples=40, deadline=None)
@given(bits=st.integers(0, 0o777), theirs=st.booleans())
def test_an_existing_folder_is_used_only_when_ours_and_nobody_else_may_write(
    bits: int, theirs: bool
) -> None:
    with tempfile.TemporaryDirectory(prefix="ssegrade-rf-") as top:
        folder = Path(top) / "results"
        folder.mkdir()
        folder.chmod(bits)
        if theirs:
            os.chown(folder, RUNNER.uid, RUNNER.gid)
        if theirs or bits & 0o022:
            with pytest.raises(FolderRefused):
                make_private(folder)
            assert mode(folder) == bits  # left as it was
        else:
            os.close(make_private(folder))
            assert mode(folder) == 0o700


def test_a_link_is_never_a_results_folder_nor_a_step_below_one(scratch: Path) -> None:
    (scratch / "real").mkdir()
    (scratch / "link").symlink_to(scratch / "real")
    with pytest.raises(FolderRefused, match="a link"):
        make_private(scratch / "link")
    top = make_private(scratch / "top")
    try:
        (scratch / "top" / "t").symlink_to(scratch / "real")
        with pytest.raises(FolderRefused, match="a link"):
            open_below(top, scratch / "top", ("t", "m"), create=True)
        assert list((scratch / "real").iterdir()) == []
    finally:
        os.close(top)


@pytest.mark.skipif(not ROOT, reason="needs root to plant a file of another user")
def test_only_our_own_regular_files_are_believed(scratch: Path) -> None:
    top = make_private(scratch / "r")
    try:
        (scratch / "r" / "ours").write_text("{}")
        (scratch / "r" / "theirs").write_text("{}")
        os.chown(scratch / "r" / "theirs", RUNNER.uid, RUNNER.gid)
        (scratch / "r" / "shared").write_text("{}")
        (scratch / "r" / "shared").chmod(0o666)
        (scratch / "r" / "link").symlink_to(scratch / "r" / "ours")
        os.mkfifo(scratch / "r" / "fifo")
        assert read_trusted(top, "ours", 100) == b"{}"
        assert read_trusted(top, "ours", 1) is None
        for name in ("theirs", "shared", "link", "fifo", "missing"):
            assert read_trusted(top, name, 100) is None, name
    finally:
        os.close(top)


# ---------------------------------------------------------------------------- the lock


def opened(path: Path) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY)


def test_a_claim_keeps_out_every_other_claim_until_released(scratch: Path) -> None:
    folder = fresh(scratch)
    first = holding.claim(opened(folder), folder, "one")
    look = opened(folder)
    assert holding.is_held(look)
    with pytest.raises(FolderHeld):
        holding.claim(opened(folder), folder, "two")
    first.share()  # shared: other claims are still kept out
    with pytest.raises(FolderHeld):
        holding.claim(opened(folder), folder, "two")
    first.release()
    assert not holding.is_held(look)
    os.close(look)
    holding.claim(opened(folder), folder, "two").release()


def test_only_the_claimers_token_joins_a_shared_hold(scratch: Path) -> None:
    folder = fresh(scratch)
    claimed = holding.claim(opened(folder), folder, "driver-token")
    with pytest.raises(FolderHeld):  # not shared yet
        holding.join(opened(folder), folder, "driver-token")
    claimed.share()
    with pytest.raises(FolderHeld, match="another grading"):
        holding.join(opened(folder), folder, "someone-else")
    worker = holding.join(opened(folder), folder, "driver-token")
    claimed.release()
    look = opened(folder)
    assert holding.is_held(look)  # the worker still holds it
    worker.release()
    assert not holding.is_held(look)
    os.close(look)


def test_a_process_killed_holds_nothing(scratch: Path) -> None:
    folder = fresh(scratch)
    code = (
        "import os, sys; from pathlib import Path; "
        "from interpreters.real.resultsfolder import holding; "
        "p = Path(sys.argv[1]); "
        "h = holding.claim(os.open(p, os.O_RDONLY | os.O_DIRECTORY), p, 'x'); h.share(); "
        "print('held', flush=True); sys.stdin.read()"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline() == "held\n"
            with pytest.raises(FolderHeld):
                holding.claim(opened(folder), folder, "mine")
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    holding.claim(opened(folder), folder, "mine").release()


# ---------------------------------------------------------------------------- ready or refused

STRANGERS = ("notes.txt", "other")
NAMES = [*sorted(RESULTS_ENTRIES), INCOMPLETE, *STRANGERS]
GRADED = {"result.json", "checks.jsonl", INCOMPLETE}


def populate(folder: Path, names: set[str]) -> None:
    for name in names:
        if name in ("logs", "agent-phase", "other"):
            (folder / name).mkdir()
            (folder / name / "kept.log").write_text("x")
        else:
            (folder / name).write_text("x")


@settings(max_examples=60, deadline=None)
@given(names=st.sets(st.sampled_from(NAMES)), force=st.booleans())
def test_a_folder_is_cleared_only_when_forced_and_holding_only_what_a_grading_writes(
    names: set[str], force: bool
) -> None:
    with tempfile.TemporaryDirectory(prefix="ssegrade-rf-") as top:
        folder = Path(top) / "results"
        folder.mkdir(mode=0o700)
        populate(folder, names)
        refused = bool(names & set(STRANGERS)) if force else bool(names & GRADED)
        if refused:
            with pytest.raises(NotReady):
                hold(folder, RESULTS_ENTRIES, force=force)
            assert set(os.listdir(folder)) - {LOCK} == names  # nothing touched
            look = opened(folder)
            assert not holding.is_held(look)
            os.close(look)
            return
        held = hold(folder, RESULTS_ENTRIES, force=force)
        try:
            left = set(os.listdir(folder))
            if force:
                assert left == {LOCK, INCOMPLETE, "logs"}
                assert os.listdir(folder / "logs") == []
            else:
                assert left == names | {LOCK, "logs"}
            holding.unmark_finished(held.path)
            assert INCOMPLETE not in os.listdir(folder)
        finally:
            held.release()


def test_forced_beside_its_daemon_a_grading_leaves_the_daemons_record(scratch: Path) -> None:
    folder = scratch / "results"
    daemon = hold(folder, RESULTS_ENTRIES, share=True)  # as the daemon holds it
    try:
        populate(folder, {"agent-phase", "result.json", "final.patch", "checks.jsonl"})
        (folder / "logs" / "kept.log").write_text("x")  # the folder's logs/ is made with it
        grading = hold(folder, RESULTS_ENTRIES, force=True, join=True)  # evaluate --daemon
        try:
            assert not grading.claimed
            assert set(os.listdir(folder)) == {LOCK, INCOMPLETE, "logs", *DAEMON_OWN}
            assert (folder / "agent-phase" / "kept.log").read_text() == "x"
            assert os.listdir(folder / "logs") == []
        finally:
            grading.release()
    finally:
        daemon.release()
    # Claimed alone (no daemon shares it), forced: an earlier daemon's record goes too.
    alone = hold(folder, RESULTS_ENTRIES, force=True)
    try:
        assert "agent-phase" not in os.listdir(folder)
    finally:
        alone.release()


def test_a_folder_held_by_another_grading_is_refused_untouched(scratch: Path) -> None:
    folder = scratch / "results"
    first = hold(folder, RESULTS_ENTRIES)
    try:
        (folder / "result.json").write_text("{}")
        with pytest.raises(NotReady, match="being written by another grading"):
            hold(folder, RESULTS_ENTRIES, force=True)
        assert (folder / "result.json").read_text() == "{}"
    finally:
        first.release()


# ---------------------------------------------------------------------------- files named by others


def test_a_named_file_is_read_only_when_it_is_a_regular_file(scratch: Path) -> None:
    (scratch / "p.patch").write_bytes(b"diff\n")
    (scratch / "link.patch").symlink_to(scratch / "p.patch")
    os.mkfifo(scratch / "fifo.patch")
    (scratch / "folder.patch").mkdir()
    assert read_regular(scratch / "p.patch") == b"diff\n"
    assert read_regular(Path("/dev/null")) == b""
    for name, why in (
        ("link.patch", "a symbolic link"),
        ("fifo.patch", "not a file"),
        ("folder.patch", "not a file"),
        ("missing.patch", "No such file"),
    ):
        with pytest.raises(NotReadable, match=why):
            read_regular(scratch / name)
    with pytest.raises(NotReadable, match="not a file"):
        read_regular(Path("/dev/zero"))
    with pytest.raises(NotReadable, match="larger than 4 bytes"):
        read_regular(scratch / "p.patch", limit=4)
