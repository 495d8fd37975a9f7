"""The reading side of the report: find run folders under a results folder and read them.

Interpreter layer: this module touches the file system; the parsing and every rule live in the
pure `ssegrade.report`. A run folder is `RESULTS/<task>/<model…>/<agent>/<run-id>/` holding
`summary.json` or, failing that, `result.json`. The model may span several folder levels
(`openai/gpt-5`), so any folder at least four levels down that holds one of the two files is a
run; folders inside a run folder are not searched, and symbolic links (such as a `latest` link)
are never followed.

Speed matters (a results folder can hold 100,000 runs): one `os.scandir` per folder, files read
with plain `os.read`, and the cyclic garbage collector paused while records pile up.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from returns.result import Success

from ssegrade.report import RunFolder, RunRecord, parse_run

__all__ = [
    "DOCUMENTS",
    "Loaded",
    "NoRuns",
    "load_runs",
    "paused_gc",
]

DOCUMENTS = ("summary.json", "result.json")
"""The files that make a folder a run folder, in the order they are tried."""

_CHUNK = 1 << 16


class NoRuns(Exception):
    """Nothing to report: the folder is missing, or holds no readable run. One-line message."""


@dataclass
class Loaded:
    """What was read: the run records, and one warning line per file or folder skipped."""

    records: list[RunRecord] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    folders: int = 0


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
    """The file's bytes; None when it does not exist. Other errors propagate as OSError."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        first = os.read(fd, _CHUNK)
        if not first:
            return first
        chunks = [first]
        while chunk := os.read(fd, _CHUNK if len(chunks) == 1 else 1 << 20):
            chunks.append(chunk)
        return first if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


class _Reader:
    def __init__(self, loaded: Loaded) -> None:
        self.loaded = loaded

    def walk(self, path: str, parts: tuple[str, ...]) -> None:
        try:
            with os.scandir(path) as it:
                children = sorted((entry.name, entry.path) for entry in it if _is_real_dir(entry))
        except OSError as exc:
            self.loaded.warnings.append(f"{path}: skipped, cannot list the folder ({_why(exc)})")
            return
        for name, child in children:
            below = (*parts, name)
            if len(below) >= 4 and self.run(child, below):
                continue
            self.walk(child, below)

    def run(self, path: str, parts: tuple[str, ...]) -> bool:
        """Read the run in `path`; False when `path` holds neither document (not a run)."""
        folder = RunFolder.from_parts(parts)
        assert folder is not None  # callers pass at least four parts
        found = False
        for name in DOCUMENTS:
            file = f"{path}/{name}"
            try:
                data = _read(file)
            except OSError as exc:
                found = True
                self.loaded.warnings.append(f"{file}: skipped, cannot read it ({_why(exc)})")
                continue
            if data is None:
                continue
            found = True
            parsed = parse_run(data, folder)
            if isinstance(parsed, Success):
                self.loaded.records.append(parsed.unwrap())
                break
            self.loaded.warnings.append(f"{file}: skipped, {parsed.failure().message}")
        if found:
            self.loaded.folders += 1
        return found


def _is_real_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def load_runs(results: str | os.PathLike[str]) -> Loaded:
    """Find and read every run folder under `results`.

    Unreadable files and folders are skipped, each with one warning line naming it. Raises
    `NoRuns` when `results` is not a folder or no run could be read.
    """
    root = os.fspath(results)
    if not os.path.isdir(root):
        what = "is not a folder" if os.path.exists(root) else "no such folder"
        raise NoRuns(f"{root}: {what}")
    loaded = Loaded()
    with paused_gc():
        _Reader(loaded).walk(root.rstrip("/") or "/", ())
    if not loaded.records:
        layout = "<task>/<model…>/<agent>/<run-id>/summary.json (or result.json)"
        if loaded.folders:
            raise NoRuns(f"{root}: none of the {loaded.folders} run folders could be read")
        raise NoRuns(f"{root}: no run folders found (expected {layout})")
    return loaded
