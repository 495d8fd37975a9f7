"""What a container's grading recorded beside its grade, read from the run folder the batch
ingested: the check records (`checks.jsonl`) and the guard's report (`guard.json`).

Interpreter layer. A grading run on this machine hands these back in its `Graded` record; a
grading run in a container is another process's, so its records come through its run folder,
after the ingest's trust rules (no link followed, bounded sizes). Each file is read again
without following a link and within a byte budget; a line that is not a record is left out.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import TypeAdapter, ValidationError
from returns.pipeline import is_successful

from interpreters.real.files.reading import read_start
from interpreters.real.resultsfolder.writer import read_guard
from ssegrade.internal.effects import CheckRecord
from ssegrade.internal.guard_document import GuardReport

__all__ = ["MAX_CHECKS", "recorded"]

MAX_CHECKS = 8 << 20
"""The most of a `checks.jsonl` believed (more is left unread)."""

_RECORD = TypeAdapter(CheckRecord)


def recorded(results: Path) -> tuple[tuple[CheckRecord, ...], GuardReport | None]:
    """The records of `checks.jsonl` (the guard's own line left out: its report is read
    whole from `guard.json`) and the guard's report of the run folder `results`."""
    read = read_start(str(results / "checks.jsonl"), MAX_CHECKS)
    data = read.unwrap() if is_successful(read) else b""
    records: list[CheckRecord] = []
    for line in data.splitlines():
        try:
            record = _RECORD.validate_json(line)
        except ValidationError:
            continue
        if record.name != "guard":
            records.append(record)
    return tuple(records), read_guard(results)
