"""A grading on a Ray node, and its run folder on its way back to the driver.

Interpreter layer (files), the node's side of the Ray engine (`interpreters.batch.
ray_engine`; the driver's side is `interpreters.batch.landing`). The nodes share no writable
storage with the driver: `grade_on_node` grades into a run folder of its own in the node's
temporary folder (a scratch folder its guardian removes if the worker dies), held with the
driver's token as the driver holds its own, then sends it back as `Piece`s, each file in
chunks of at most `CHUNK` bytes read from disk as they go, and last the `Done`. Only
`.lock` and `.incomplete` stay behind. The run folder is read through descriptors, never
through a link, and only regular files are sent. `checks.jsonl` names each log by its path:
the node's paths there are replaced by the driver's (`Work.results`).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Generator, Iterator
from dataclasses import dataclass, replace

from interpreters.batch.work import Done, GradeFunction, Work, run_work
from interpreters.real.resultsfolder.holding import INCOMPLETE, LOCK
from interpreters.real.resultsfolder.private import DIR_FLAGS
from interpreters.real.resultsfolder.runs import RunFolders
from interpreters.real.runner import release_scratch, scratch_folder
from interpreters.real.runner.processes import kill_owned

__all__ = [
    "CHECKS",
    "CHUNK",
    "IN_FLIGHT",
    "Piece",
    "grade_on_node",
    "pieces",
    "relocate_checks",
    "relocate_done",
]

CHUNK = 4 << 20
"""The most bytes of a file one piece carries."""
IN_FLIGHT = 4
"""The most pieces of one grading waiting for the driver (Ray's backpressure on the
stream): what one grading keeps in the object stores is bounded by `IN_FLIGHT * CHUNK`."""
CHECKS = "checks.jsonl"
_CHECKS_LIMIT = 64 << 20
"""A `checks.jsonl` up to this size has its log paths relocated (one record per check: far
below it); a bigger one travels as it is."""
_KEPT = frozenset({LOCK, INCOMPLETE})
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_MAX_DEPTH = 8


@dataclass(frozen=True, slots=True)
class Piece:
    """A part of one file of a run folder: `data` at its current end; `last` when the file
    is whole. `path` is `/`-separated, relative to the run folder; `mode` its permission
    bits."""

    path: str
    mode: int
    data: bytes
    last: bool


def grade_on_node(
    grade: GradeFunction, work: Work, token: str
) -> Generator[Piece | Done, None, None]:
    """Grade `work` here into a run folder of this node's, held with the driver's `token`,
    then yield its files as pieces and last the `Done`; the folder is removed when the
    stream ends, however it ends (by its guardian if this process dies)."""
    scratch = scratch_folder("transit")
    try:
        folders = RunFolders(scratch, token=token)
        try:
            held = folders.prepare(("run",))
            try:
                try:
                    done = run_work(grade, replace(work, results=str(held.path)))
                    done = relocate_done(done, str(held.path), work.results)
                finally:
                    kill_owned()  # what a script of it left (weak containment)
                yield from pieces(held.folder, str(held.path), work.results)
            finally:
                held.release()
        finally:
            folders.close()
        yield done
    finally:
        release_scratch(scratch)


def pieces(folder: int, here: str, there: str, chunk: int = CHUNK) -> Iterator[Piece]:
    """The regular files below the folder open as `folder` (at `here`), in pieces of at
    most `chunk` bytes, read as they are sent; `checks.jsonl` with the log paths under
    `here` moved under `there`. Links, other kinds of files and `.lock`/`.incomplete` stay."""
    yield from _walk(folder, (), here, there, chunk)


def _walk(
    folder: int, parts: tuple[str, ...], here: str, there: str, chunk: int
) -> Iterator[Piece]:
    for name in sorted(os.listdir(folder)):
        if not parts and name in _KEPT:
            continue
        try:
            info = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            continue
        path = "/".join((*parts, name))
        if stat.S_ISDIR(info.st_mode) and len(parts) < _MAX_DEPTH:
            child = os.open(name, DIR_FLAGS, dir_fd=folder)
            try:
                yield from _walk(child, (*parts, name), here, there, chunk)
            finally:
                os.close(child)
        elif stat.S_ISREG(info.st_mode):
            yield from _file(folder, name, path, (here, there), chunk)


def _file(
    folder: int, name: str, path: str, relocate: tuple[str, str], chunk: int
) -> Iterator[Piece]:
    fd = os.open(name, _FILE_FLAGS, dir_fd=folder)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return
        mode = stat.S_IMODE(info.st_mode) & 0o755
        if path == CHECKS and info.st_size <= _CHECKS_LIMIT:
            data = relocate_checks(_read_all(fd), *relocate)
            for start in range(0, max(len(data), 1), chunk):
                block = data[start : start + chunk]
                yield Piece(path, mode, block, start + chunk >= len(data))
            return
        block = os.read(fd, chunk)
        while True:
            following = os.read(fd, chunk) if len(block) == chunk else b""
            yield Piece(path, mode, block, not following)
            if not following:
                return
            block = following
    finally:
        os.close(fd)


def _read_all(fd: int) -> bytes:
    parts: list[bytes] = []
    while block := os.read(fd, 1 << 20):
        parts.append(block)
    return b"".join(parts)


def relocate_done(done: Done, here: str, there: str) -> Done:
    """`done` with each check record's `log_file` under the folder `here` moved under
    `there`, as `relocate_checks` does for `checks.jsonl`."""
    moved = tuple(
        replace(record, log_file=there + record.log_file[len(here) :])
        if record.log_file is not None
        and (record.log_file == here or record.log_file.startswith(f"{here}/"))
        else record
        for record in done.checks
    )
    return replace(done, checks=moved)


def relocate_checks(data: bytes, here: str, there: str) -> bytes:
    """`checks.jsonl` with each record's `log_file` under the folder `here` moved under
    `there`; every other byte as it was (a line that is not a record stays as it is)."""
    lines = data.split(b"\n")
    for index, line in enumerate(lines):
        with contextlib.suppress(ValueError, RecursionError):
            record = json.loads(line)
            if not isinstance(record, dict):
                continue
            log = record.get("log_file")
            if isinstance(log, str) and (log == here or log.startswith(f"{here}/")):
                record["log_file"] = there + log[len(here) :]
                lines[index] = json.dumps(record, separators=(",", ":")).encode()
    return b"\n".join(lines)
