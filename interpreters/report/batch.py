"""`ssegrade report DIR --batch`: a batch's summary, `DIR/batch.json`, printed readably.

Interpreter layer: reads `batch.json` as `interpreters.report.io` reads a run's documents
(never through a link, a regular file of bounded size, a FIFO cannot hang it), parses it with
the pure `ssegrade.report.batch`, and prints what the batch was (label, ssegrade's version,
engine, workers, containment, the JOBS file and its digest), when it ran, whether it was
interrupted, its counts per outcome, and the run folders of its `error` and `failed` jobs, each
with its first failure read from the run's `summary.json` (`-v`: the folders of every outcome).
A run folder is opened one part at a time below DIR, none of them a link. `--format json`
prints the file as it is, once it reads as a batch summary.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import TextIO

from returns.result import Failure, Success

from interpreters.report.io import read_document
from interpreters.report.text import Inert, Writer, wrap
from ssegrade.report import RunFolder, parse_run
from ssegrade.report.batch import OUTCOMES, BatchSummary, parse_batch

__all__ = ["BATCH", "BadBatch", "first_failure", "load_batch", "print_batch"]

BATCH = "batch.json"
"""The batch's summary, at the top of its results folder."""

_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class BadBatch(Exception):
    """The summary is missing or does not read as one; the message is one line."""


def load_batch(results: str) -> tuple[BatchSummary, bytes]:
    """The summary of the batch that wrote `results`, and the file's bytes. Raises `BadBatch`."""
    path = os.path.join(results, BATCH)
    try:
        data = read_document(path)
    except OSError as exc:
        raise BadBatch(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise BadBatch(f"{path}: {exc}") from None
    if data is None:
        raise BadBatch(f"{path}: no such file (ssegrade batch writes it when a batch ends)")
    parsed = parse_batch(data)
    if isinstance(parsed, Failure):
        raise BadBatch(f"{path}: not a batch summary ({parsed.failure().message})")
    return parsed.unwrap(), data


def _duration(span: timedelta) -> str:
    seconds = span.total_seconds()
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours} h {minutes:02d} min {secs:02d} s" if hours else f"{minutes} min {secs:02d} s"


def _open_below(root: str, parts: list[str]) -> int | None:
    """A descriptor of the folder `root/parts…`, each part opened below the last without
    following a link; None when a part is missing, a link or not a folder."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            below = os.open(part, _FOLDER_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = below
    except OSError:
        os.close(fd)
        return None
    return fd


def first_failure(results: str, folder: str) -> str:
    """The first failure (`error_msg`) the run folder's `summary.json` (or `result.json`)
    gives, or why there is none to say."""
    parts = folder.split("/")
    run = RunFolder.from_parts(parts)
    if run is None or any(p in ("", ".", "..") for p in parts):
        return "(not a run folder)"
    fd = _open_below(results, parts)
    if fd is None:
        return "(no such run folder)"
    try:
        for name in ("summary.json", "result.json"):
            try:
                data = read_document(name, dir_fd=fd)
            except (OSError, ValueError):
                continue
            if not data:
                continue
            parsed = parse_run(data, run)
            if isinstance(parsed, Success):
                return parsed.unwrap().patch.error_msg or "(no message)"
        return "(no readable summary)"
    finally:
        os.close(fd)


def print_batch(
    results: str, summary: BatchSummary, out: TextIO, verbose: bool = False, width: int = 80
) -> None:
    """Print the summary readably (see the module's docstring), inert on a terminal."""
    _print_batch(results, summary, Inert(out), verbose, width)


def _print_batch(
    results: str, summary: BatchSummary, out: Writer, verbose: bool, width: int
) -> None:
    label = f'"{summary.label}"' if summary.label else "(no label)"
    counts = ", ".join(f"{getattr(summary.counts, o)} {o}" for o in OUTCOMES)
    jobs = summary.jobs
    when = summary.started_at.isoformat(sep=" ").replace("+00:00", " UTC")
    until = summary.ended_at.isoformat(sep=" ").replace("+00:00", " UTC")
    lines = [
        f"Batch {label}, by ssegrade {summary.ssegrade}",
        f"  engine {summary.engine}, {summary.workers} worker{'s' if summary.workers != 1 else ''}"
        f", containment: {summary.containment}",
        f"  jobs: {jobs.path} ({jobs.count} job{'s' if jobs.count != 1 else ''})",
        f"  jobs sha256: {jobs.sha256}",
        f"  started {when}, ended {until}: {_duration(summary.duration)}",
        "  interrupted: " + ("yes (a re-run resumes it)" if summary.interrupted else "no"),
        f"  outcomes: {counts}",
    ]
    out.write("\n".join(line for text in lines for line in wrap(text, width)) + "\n")
    shown = OUTCOMES if verbose else ("error", "failed")
    for outcome in shown:
        folders = getattr(summary.runs, outcome)
        if not folders:
            continue
        out.write(f"\n{outcome.capitalize()} ({len(folders)}):\n")
        for folder in folders:
            if outcome in ("error", "failed"):
                text = f"  {folder}: {first_failure(results, folder)}"
            else:
                text = f"  {folder}"
            out.write("\n".join(wrap(text, width)) + "\n")
    if not verbose and any(getattr(summary.runs, o) for o in OUTCOMES if o not in shown):
        out.write("\n(-v lists the run folders of every outcome.)\n")
