"""The reading side of the report: find run folders under a results folder and stream them.

Interpreter layer: this module touches the file system; the parsing and every rule live in the
pure `ssegrade.report`. A run folder is `RESULTS/<task>/<model…>/<agent>/<run-id>/` holding
`summary.json` or, failing that, `result.json`. The model may span several folder levels
(`openai/gpt-5`), so any folder at least four levels down that holds one of the two files is a
run; folders inside a run folder are not searched, and symbolic links (such as SSEBench's
`latest` link beside the runs) are never followed.

Under SSEBench's rules (`--rules ssebench`) only `summary.json` makes a run, as SSEBench's
report reads them; a folder holding only `result.json` is not searched further, nor read. Runs
the rules leave out (folder mismatch, `ssegrade verify` runs) are counted, and said in one
line each at the end, not warned of one by one.

The files of a run folder may have been written by a hostile agent: each is opened without
following a final symbolic link and without blocking (a FIFO cannot hang the report), and is
read only when it is a regular file of at most `MAX_BYTES`.

Speed and memory (a results folder can hold 100,000 runs): one `os.scandir` per folder above
the runs, each document read with plain `os.read` and handed to a callback at once, so nothing
but what the selection keeps stays in memory; the cyclic garbage collector is paused meanwhile.
"""

from __future__ import annotations

import errno
import gc
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from returns.result import Success

from ssegrade.report import RunFolder, RunRecord, RunsMode, Selection, Selector, parse_run
from ssegrade.report.rules import Rules

__all__ = [
    "DOCUMENTS",
    "MAX_BYTES",
    "Loaded",
    "NoRuns",
    "Scanned",
    "load_runs",
    "paused_gc",
    "scan_runs",
    "select_runs",
]

DOCUMENTS = ("summary.json", "result.json")
"""The files that make a folder a run folder, in the order they are tried."""

MAX_BYTES = 64 << 20
"""A larger document is skipped with a warning (a summary is a few KiB; logs are cut)."""

_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
_LAYOUT = "<task>/<model…>/<agent>/<run-id>/summary.json (or result.json)"


class NoRuns(Exception):
    """Nothing to report: the folder is missing, or holds no readable run. One-line message."""


class _Skip(Exception):
    """One document cannot be read; the message says why."""


_LEFT_OUT = {
    "folder": "run folders whose document names another task, model or agent than the folder",
    "verification": "runs of ssegrade verify (<task>/<empty|reference>/<n>)",
}


@dataclass
class Scanned:
    """What a scan saw: one warning line per file or folder skipped, the run folders found,
    the runs read, and the runs left out by a rule (by rule)."""

    warnings: list[str] = field(default_factory=list)
    folders: int = 0
    runs: int = 0
    left_out: dict[str, int] = field(default_factory=dict)


