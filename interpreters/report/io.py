"""The reading side of the report: run folders under a results folder, one task at a time.

Interpreter layer: the files are found and read by `interpreters.report.reader` (safely: no
link followed, only regular files of bounded size, no FIFO waited on), in a process of its own
when the command asks (`parallel`), as `find | xargs cat` reads in a process beside the one
that uses what it reads; this module parses each document with the pure `ssegrade.report`
and hands each task's runs on together, once its folder is read (`scan_tasks`,
`select_tasks`): a task's runs are all below its folder, so memory holds one task's runs.

A run folder is `RESULTS/<task>/<model…>/<agent>/<run-id>/` holding `summary.json` or, when
that is missing or does not read, `result.json` (and the patch guard's `guard.json` beside it,
whose flags the run then carries). The model may span several folder levels
(`openai/gpt-5`), so any folder at least four levels down that holds one of the two files is a
run; folders inside a run folder are not searched, and symbolic links (such as SSEBench's
`latest` link beside the runs) are never followed.

Under SSEBench's rules (`--rules ssebench`) only `summary.json` makes a run, as SSEBench's
report reads them; a folder holding only `result.json` is not searched further, nor read. Runs
the rules leave out (folder mismatch, `ssegrade verify` runs) are counted, and said in one
line each at the end, not warned of one by one. The cyclic garbage collector is paused while
runs are read (records hold no cycles).
"""

from __future__ import annotations

import fcntl
import gc
import os
import subprocess
import sys
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

from returns.result import Success

from interpreters.report.reader import (
    DOCUMENTS,
    MAX_BYTES,
    Counted,
    Document,
    Event,
    Skip,
    TaskDone,
    guard_beside,
    read,
    read_frames,
    walk,
)
from ssegrade.guard import flag_kinds, listed_kinds
from ssegrade.internal.errors import SsegradeError
from ssegrade.report import Rules, RunFolder, RunRecord, RunsMode, Selection, Selector, parse_run

__all__ = [
    "DOCUMENTS",
    "MAX_BYTES",
    "Loaded",
    "NoRuns",
    "RunFiles",
    "Scanned",
    "load_runs",
    "parallel_reading",
    "paused_gc",
    "read_document",
    "scan_runs",
    "scan_tasks",
    "select_runs",
    "select_tasks",
]

_LAYOUT = "<task>/<model…>/<agent>/<run-id>/summary.json (or result.json)"


class NoRuns(SsegradeError):
    """Nothing to report: the folder is missing, or holds no readable run. One-line message."""


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


def read_document(path: str, dir_fd: int | None = None) -> bytes | None:
    """A document's bytes, read as the report reads a run's (never through a link, only a
    regular file of at most `MAX_BYTES`, without blocking on a FIFO): None when it does not
    exist; raises `ValueError` saying why it cannot be read otherwise. `path` is relative to
    the folder `dir_fd` when given."""
    try:
        return read(path, dir_fd)
    except Skip as why:
        raise ValueError(str(why)) from None


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


RunFiles = dict[str, frozenset[str]]
"""Run folder (below RESULTS) → which of the files a report links to (`RUN_FILES`) it holds:
each a regular file, or a folder where it should be one."""


class _Runs:
    """Parses the documents the reader yields and hands each task's runs on."""

    __slots__ = ("on_task", "pending", "ran", "root", "scanned", "ssebench")

    def __init__(
        self,
        root: str,
        on_task: Callable[[list[RunRecord], RunFiles], None],
        scanned: Scanned,
        ssebench: bool,
    ) -> None:
        self.root = root
        self.on_task = on_task
        self.scanned = scanned
        self.ssebench = ssebench
        self.pending: list[RunRecord] = []
        self.ran: RunFiles = {}

    def take(self, events: Iterator[Event]) -> None:
        for event in events:
            if isinstance(event, Document):
                self.document(event)
            elif isinstance(event, TaskDone):
                self.flush()
            elif isinstance(event, Counted):
                self.scanned.folders = event.folders
            else:
                self.scanned.warnings.append(event)
        self.flush()

    def flush(self) -> None:
        """Hand the runs read so far (one task's) on."""
        if self.pending:
            pending, ran = self.pending, self.ran
            self.pending, self.ran = [], {}
            self.on_task(pending, ran)

    def document(self, doc: Document) -> None:
        parts = doc.folder.split("/")
        folder = RunFolder(parts[0], "/".join(parts[1:-2]), parts[-2], parts[-1])
        name, data, guard = doc.name, doc.data, doc.guard
        while True:
            parsed = parse_run(data, folder, ssebench=self.ssebench)
            if isinstance(parsed, Success):
                self.scanned.runs += 1
                record = parsed.unwrap()
                if name == "result.json" and record.flags is None and guard is not None:
                    record = record._replace(flags=flag_kinds(guard), listed=listed_kinds(guard))
                self.pending.append(record)
                if doc.files is not None:
                    self.ran[record.folder] = doc.files
                return
            failed = parsed.failure()
            if failed.left_out is not None:
                left = self.scanned.left_out
                left[failed.left_out] = left.get(failed.left_out, 0) + 1
                return
            file = f"{self.root}/{doc.folder}/{name}"
            self.scanned.warnings.append(f"{file}: skipped, {failed.message}")
            if name != "summary.json" or self.ssebench:
                return
            # A summary that does not read: the grade beside it, as when it is missing.
            name = "result.json"
            file = f"{self.root}/{doc.folder}/{name}"
            try:
                beside = read(file)
            except Skip as why:
                self.scanned.warnings.append(f"{file}: skipped, {why}")
                return
            if beside is None:
                return
            if not beside.strip():
                self.scanned.warnings.append(f"{file}: skipped, empty (a run not finished?)")
                return
            data = beside
            guard = guard_beside(f"{self.root}/{doc.folder}")


