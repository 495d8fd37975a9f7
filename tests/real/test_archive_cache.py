"""The baseline's archive cache (`interpreters.real.archive.cache`) on real trees.

The cache is recorded on an aged tree (an entry changed in the second of the walk or the one
before is never reused), an agent edits the tree with stat tricks (content changed with size
and mtime restored, a file of the same size and mtime swapped in from elsewhere, a file turned
into a link or a FIFO, edits in the second the cache is recorded), then the archive written
with the cache must hold exactly what a fresh archive holds: the same tar stream, byte for
byte, once decompressed. Reuse must really happen, and a cache that is damaged, foreign or a
link is not used.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interpreters.real.archive import archive, start_archive
from interpreters.real.archive import cache as archive_cache
from tests.support.gittrees import Pool, age, early, edit, edits

pytestmark = pytest.mark.slow

EXAMPLES = 20
small_pieces = st.sampled_from([1, 100, 1 << 20])
"""Bytes of tar data per piece: one entry each, a few, or a whole folder."""


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Pool:
    made = Pool(tmp_path_factory.mktemp("aged"))
    made.fill(EXAMPLES + 4)
    return made


def tar_of(archive: Path) -> bytes:
    """The tar stream of a .tar.gz (every gzip member, in order)."""
    return gzip.decompress(archive.read_bytes())


def archives(source: Path, cache: Path, out: Path) -> tuple[bytes, bytes, str | None]:
    """The tar streams of an archive written with the cache and of a fresh one, and what the
    cached one said; the archive written with the cache by three workers at once
    (`split_archive`) must be that same stream, and say how much it reused too."""
    said = archive(source, out / "cached.tar.gz", cache=cache).unwrap()
    archive(source, out / "fresh.tar.gz").unwrap()
    split = start_archive(source, out / "split.tar.gz", cache, processes=3)
    split_said = split.finish(timeout=120).unwrap()
    assert (split_said is None) == (said is None)
    cached = tar_of(out / "cached.tar.gz")
    assert tar_of(out / "split.tar.gz") == cached
    return cached, tar_of(out / "fresh.tar.gz"), said


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=early, after=edits, piece=small_pieces)
def test_the_archive_with_the_cache_is_the_fresh_archive(
    pool: Pool,
    before: list[tuple[str, str, bytes]],
    after: list[tuple[str, str, bytes]],
    piece: int,
) -> None:
    source = pool.take()
    with tempfile.TemporaryDirectory(dir=source.parent) as folder:
        outside = Path(folder)
        for op, name, data in before:  # in the second the cache is recorded
            edit(source, outside, op, name, data)
        with mock.patch.object(archive_cache, "SEGMENT", piece):
            assert archive_cache.record_archive_cache(source, outside, level=1).unwrap()
        for op, name, data in after:
            edit(source, outside, op, name, data)

        cached, fresh, said = archives(source, outside / archive_cache.CACHE_NAME, outside)

        assert cached == fresh
        assert said is not None
        assert "reused from the baseline's archive cache" in said
        listed = subprocess.run(
            ["tar", "-tzf", str(outside / "cached.tar.gz")], capture_output=True, check=False
        )
        assert listed.returncode == 0, listed.stderr


def big_tree(root: Path, folders: int = 20, each: int = 100) -> Path:
    """`folders` × `each` files of about 2 KiB of text each."""
    for number in range(folders):
        folder = root / f"pkg{number:02d}"
        folder.mkdir(parents=True)
        for index in range(each):
            (folder / f"f{index:03d}.c").write_bytes(
                f"/* {number}/{index} */\n".encode() + os.urandom(1024).hex().encode()
            )
    return root


def test_one_edited_file_costs_only_its_piece(tmp_path: Path) -> None:
    source = big_tree(tmp_path / "src")
    age([source])
    archive_cache.record_archive_cache(source, tmp_path, level=1).unwrap()
    (source / "pkg07" / "f042.c").write_bytes(b"/* fixed */\n")

    cached, fresh, said = archives(source, tmp_path / archive_cache.CACHE_NAME, tmp_path)

    assert cached == fresh
    assert said is not None
    reused = int(said.split("%")[0])
    assert reused >= 90, said  # one piece of 1 MiB out of 20 folders of 2 MiB each
    written = (tmp_path / "cached.tar.gz").stat().st_size
    assert written < (tmp_path / "fresh.tar.gz").stat().st_size * 1.05


def test_a_tree_changed_just_before_the_cache_is_not_reused(tmp_path: Path) -> None:
    source = big_tree(tmp_path / "src", folders=2, each=10)  # not aged: every entry is racy
    with mock.patch.object(archive_cache, "FINE_MARGIN", 60 * 10**9):
        archive_cache.record_archive_cache(source, tmp_path, level=1).unwrap()
    (source / "pkg01" / "f003.c").write_bytes(b"same second\n")

    cached, fresh, said = archives(source, tmp_path / archive_cache.CACHE_NAME, tmp_path)

    assert cached == fresh
    assert said == "0% of the archive reused from the baseline's archive cache"


@given(ctime=st.integers(0, 2**62), before=st.integers(0, 4 * 10**9))
def test_an_entry_is_settled_only_well_before_the_walk(ctime: int, before: int) -> None:
    """A ctime on a 10 ms boundary may come from a file system that stamps whole seconds (or
    two): it must precede the walk by 3 s; any other by 100 ms."""
    coarse = ctime % 10_000_000 == 0
    settled = archive_cache.settled(ctime, ctime + before)
    assert settled == (before > (3 * 10**9 if coarse else 10**8))


def test_without_a_cache_nothing_is_said(tmp_path: Path) -> None:
    source = big_tree(tmp_path / "src", folders=1, each=3)
    said = archive(source, tmp_path / "a.tar.gz", cache=tmp_path / "none").unwrap()
    assert said is None


@pytest.mark.parametrize("damage", ["truncated", "garbage", "link", "group-writable", "foreign"])
def test_a_damaged_or_foreign_cache_is_not_used(tmp_path: Path, damage: str) -> None:
    source = big_tree(tmp_path / "src", folders=2, each=10)
    age([source])
    base = tmp_path / "base"
    base.mkdir()
    archive_cache.record_archive_cache(source, base, level=1).unwrap()
    cache = base / archive_cache.CACHE_NAME
    if damage == "truncated":
        os.truncate(cache, cache.stat().st_size // 2)
    elif damage == "garbage":
        data = bytearray(cache.read_bytes())
        data[-200:-40] = b"x" * 160  # the manifest's end
        cache.write_bytes(bytes(data))
    elif damage == "link":
        cache.rename(base / "real")
        cache.symlink_to(base / "real")
    elif damage == "group-writable":
        cache.chmod(0o620)
    elif damage == "foreign":
        if os.geteuid() != 0:
            pytest.skip("giving a file away needs root")
        os.chown(cache, 1, 1)

    out = tmp_path / "out"
    out.mkdir()
    cached, fresh, said = archives(source, cache, out)

    assert cached == fresh
    assert said is not None
    assert "is not used" in said, said


def test_a_damaged_entry_spares_only_its_piece(tmp_path: Path) -> None:
    source = big_tree(tmp_path / "src", folders=2, each=10)
    age([source])
    base = tmp_path / "base"
    base.mkdir()
    with mock.patch.object(archive_cache, "SEGMENT", 1):  # a piece per file
        archive_cache.record_archive_cache(source, base, level=1).unwrap()
    cache = base / archive_cache.CACHE_NAME
    data = cache.read_bytes()
    end, length, tag = archive_cache._TRAILER.unpack(data[-archive_cache._TRAILER.size :])
    manifest = json.loads(data[end : end + length])
    pieces = next(iter(manifest["folders"].values()))
    pieces[0][2] = [7]  # an entry that is no list
    pieces[1][2] = [[["not", "a", "name"], 1, 2]]  # a name that is no string
    written = json.dumps(manifest).encode()
    cache.write_bytes(data[:end] + written + archive_cache._TRAILER.pack(end, len(written), tag))

    out = tmp_path / "out"
    out.mkdir()
    cached, fresh, said = archives(source, cache, out)

    assert cached == fresh
    assert said is not None
    assert said.endswith("reused from the baseline's archive cache")
    assert not said.startswith(("0%", "100%")), said


def test_the_baseline_command_records_it_and_evaluate_reuses_it(tmp_path: Path) -> None:
    """`ssegrade baseline`, an edit, `ssegrade evaluate`: the archive is the tree, and the
    notes say how much the cache spared."""
    from tests.support.realtask import make_task

    source = big_tree(tmp_path / "src", folders=4, each=50)
    subprocess.run(["git", "init", "-q"], cwd=source, check=True)
    subprocess.run(["git", "add", "-A"], cwd=source, check=True)
    subprocess.run(
        ["git", "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "initial"],
        cwd=source,
        check=True,
    )
    age([source])
    base = tmp_path / "base"
    cli = [sys.executable, "-c", "from interpreters.cli.entry import main; main()"]
    done = subprocess.run(
        [*cli, "baseline", "--source", str(source), "--into", str(base)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (base / archive_cache.CACHE_NAME).is_file()
    (source / "pkg02" / "f010.c").write_bytes(b"/* fixed */\n")
    task = make_task(tmp_path / "t").task

    graded = subprocess.run(
        [*cli, "evaluate", "--task", str(task), "--source", str(source), "--baseline",
         str(base), "--results", str(tmp_path / "results")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip

    assert graded.returncode == 0, graded.stderr
    notes = (tmp_path / "results" / "logs" / "notes.log").read_text()
    assert "reused from the baseline's archive cache" in notes
    fresh = tmp_path / "fresh.tar.gz"
    archive(source, fresh).unwrap()
    assert tar_of(tmp_path / "results" / "source.tar.gz") == tar_of(fresh)
