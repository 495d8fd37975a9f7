"""A run folder on its way from a Ray node to the driver, without Ray: what a node sends
(`transit`) and what the driver writes of it (`landing`).

Properties: any run folder arrives as it left (names, bytes, modes), in pieces no bigger than
the chunk; `checks.jsonl` names the driver's logs. Attacks: a node's piece naming what no run
folder holds, or a path out of it, a piece too big, a link planted in the driver's run folder;
each is refused and nothing is written through it. A grading lost half-way leaves an `error`
result and nothing half-written.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interpreters.batch.landing import Arrival, TransitError
from interpreters.batch.transit import CHUNK, Piece, grade_on_node, pieces, relocate_checks
from interpreters.batch.work import Done, Work
from interpreters.real.files import remove_tree
from interpreters.real.resultsfolder.holding import Hold
from interpreters.real.resultsfolder.runs import RunFolders
from interpreters.real.runner.guardian import owner_tag
from ssegrade import EvaluationResult, PatchResult, RuntimeResult
from ssegrade.internal.request import Graded, Request
from tests.support.waiting import wait_until

TOKEN = "0123456789abcdef"

names = st.text(st.sampled_from("abc-_.0123"), min_size=1, max_size=6).filter(
    lambda name: name not in (".", "..")
)
contents = st.binary(max_size=40)
modes = st.sampled_from([0o600, 0o644, 0o755])
run_folders = st.fixed_dictionaries(
    {
        "result.json": st.tuples(contents, modes),
        "final.patch": st.tuples(contents, modes),
    },
    optional={"guard.json": st.tuples(contents, modes), "commits.log": st.tuples(contents, modes)},
).flatmap(
    lambda top: st.dictionaries(names, st.tuples(contents, modes), max_size=5).map(
        lambda logs: {**top, **{f"logs/{name}": item for name, item in logs.items()}}
    )
)


@contextlib.contextmanager
def held_folder(parts: tuple[str, ...] = ("t", "m", "a", "r")) -> Iterator[tuple[Path, Hold]]:
    """A private results folder and one run folder in it, held as the driver holds it."""
    root = Path(tempfile.mkdtemp(prefix="transit-test-"))
    folders = RunFolders(root / "results", token=TOKEN)
    held = folders.prepare(parts)
    try:
        yield root, held
    finally:
        held.release()
        folders.close()
        remove_tree(root)


def write_tree(folder: Path, tree: dict[str, tuple[bytes, int]]) -> None:
    for name, (data, mode) in tree.items():
        path = folder / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        path.chmod(mode)


def read_tree(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file below `folder` but the hold's own (`.lock`, `.incomplete`)."""
    found = {}
    for path in folder.rglob("*"):
        name = path.relative_to(folder).as_posix()
        if path.is_file() and name not in (".lock", ".incomplete"):
            found[name] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    return found


def sent(folder: Path, chunk: int, there: str = "/driver/run") -> list[Piece]:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return list(pieces(fd, str(folder), there, chunk))
    finally:
        os.close(fd)


@given(tree=run_folders, chunk=st.integers(1, 16))
def test_any_run_folder_arrives_as_it_left_in_pieces_no_bigger_than_the_chunk(
    tree: dict[str, tuple[bytes, int]], chunk: int
) -> None:
    with held_folder() as (root, source), held_folder() as (_, target):
        write_tree(source.path, tree)
        travelled = sent(source.path, chunk)
        assert all(len(piece.data) <= chunk for piece in travelled)
        assert sorted({piece.path for piece in travelled}) == sorted(tree)
        assert sum(piece.last for piece in travelled) == len(tree)  # each file ends once
        arrival = Arrival(target, RuntimeResult())
        for piece in travelled:
            arrival.take(piece)
        assert read_tree(target.path) == tree
        assert arrival.received == sum(len(data) for data, _ in tree.values())
        assert not list(target.path.rglob("*.tmp"))
        del root


def test_links_and_the_hold_s_own_files_stay_on_the_node(tmp_path: Path) -> None:
    with held_folder() as (_, source):
        (source.path / "result.json").write_text("{}")
        (source.path / "logs" / "a.log").symlink_to(tmp_path / "secret")
        (tmp_path / "secret").write_text("not for the driver")
        travelled = sent(source.path, CHUNK)
    assert [piece.path for piece in travelled] == ["result.json"]


LOG_RECORD = {"name": "build", "poc": None, "exit_code": 0, "seconds": 0.1, "killed": False}


def record(log_file: object) -> bytes:
    return json.dumps({**LOG_RECORD, "log_file": log_file}, separators=(",", ":")).encode()


def test_checks_name_the_driver_s_logs_and_nothing_else_changes() -> None:
    here, there = "/tmp/ssegrade-transit-x/run", "/results/t/m/a/r"
    lines = [
        record(f"{here}/logs/04-build.log"),
        record(f"{here}-other/logs/x.log"),  # another folder whose name starts the same
        record(None),
        b"not json",
        record(f"{here}/guard.json"),
        b"",
    ]
    moved = relocate_checks(b"\n".join(lines), here, there).split(b"\n")
    assert moved[0] == record(f"{there}/logs/04-build.log")
    assert moved[1:4] == lines[1:4]
    assert moved[4] == record(f"{there}/guard.json")
    assert moved[5] == b""


@given(st.lists(st.text(max_size=30).map(record), max_size=4))
def test_checks_without_the_node_s_folder_travel_byte_for_byte(lines: list[bytes]) -> None:
    data = b"\n".join(lines) + b"\n"
    assert relocate_checks(data, "/tmp/ssegrade-transit-x/run", "/results/r") == data


