"""`batch.json`: one answer for the whole results folder, written by every batch command.

Interpreter layer (SPEC §14). When a batch command ends, or is interrupted, the folder's
summary is built again from what the folder holds: the summary written before (its commands
and jobs files; one that does not read as a summary is left behind, its runs are still
counted), and every run folder's `summary.json`, read with the batch's trust rules
(`RunFolders.graded`: ours, private, not being written). So a resume answers for the whole
folder, and a crash loses nothing that was graded: the next command counts it.
"""

from __future__ import annotations

import os

from returns.result import Success

from interpreters.real.resultsfolder.private import read_trusted
from interpreters.real.resultsfolder.runs import RunFolders
from ssegrade.batch import (
    BatchCommand,
    BatchSummary,
    JobsFile,
    batch_summary,
    retry_options,
    run_state,
)
from ssegrade.internal.result import ErrorKind
from ssegrade.report import parse_batch

__all__ = ["BATCH_SUMMARY", "previous_summary", "write_folder_summary"]

BATCH_SUMMARY = "batch.json"
"""The folder's summary, at its top."""

_MAX_SUMMARY = 256 << 20
"""The largest summary read back (a folder of a million runs stays under it)."""


def previous_summary(root: str) -> BatchSummary | None:
    """The summary the folder `root` holds, or None (none, not ours, a link, too big, or not
    one)."""
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = read_trusted(fd, BATCH_SUMMARY, _MAX_SUMMARY)
    finally:
        os.close(fd)
    parsed = parse_batch(data) if data else None
    return parsed.unwrap() if isinstance(parsed, Success) else None


def write_folder_summary(
    folders: RunFolders,
    command: BatchCommand,
    jobs: JobsFile,
    label: str | None,
    *,
    retry_kinds: frozenset[ErrorKind],
    max_attempts: int,
) -> BatchSummary:
    """Build the folder's summary once `command` graded `jobs` and write it whole (a link
    planted in its place is replaced, not followed); the summary written."""
    root = str(folders.root)
    states = [
        run_state(relative, doc, retry_kinds=retry_kinds, max_attempts=max_attempts)
        for relative, doc in folders.graded()
        if relative
    ]
    summary = batch_summary(
        previous=previous_summary(root),
        command=command,
        jobs=jobs,
        label=label,
        states=states,
        results=root,
        retry=retry_options(retry_kinds, max_attempts),
    )
    folders.write_top(BATCH_SUMMARY, summary.to_json())
    return summary