@dataclass
class Loaded(Scanned):
    """A scan that kept every record (for embedders and tests; the command streams)."""

    records: list[RunRecord] = field(default_factory=list)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector (records hold no cycles; scanning them is waste)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _read(path: str) -> bytes | None:
    """The regular file's bytes; None when it does not exist. Raises `_Skip` otherwise."""
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _Skip("it is a symbolic link") from None
        if exc.errno == errno.ENOTDIR:
            return None
        raise _Skip(f"cannot read it ({_why(exc)})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _Skip("not a regular file")
        if info.st_size > MAX_BYTES:
            raise _Skip(f"larger than {MAX_BYTES >> 20} MiB")
        first = os.read(fd, info.st_size + 1)
        if len(first) <= info.st_size:
            return first
        # The file grew since fstat: read on, within the limit.
        chunks = [first]
        size = len(first)
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_BYTES:
                raise _Skip(f"larger than {MAX_BYTES >> 20} MiB")
        return b"".join(chunks)
    except OSError as exc:
        raise _Skip(f"cannot read it ({_why(exc)})") from None
    finally:
        os.close(fd)


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _is_real_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


class _Walker:
    __slots__ = ("add", "scanned", "ssebench")

    def __init__(
        self, add: Callable[[RunRecord], None], scanned: Scanned, ssebench: bool = False
    ) -> None:
        self.add = add
        self.scanned = scanned
        self.ssebench = ssebench

    def walk(self, path: str, parts: tuple[str, ...]) -> None:
        try:
            with os.scandir(path) as it:
                children = sorted(entry.name for entry in it if _is_real_dir(entry))
        except OSError as exc:
            self.scanned.warnings.append(f"{path}: skipped, cannot list the folder ({_why(exc)})")
            return
        deep = len(parts) >= 3
        for name in children:
            child = f"{path}/{name}"
            below = (*parts, name)
            if deep and self.run(child, below):
                continue
            self.walk(child, below)

    def run(self, path: str, parts: tuple[str, ...]) -> bool:
        """Read the run in `path`; False when `path` holds neither document (not a run)."""
        found = False
        for name in DOCUMENTS:
            file = f"{path}/{name}"
            if self.ssebench and name != "summary.json":
                # SSEBench's report stops at a folder of grades, but reads only summaries.
                found = found or os.path.lexists(file)
                continue
            try:
                data = _read(file)
            except _Skip as why:
                found = True
                self.scanned.warnings.append(f"{file}: skipped, {why}")
                continue
            if data is None:
                continue
            found = True
            if not data.strip():
                self.scanned.warnings.append(f"{file}: skipped, empty (a run not finished?)")
                continue
            folder = RunFolder(parts[0], "/".join(parts[1:-2]), parts[-2], parts[-1])
            parsed = parse_run(data, folder, ssebench=self.ssebench)
            if isinstance(parsed, Success):
                self.scanned.runs += 1
                self.add(parsed.unwrap())
                break
            failed = parsed.failure()
            if failed.left_out is not None:
                left = self.scanned.left_out
                left[failed.left_out] = left.get(failed.left_out, 0) + 1
                break
            self.scanned.warnings.append(f"{file}: skipped, {failed.message}")
        if found:
            self.scanned.folders += 1
        return found


def scan_runs(
    results: str | os.PathLike[str],
    add: Callable[[RunRecord], None],
    scanned: Scanned,
    rules: Rules = "ssegrade",
) -> None:
    """Find every run folder under `results` and hand each run read to `add`, as it is read.

    Unreadable files and folders are skipped, each with one warning line in `scanned`; runs a
    rule leaves out are counted, with one line per rule at the end. Raises `NoRuns` when
    `results` is not a folder or no run could be read.
    """
    root = os.fspath(results)
    if not os.path.isdir(root):
        what = "is not a folder" if os.path.exists(root) else "no such folder"
        raise NoRuns(f"{root}: {what}")
    with paused_gc():
        _Walker(add, scanned, rules == "ssebench").walk(root.rstrip("/") or "/", ())
    for rule, count in sorted(scanned.left_out.items()):
        scanned.warnings.append(f"left out {count} {_LEFT_OUT[rule]}")
    if not scanned.runs:
        if scanned.folders:
            raise NoRuns(f"{root}: none of the {scanned.folders} run folders could be read")
        raise NoRuns(f"{root}: no run folders found (expected {_LAYOUT})")


def select_runs(
    results: str | os.PathLike[str],
    runs: RunsMode = "latest",
    errors_as_failures: bool = False,
    rules: Rules = "ssegrade",
) -> tuple[Selection, Scanned]:
    """Stream every run under `results` through the selection, under `rules`; memory stays
    with what the selection keeps. Raises `NoRuns` as `scan_runs` does."""
    selector = Selector(runs, errors_as_failures, rules)
    scanned = Scanned()
    scan_runs(results, selector.add, scanned, rules)
    return selector.result(), scanned


def load_runs(results: str | os.PathLike[str]) -> Loaded:
    """Find and read every run folder under `results`, keeping every record."""
    loaded = Loaded()
    scan_runs(results, loaded.records.append, loaded)
    return loaded
