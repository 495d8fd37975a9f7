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

Speed and memory (a results folder can hold 100,000 runs): one `os.scandir` per folder, each
document read with plain `os.read` and parsed at once; a task's runs are all below its folder,
so they are handed on together once the folder is read (`scan_tasks`, `select_tasks`), and
nothing but one task's runs stays in memory; the cyclic garbage collector is paused meanwhile.
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

from interpreters.report_links import RUN_FILES
from ssegrade.report import RunFolder, RunRecord, RunsMode, Selection, Selector, parse_run
from ssegrade.report.rules import Rules

__all__ = [
    "DOCUMENTS",
    "MAX_BYTES",
    "Loaded",
    "NoRuns",
    "RunFiles",
    "Scanned",
    "load_runs",
    "paused_gc",
    "read_document",
    "scan_runs",
    "scan_tasks",
    "select_runs",
    "select_tasks",
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


def _read(path: str, dir_fd: int | None = None) -> bytes | None:
    """The regular file's bytes; None when it does not exist. Raises `_Skip` otherwise."""
    try:
        fd = os.open(path, _FLAGS, dir_fd=dir_fd)
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


def read_document(path: str, dir_fd: int | None = None) -> bytes | None:
    """A document's bytes, read as the report reads a run's (never through a link, only a
    regular file of at most `MAX_BYTES`, without blocking on a FIFO): None when it does not
    exist; raises `ValueError` saying why it cannot be read otherwise. `path` is relative to
    the folder `dir_fd` when given."""
    try:
        return _read(path, dir_fd)
    except _Skip as why:
        raise ValueError(str(why)) from None


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


RunFiles = dict[str, frozenset[str]]
"""Run folder (below RESULTS) → which of the files a report links to (`RUN_FILES`) it holds:
each a regular file, or a folder where it should be one."""


def _is_dir(entry: os.DirEntry[str] | None) -> bool:
    """Whether the entry is a folder, not a link to one."""
    try:
        return entry is not None and entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_file(entry: os.DirEntry[str] | None) -> bool:
    """Whether the entry is a regular file, not a link to one."""
    try:
        return entry is not None and entry.is_file(follow_symlinks=False)
    except OSError:
        return False


class _Walker:
    __slots__ = ("files", "on_task", "pending", "ran", "scanned", "ssebench")

    def __init__(
        self,
        on_task: Callable[[list[RunRecord], RunFiles], None],
        scanned: Scanned,
        ssebench: bool = False,
        files: bool = False,
    ) -> None:
        self.on_task = on_task
        self.scanned = scanned
        self.ssebench = ssebench
        self.files = files
        self.pending: list[RunRecord] = []
        self.ran: RunFiles = {}

    def walk(self, path: str, parts: tuple[str, ...]) -> None:
        """Read the runs below `path`, handing each task's to `on_task` once it is read."""
        try:
            with os.scandir(path) as it:
                entries = {entry.name: entry for entry in it}
        except OSError as exc:
            self.scanned.warnings.append(f"{path}: skipped, cannot list the folder ({_why(exc)})")
            return
        if len(parts) >= 4 and any(name in entries for name in DOCUMENTS):
            self.run(path, parts, entries)
            return
        for name in sorted(name for name, entry in entries.items() if _is_dir(entry)):
            self.walk(f"{path}/{name}", (*parts, name))
            if not parts:  # a task's folder is read whole: its runs go on together
                self.flush()

    def flush(self) -> None:
        """Hand the runs read so far (one task's) on."""
        if self.pending or self.ran:
            pending, ran = self.pending, self.ran
            self.pending, self.ran = [], {}
            self.on_task(pending, ran)

    def run(self, path: str, parts: tuple[str, ...], entries: dict[str, os.DirEntry[str]]) -> None:
        """Read the run in `path`, a folder holding one of `DOCUMENTS` (of any kind)."""
        self.scanned.folders += 1
        for name in DOCUMENTS:
            if name not in entries or (self.ssebench and name != "summary.json"):
                # SSEBench's report stops at a folder of grades, but reads only summaries.
                continue
            file = f"{path}/{name}"
            try:
                data = _read(file)
            except _Skip as why:
                self.scanned.warnings.append(f"{file}: skipped, {why}")
                continue
            if data is None:
                continue
            if not data.strip():
                self.scanned.warnings.append(f"{file}: skipped, empty (a run not finished?)")
                continue
            folder = RunFolder(parts[0], "/".join(parts[1:-2]), parts[-2], parts[-1])
            parsed = parse_run(data, folder, ssebench=self.ssebench)
            if isinstance(parsed, Success):
                self.scanned.runs += 1
                record = parsed.unwrap()
                self.pending.append(record)
                if self.files:
                    self.ran[record.folder] = frozenset(
                        linked
                        for _, linked, is_folder in RUN_FILES
                        if (_is_dir if is_folder else _is_file)(entries.get(linked))
                    )
                break
            failed = parsed.failure()
            if failed.left_out is not None:
                left = self.scanned.left_out
                left[failed.left_out] = left.get(failed.left_out, 0) + 1
                break
            self.scanned.warnings.append(f"{file}: skipped, {failed.message}")


def scan_tasks(
    results: str | os.PathLike[str],
    on_task: Callable[[list[RunRecord], RunFiles], None],
    scanned: Scanned,
    rules: Rules = "ssegrade",
    files: bool = False,
) -> None:
    """Find every run folder under `results` and hand the runs read to `on_task` one task at a
    time, in task order (a task's runs are all below its folder), with, when `files` is asked,
    which of `RUN_FILES` each run folder holds.

    Unreadable files and folders are skipped, each with one warning line in `scanned`; runs a
    rule leaves out are counted, with one line per rule at the end. Raises `NoRuns` when
    `results` is not a folder or no run could be read.
    """
    root = os.fspath(results)
    if not os.path.isdir(root):
        what = "is not a folder" if os.path.exists(root) else "no such folder"
        raise NoRuns(f"{root}: {what}")
    walker = _Walker(on_task, scanned, rules == "ssebench", files)
    with paused_gc():
        walker.walk(root.rstrip("/") or "/", ())
    for rule, count in sorted(scanned.left_out.items()):
        scanned.warnings.append(f"left out {count} {_LEFT_OUT[rule]}")
    if not scanned.runs:
        if scanned.folders:
            raise NoRuns(f"{root}: none of the {scanned.folders} run folders could be read")
        raise NoRuns(f"{root}: no run folders found (expected {_LAYOUT})")


def scan_runs(
    results: str | os.PathLike[str],
    add: Callable[[RunRecord], None],
    scanned: Scanned,
    rules: Rules = "ssegrade",
) -> None:
    """As `scan_tasks`, handing each run read to `add`."""

    def each(records: list[RunRecord], _: RunFiles) -> None:
        for record in records:
            add(record)

    scan_tasks(results, each, scanned, rules)


def select_tasks(
    results: str | os.PathLike[str],
    on_task: Callable[[Selection, RunFiles], None],
    runs: RunsMode = "latest",
    errors_as_failures: bool = False,
    rules: Rules = "ssegrade",
    files: bool = False,
) -> Scanned:
    """As `scan_tasks`, handing on the selection of each task's runs (made on its own: every
    run of a (task, model, agent) is below the task's folder). Memory stays with one task."""
    scanned = Scanned()

    def select(records: list[RunRecord], ran: RunFiles) -> None:
        selector = Selector(runs, errors_as_failures, rules)
        for record in records:
            selector.add(record)
        on_task(selector.result(), ran)

    scan_tasks(results, select, scanned, rules, files)
    return scanned


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
