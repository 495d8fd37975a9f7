"""A container's staging folder taken into the run folder the driver holds, with the trust
rules of Ray's transit.

Interpreter layer (files). The container wrote its grading into `<staging>/run`; nothing
there is believed but what a run folder holds: the files are read by descriptor, never
through a link (a link, a device, a FIFO is not taken), walked as `interpreters.batch.transit`
walks a node's run folder, and written by `interpreters.batch.landing` (only a run folder's
entries, temporary names renamed once whole). At most `limit` bytes are taken in all; the
log paths of `checks.jsonl` are said as the driver's. The grade is the `result.json` that
arrived, read back from the held folder and checked against the result model.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import ValidationError

from interpreters.batch.landing import Arrival, TransitError
from interpreters.batch.transit import pieces
from interpreters.real.resultsfolder.private import DIR_FLAGS
from ssegrade import EvaluationResult
from ssegrade.batch import RESULTS_AT

__all__ = ["RESULT_LIMIT", "ingest"]

RESULT_LIMIT = 1 << 20
"""The most bytes of a `result.json` read."""
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def ingest(staging: Path, arrival: Arrival, there: str, limit: int) -> EvaluationResult | str:
    """Take the grading under `staging/run` into `arrival`'s run folder (at `there`), at
    most `limit` bytes; its result, or why there is none (one line; what arrived is then
    for the caller to clear)."""
    try:
        top = os.open(staging, DIR_FLAGS)
    except OSError as exc:
        return f"its staging folder cannot be opened: {exc.strerror}"
    try:
        try:
            run = os.open("run", DIR_FLAGS, dir_fd=top)
        except OSError as exc:
            return f"no results folder ({exc.strerror})"
        try:
            taken = 0
            for piece in pieces(run, RESULTS_AT, there):
                taken += len(piece.data)
                if taken > limit:
                    return f"its results hold more than {limit} bytes"
                arrival.take(piece)
        except (TransitError, OSError) as exc:
            return f"refused: {exc}"
        finally:
            os.close(run)
    finally:
        os.close(top)
    return _result(arrival)


def _result(arrival: Arrival) -> EvaluationResult | str:
    """The `result.json` that arrived, or why there is none."""
    try:
        fd = os.open("result.json", _READ, dir_fd=arrival.hold.folder)
    except FileNotFoundError:
        return "no result.json"
    except OSError as exc:
        return f"result.json: {exc.strerror}"
    try:
        data = os.read(fd, RESULT_LIMIT + 1)
    finally:
        os.close(fd)
    if len(data) > RESULT_LIMIT:
        return f"result.json holds more than {RESULT_LIMIT} bytes"
    try:
        return EvaluationResult.model_validate_json(data)
    except ValidationError as exc:
        return f"result.json is not a result ({exc.error_count()} errors)"
