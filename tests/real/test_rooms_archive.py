"""The rooms: the results folder and the archive, each one package with a small face loaded
name by name, and no second door to either; the archive's gzip stream, with the cache's members
among its own, and its compressing threads ending with the archive, whole or stopped."""

from __future__ import annotations

import gzip
import importlib
import io
import subprocess
import sys
import tarfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

import pytest

from interpreters.real import archive, files, resultsfolder
from interpreters.real.archive.compression import ParallelGzip, Span, gzip_members


@pytest.mark.parametrize("room", [archive, resultsfolder], ids=lambda m: m.__name__)
def test_each_room_has_a_small_face_of_names_it_holds(room: ModuleType) -> None:
    names = room.__all__
    assert 0 < len(names) <= 20
    for name in names:
        assert getattr(room, name) is not None


@pytest.mark.parametrize(
    "moved",
    [
        "interpreters.real.results",
        "interpreters.real.private",
        "interpreters.real.holding",
        "interpreters.real.archive_child",
        "interpreters.real.files.archiving",
        "interpreters.real.files.archive_cache",
        "interpreters.real.files.compression",
        "interpreters.real.files.split_archive",
        "interpreters.real.files.tarstream",
        "interpreters.batch.folders",
    ],
)
def test_a_concept_has_one_room_and_no_second_door(moved: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(moved)
    assert not {"archive", "start_archive", "CACHE_NAME"} & set(dir(files))


def test_a_light_name_of_a_room_loads_no_more_than_its_module() -> None:
    """The archive's child (imported before anything else) and the default results folder
    (the command line's help) load neither the archive's walk nor the results writer."""
    code = (
        "import sys\n"
        "from interpreters.real.archive import child\n"
        "from interpreters.real.resultsfolder import DEFAULT_RESULTS\n"
        "print('\\n'.join(sys.modules))\n"
    )
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True
        ).stdout.split()
    )
    assert "interpreters.real.archive.child" in loaded
    heavy = {"returns", "pydantic", "interpreters.real.archive.archiving"}
    heavy |= {"interpreters.real.resultsfolder.writer", "interpreters.real.resultsfolder.runs"}
    assert loaded & heavy == set()


def _tree(root: Path) -> Path:
    source = root / "src"
    for number in range(40):
        folder = source / f"d{number:02d}"
        folder.mkdir(parents=True)
        (folder / "code.c").write_bytes(b"int main(void) { return 0; }\n" * (number * 50 + 1))
    return source


def test_the_stream_and_the_cache_members_read_as_one_gzip(tmp_path: Path) -> None:
    out = tmp_path / "mixed.gz"
    earlier = tmp_path / "earlier.gz"
    earlier.write_bytes(gzip_members(b"cached " * 100_000, 1))
    with out.open("wb") as sink, earlier.open("rb") as kept, ThreadPoolExecutor(2) as pool:
        stream = ParallelGzip(sink.fileno(), 1, pool, lambda: None)
        stream.write(b"before " * 100_000)
        stream.copy(Span(kept.fileno(), 0, earlier.stat().st_size))
        stream.write(b"after " * 100_000)
        stream.finish()
    data = b"before " * 100_000 + b"cached " * 100_000 + b"after " * 100_000
    assert gzip.decompress(out.read_bytes()) == data


class _Stop(Exception):
    pass


def test_a_stopped_archive_leaves_no_file_and_no_compressing_thread(tmp_path: Path) -> None:
    source = _tree(tmp_path)
    before = set(threading.enumerate())
    calls = 0

    def check() -> None:
        nonlocal calls
        calls += 1
        if calls > 20:
            raise _Stop

    with pytest.raises(_Stop):
        archive.archive(source, tmp_path / "stopped.tar.gz", check=check)
    assert not (tmp_path / "stopped.tar.gz").exists()
    assert set(threading.enumerate()) <= before

    archive.archive(source, tmp_path / "whole.tar.gz").unwrap()
    with tarfile.open(fileobj=io.BytesIO((tmp_path / "whole.tar.gz").read_bytes())) as tar:
        assert len([m for m in tar.getmembers() if m.isfile()]) == 40
    assert set(threading.enumerate()) <= before