def _child(root: str, ssebench: bool, files: bool) -> subprocess.Popen[bytes]:
    """The reader, started as a process of its own (see `report_reader.main`)."""
    flags = ("s" if ssebench else "") + ("f" if files else "") or "-"
    code = "from interpreters.report.reader import main; main()"
    return subprocess.Popen(
        # -P: the current folder (it may be a results folder) is not where modules are found.
        [sys.executable, "-P", "-c", code, root, flags],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=1 << 20,
    )


def _events(root: str, ssebench: bool, files: bool, parallel: bool) -> Generator[Event, None, None]:
    if not parallel:
        yield from walk(root, ssebench, files)
        return
    child = _child(root, ssebench, files)
    assert child.stdout is not None
    assert child.stderr is not None
    with suppress(OSError, AttributeError):
        # A pipe of 1 MiB rather than 64 KiB: the reader runs ahead instead of waiting for
        # the report to take each 64 KiB (the system's ceiling may be lower; then it is kept).
        fcntl.fcntl(child.stdout.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
    try:
        yield from read_frames(child.stdout)
    except EOFError:
        child.wait()
        why = child.stderr.read().decode(errors="replace").strip().splitlines()
        reason = why[-1] if why else "no reason given"
        raise NoRuns(f"{root}: could not be read ({reason})") from None
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        child.stdout.close()
        child.stderr.close()


def parallel_reading() -> bool:
    """Whether reading in a process of its own can go on beside the report (two CPUs)."""
    try:
        return len(os.sched_getaffinity(0)) > 1
    except (AttributeError, OSError):
        return (os.cpu_count() or 1) > 1


def scan_tasks(
    results: str | os.PathLike[str],
    on_task: Callable[[list[RunRecord], RunFiles], None],
    scanned: Scanned,
    rules: Rules = "ssegrade",
    files: bool = False,
    parallel: bool = False,
) -> None:
    """Find every run folder under `results` and hand the runs read to `on_task` one task at a
    time, in task order (a task's runs are all below its folder), with, when `files` is asked,
    which of `RUN_FILES` each run folder holds; `parallel`: read in a process of its own.

    Unreadable files and folders are skipped, each with one warning line in `scanned`; runs a
    rule leaves out are counted, with one line per rule at the end. Raises `NoRuns` when
    `results` is not a folder or no run could be read.
    """
    root = os.fspath(results)
    if not os.path.isdir(root):
        what = "is not a folder" if os.path.exists(root) else "no such folder"
        raise NoRuns(f"{root}: {what}")
    runs = _Runs(root.rstrip("/") or "/", on_task, scanned, rules == "ssebench")
    events = _events(root, rules == "ssebench", files, parallel)
    try:
        with paused_gc():
            runs.take(events)
    finally:
        events.close()  # a reading process still running is stopped
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
    parallel: bool = False,
) -> Scanned:
    """As `scan_tasks`, handing on the selection of each task's runs (made on its own: every
    run of a (task, model, agent) is below the task's folder). Memory stays with one task."""
    scanned = Scanned()

    def select(records: list[RunRecord], ran: RunFiles) -> None:
        selector = Selector(runs, errors_as_failures, rules)
        for record in records:
            selector.add(record)
        on_task(selector.result(), ran)

    scan_tasks(results, select, scanned, rules, files, parallel)
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