@pytest.mark.parametrize(
    "path",
    [
        "../escape",
        "logs/../../escape",
        "summary.json",
        ".lock",
        ".incomplete",
        "logs",
        "result.json/x",
        "notes.txt",
        "",
        "logs//a",
        "/etc/passwd",
        "logs/a\0b",
    ],
)
def test_a_piece_naming_what_no_run_folder_holds_is_refused_and_nothing_is_written(
    path: str,
) -> None:
    with held_folder() as (root, target):
        before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))
        with pytest.raises(TransitError):
            Arrival(target, RuntimeResult()).take(Piece(path, 0o644, b"x", last=True))
        assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == before


def test_a_piece_bigger_than_the_chunk_or_out_of_turn_is_refused() -> None:
    with held_folder() as (_, target):
        arrival = Arrival(target, RuntimeResult())
        with pytest.raises(TransitError, match="at most"):
            arrival.take(Piece("result.json", 0o644, b"x" * (CHUNK + 1), last=True))
        arrival.take(Piece("logs/a.log", 0o644, b"half", last=False))
        with pytest.raises(TransitError, match=r"before logs/a\.log was whole"):
            arrival.take(Piece("result.json", 0o644, b"{}", last=True))
        arrival.close()
        assert read_tree(target.path) == {}  # no half file, no temporary file


def test_a_link_planted_in_the_driver_s_run_folder_is_never_written_through(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("kept")
    with held_folder() as (_, target):
        os.rmdir(target.path / "logs")
        (target.path / "logs").symlink_to(outside)
        (target.path / "result.json").symlink_to(outside / "victim")
        arrival = Arrival(target, RuntimeResult())
        with pytest.raises(TransitError, match="link"):
            arrival.take(Piece("logs/victim", 0o644, b"overwritten", last=True))
        arrival.take(Piece("result.json", 0o644, b"{}", last=True))
        assert (target.path / "result.json").read_bytes() == b"{}"  # the link replaced
        assert not (target.path / "result.json").is_symlink()
    assert sorted(os.listdir(outside)) == ["victim"]
    assert (outside / "victim").read_text() == "kept"


def test_a_grading_lost_half_way_leaves_an_error_and_nothing_half_written() -> None:
    with held_folder() as (_, target):
        (target.path / "final.patch").write_text("an earlier attempt's")
        arrival = Arrival(target, RuntimeResult(agent_duration=7))
        arrival.take(Piece("logs/04-build.log", 0o644, b"whole", last=True))
        arrival.take(Piece("checks.jsonl", 0o644, b"half", last=False))
        result = arrival.lost("lost on its Ray node: WorkerCrashedError: it died")
        assert result.patch_result.status == "error"
        assert result.runtime_result.agent_duration == 7
        assert sorted(os.listdir(target.path)) == [".incomplete", ".lock", "logs", "result.json"]
        assert os.listdir(target.path / "logs") == []
        written = json.loads((target.path / "result.json").read_bytes())
        assert written["patch_result"]["error_msg"] == (
            "Exception: lost on its Ray node: WorkerCrashedError: it died"
        )


# ------------------------------------------------------------------ the node's side


def writing_grade(request: Request[Any]) -> Graded:
    """A grading function that writes what a grading writes, logs named by their path."""
    results, patch = Path(request.results), request.patch
    log = results / "logs" / "04-build.log"
    log.write_bytes(b"built\n" * 3)
    line = record(str(log)).decode()
    (results / "checks.jsonl").write_text(line + "\n")
    (results / "final.patch").write_bytes(patch if isinstance(patch, bytes) else b"")
    result = EvaluationResult(patch_result=PatchResult(status="passed"))
    (results / "result.json").write_bytes(result.to_json())
    return Graded(result)


def wait_gone(folders: set[Path]) -> None:
    """Wait until each of `folders` is removed (its guardian removes it), a few seconds
    each."""
    wait_until(
        lambda: not any(os.path.lexists(folder) for folder in folders),
        f"the removal of {sorted(map(str, folders))}",
        10 * len(folders),
    )


def transit_folders() -> set[Path]:
    """The transit folders of this process (named for its owner tag)."""
    return set(Path(tempfile.gettempdir()).glob(f"ssegrade-transit-{owner_tag()}-*"))


def test_a_node_grades_into_its_own_folder_and_sends_it_whole(tmp_path: Path) -> None:
    driver_run = tmp_path / "results" / "t" / "m" / "a" / "r"
    work = Work(1, "/task", b"the patch", "/repo", str(driver_run), RuntimeResult())
    before = transit_folders()
    stream = grade_on_node(writing_grade, work, TOKEN)
    first = next(stream)
    made = transit_folders() - before
    assert len(made) == 1  # the node's run folder is in its own temporary folder
    items = [first, *stream]
    done = items.pop()
    assert isinstance(done, Done)
    assert done.result is not None
    assert done.result.patch_result.status == "passed"
    assert all(isinstance(item, Piece) for item in items)
    by_path = {item.path: item.data for item in items if isinstance(item, Piece)}
    assert sorted(by_path) == ["checks.jsonl", "final.patch", "logs/04-build.log", "result.json"]
    checks = json.loads(by_path["checks.jsonl"])
    assert checks["log_file"] == f"{driver_run}/logs/04-build.log"
    assert by_path["final.patch"] == b"the patch"
    wait_gone(made)  # removed once the stream ended
    assert not driver_run.exists()  # the node never writes where the driver does


def test_a_stream_stopped_half_way_leaves_nothing_on_the_node(tmp_path: Path) -> None:
    work = Work(1, "/task", b"", "/repo", str(tmp_path / "r"), RuntimeResult())
    before = transit_folders()
    stream = grade_on_node(writing_grade, work, TOKEN)
    next(stream)
    made = transit_folders() - before
    stream.close()  # as when its task is cancelled
    assert made
    wait_gone(made)
