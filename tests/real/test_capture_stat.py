"""The capture that trusts stat data (`interpreters.real.git.kept_index`) on real trees.

A capture starts from the baseline's kept index and hashes only the files whose stat data
changed. These tests play an agent that edits a real tree with stat tricks (content changed
with size and mtime restored, a file of the same size and mtime swapped in from elsewhere,
edits in the same second as the baseline) and check the fast capture byte for byte against
a full rehash, and the tree it rebuilds against the agent's.

The trees are made ahead and aged: a file changed within a second of the baseline keeps no
stat data, so only trees older than that show the stat data being trusted.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from interpreters.real import git
from interpreters.real.git.index_file import read_entries
from tests.support.gittrees import (
    PAIRS,
    Pool,
    capture_ok,
    early,
    edit,
    edits,
    rebuild,
    record,
    snapshot,
)

pytestmark = pytest.mark.slow


def ignored(rel: str) -> bool:
    """Paths the patch leaves out: ignored, refused by git, or in a nested repository."""
    return rel.endswith(".log") or rel.partition("/")[0] in ("build", ".GIT", "vendored")


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Pool:
    made = Pool(tmp_path_factory.mktemp("aged"))
    made.fill(EXAMPLES + 3)
    return made


EXAMPLES = 25


def kept_stat(baseline: git.Baseline) -> dict[str, bool]:
    """Each path of the kept index: whether it keeps stat data."""
    assert baseline.index is not None
    data = baseline.index.read_bytes()
    return {os.fsdecode(e.path): e.ctime != 0 for e in read_entries(data, len(baseline.base_tree))}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=early, after=edits)
def test_the_fast_capture_equals_a_full_rehash(
    pool: Pool, before: list[tuple[str, str, bytes]], after: list[tuple[str, str, bytes]]
) -> None:
    source = pool.take()
    with tempfile.TemporaryDirectory(dir=source.parent) as folder:
        outside = Path(folder)
        for op, name, data in before:  # in the second the baseline is recorded
            edit(source, outside, op, name, data)
        baseline = record(source, outside / "baseline")
        touched = {name for _, name, _ in before}
        assert all(kept for name, kept in kept_stat(baseline).items() if name not in touched)
        for op, name, data in after:
            edit(source, outside, op, name, data)

        fast = capture_ok(source, baseline)
        full = git.capture(source, baseline, rehash=True).unwrap()

        assert fast == full
        assert snapshot(rebuild(baseline, fast, outside / "repo")) == snapshot(source, ignored)


# ---------------------------------------------------------------------------- each trick alone


@pytest.mark.parametrize(
    "op",
    ["content_keep_stat", "truncate_keep_stat", "swap_outside", "swap_twin", "chmod_keep_mtime"],
)
def test_a_stat_trick_after_the_baseline_is_captured(pool: Pool, op: str) -> None:
    source = pool.take()
    with tempfile.TemporaryDirectory(dir=source.parent) as folder:
        outside = Path(folder)
        baseline = record(source, outside / "baseline")
        name = PAIRS[1][0]
        before = os.lstat(source / name)
        edit(source, outside, op, name, b"agent")
        after = os.lstat(source / name)
        # Only what the kernel sets tells the edit: the size and mtime are as recorded.
        assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)

        captured = capture_ok(source, baseline)

        assert f"b/{name}".encode() in captured.patch
        assert captured == git.capture(source, baseline, rehash=True).unwrap()


def test_an_edit_in_the_second_of_the_baseline_with_its_stat_restored_is_captured(
    pool: Pool,
) -> None:
    source = pool.take()
    with tempfile.TemporaryDirectory(dir=source.parent) as folder:
        outside = Path(folder)
        name = "src/util.c"
        edit(source, outside, "content_keep_stat", name, b"first")
        baseline = record(source, outside / "baseline")
        # Changed just before the baseline: its stat data are not trusted, whatever second the
        # next edit falls in.
        assert kept_stat(baseline)[name] is False
        assert kept_stat(baseline)["src/main.c"] is True
        edit(source, outside, "content_keep_stat", name, b"second")

        captured = capture_ok(source, baseline)

        assert b"second" in captured.patch
        assert captured == git.capture(source, baseline, rehash=True).unwrap()
