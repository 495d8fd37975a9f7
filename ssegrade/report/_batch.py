"""A results folder's summary, `batch.json`, as `ssegrade report DIR --batch` reads it (SPEC §14).

Pure core: `parse_batch` takes the file's bytes; finding and reading the file safely is the
interpreter's job. The shape is the one `ssegrade batch` writes, the model of
`ssegrade.batch._summary`: one answer for the whole folder (its commands, jobs files, and
every run by the outcome it carries). Read as a reader should: keys a later version adds are
ignored, but every key of the model must be there with its type, and each count must be its
list's length.
"""

from __future__ import annotations

from pydantic import ValidationError
from returns.result import Failure, Result, Success

from ssegrade.batch._summary import OUTCOMES, BatchSummary
from ssegrade.report._summary import ReadError

__all__ = ["OUTCOMES", "BatchSummary", "parse_batch"]


def parse_batch(data: bytes) -> Result[BatchSummary, ReadError]:
    """Read `batch.json`'s bytes; the error is one line naming the first key at fault.

    >>> run = (b'{"ssegrade": "1.0", "engine": "local", "workers": 2, "containment": "full",'
    ...        b' "jobs": "jobs.jsonl", "started_at": "2026-11-30T10:00:00Z",'
    ...        b' "ended_at": "2026-11-30T10:00:42Z", "interrupted": false}')
    >>> doc = (b'{"label": null, "ssegrade": ["1.0"], "engines": ["local"],'
    ...        b' "containment": ["full"], "jobs": [], "commands": [' + run + b'],'
    ...        b' "started_at": "2026-11-30T10:00:00Z", "ended_at": "2026-11-30T10:00:42Z",'
    ...        b' "interrupted": false, "counts": {"passed": 0, "flagged": 0, "failed": 0,'
    ...        b' "error": 1, "not_graded": 0}, "runs": {"passed": [], "flagged": [],'
    ...        b' "failed": [], "error": ["t/m/a/r1"], "not_graded": []}}')
    >>> summary = parse_batch(doc).unwrap()
    >>> summary.runs.error, summary.duration.seconds
    (('t/m/a/r1',), 42)
    >>> parse_batch(doc.replace(b'"workers": 2', b'"workers": 0')).failure().message
    'commands.0.workers: Input should be greater than or equal to 1'
    >>> parse_batch(b"[]").failure().message
    'Input should be an object'
    """
    try:
        return Success(BatchSummary.model_validate_json(data, strict=False, extra="ignore"))
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in err["loc"])
        message = str(err["msg"]).splitlines()[0] if err["msg"] else "invalid"
        message = message.removeprefix("Value error, ")
        return Failure(ReadError(f"{where}: {message}" if where else message))
