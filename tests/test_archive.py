"""The source archive: a standard tar.gz, written walking the agent's tree with directory
descriptors, never following a link, whole or absent."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interpreters.real.files import archive, start_archive


class Swap(Exception):
    """Raised by a check to stop an archive."""


def members(path: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: m for m in tar.getmembers()}


def read_member(path: Path, name: str) -> bytes:
    with tarfile.open(path, "r:gz") as tar:
        data = tar.extractfile(name)
        assert data is not None
        return data.read()


def once(action: Callable[[], None], after: int = 0) -> Callable[[], None]:
    """A check that performs `action` at its `after`-th call, once."""
    calls = [0]

    def check() -> None:
        calls[0] += 1
        if calls[0] == after + 1:
            action()

    return check


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "a" / "b").mkdir(parents=True)
    (src / "a" / "b" / "deep.txt").write_text("deep")
    (src / "plain.txt").write_text("plain")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("secret")
    return src


def test_gnu_tar_and_gzip_read_it(tree: Path, tmp_path: Path) -> None:
    (tree / "big.bin").write_bytes(os.urandom(9 << 20))  # several gzip members
    dest = tmp_path / "source.tar.gz"
    assert archive(tree, dest).unwrap() is None
    subprocess.run(["gzip", "-t", str(dest)], check=True)
    listing = subprocess.run(["tar", "-tzf", str(dest)], capture_output=True, text=True, check=True)
    expected = ["src", "src/a", "src/a/b", "src/a/b/deep.txt", "src/big.bin", "src/plain.txt"]
    assert sorted(name.rstrip("/") for name in listing.stdout.split()) == expected
    assert sorted(members(dest)) == expected
    assert read_member(dest, "src/big.bin") == (tree / "big.bin").read_bytes()


def test_a_folder_swapped_for_a_link_is_never_followed(tree: Path, tmp_path: Path) -> None:
    def swap() -> None:
        shutil.rmtree(tree / "a")
        (tree / "a").symlink_to(tmp_path / "outside")

    dest = tmp_path / "source.tar.gz"
    # The root is listed before the first check: "a" is then a folder, opened after the swap.
    assert archive(tree, dest, check=once(swap)).unwrap() is None
    names = members(dest)
    assert not any(name.startswith("src/a/") for name in names)
    assert "src/plain.txt" in names


def test_a_file_swapped_for_a_fifo_or_a_link_is_left_out_or_stored_as_a_link(
    tree: Path, tmp_path: Path
) -> None:
    def swap() -> None:
        (tree / "plain.txt").unlink()
        os.mkfifo(tree / "plain.txt")
        (tree / "a" / "b" / "deep.txt").unlink()
        (tree / "a" / "b" / "deep.txt").symlink_to(tmp_path / "outside" / "secret")

    dest = tmp_path / "source.tar.gz"
    assert archive(tree, dest, check=once(swap)).unwrap() is None
    names = members(dest)
    assert "src/plain.txt" not in names
    assert names["src/a/b/deep.txt"].issym()


def test_a_file_that_shrinks_is_padded_and_the_archive_stays_valid(
    tree: Path, tmp_path: Path
) -> None:
    (tree / "big.bin").write_bytes(b"x" * (3 << 20))
    dest = tmp_path / "source.tar.gz"
    # Calls: root entries a (folder), big.bin, then the first read of big.bin.
    truncate = once(lambda: os.truncate(tree / "big.bin", 10), after=2)
    assert archive(tree, dest, check=truncate).unwrap() is None
    data = read_member(dest, "src/big.bin")
    assert len(data) == 3 << 20
    assert data.strip(b"\0") in (b"x" * 10, b"x" * (1 << 20))


def test_a_stopped_archive_leaves_no_file(tree: Path, tmp_path: Path) -> None:
    def stop() -> None:
        raise Swap

    dest = tmp_path / "source.tar.gz"
    with pytest.raises(Swap):
        archive(tree, dest, check=once(stop, after=1))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside", "src"]


def test_in_a_child_process_whole_or_absent(tree: Path, tmp_path: Path) -> None:
    dest = tmp_path / "source.tar.gz"
    assert start_archive(tree, dest).finish(timeout=60).unwrap() is None
    assert read_member(dest, "src/plain.txt") == b"plain"
    dest.unlink()
    (tree / "huge").write_bytes(b"")
    os.truncate(tree / "huge", 1 << 40)  # sparse: reading it takes far longer than allowed
    failed = start_archive(tree, dest).finish(timeout=0.5)
    assert "time limit" in failed.failure()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside", "src"]


NAMES = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/\0"),
    min_size=1,
    max_size=120,
).filter(lambda n: n not in (".", "..") and len(n.encode()) < 250)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    files=st.dictionaries(
        st.lists(NAMES, min_size=1, max_size=3).map(tuple), st.binary(max_size=2000), max_size=8
    )
)
def test_round_trip_of_any_names(
    tmp_path_factory: pytest.TempPathFactory, files: dict[tuple[str, ...], bytes]
) -> None:
    top = tmp_path_factory.mktemp("names")
    src = top / "src"
    src.mkdir()
    written: dict[str, bytes] = {}
    for parts, data in files.items():
        path = src.joinpath(*parts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists():
                continue
            path.write_bytes(data)
        except (NotADirectoryError, FileExistsError, IsADirectoryError):
            continue  # a name already used as a file or a folder
        written["/".join(("src", *parts))] = data
    dest = top / "source.tar.gz"
    assert archive(src, dest).unwrap() is None
    found = members(dest)
    for name, data in written.items():
        assert found[name].isfile()
        assert read_member(dest, name) == data
    assert {n for n, m in found.items() if m.isfile()} == set(written)
