"""How the daemon's answers travel (SPEC §9): the grading effects' answers as reply documents
and back, and patches as JSON.

Pure core. A bencher reply is the `ScriptResult` the action answered, less what the listener
may not see; a `PrepareGrading` answer travels as one of three outcomes; patch bytes travel as
text, with their exact bytes in base64 when they are not UTF-8.
"""

from __future__ import annotations

import base64
from dataclasses import replace

from returns.result import Failure, Result, Success

from ssegrade.internal.effects import ApplyError, CaptureError, Prepared, PrepareError, ScriptResult
from ssegrade.protocol._documents import (
    DiffText,
    Listener,
    PrepareApplyFailed,
    PrepareCaptureFailed,
    PrepareSucceeded,
)

__all__ = [
    "bencher_reply",
    "decode_patch",
    "encode_patch",
    "prepare_reply",
    "prepared_result",
]


def bencher_reply(result: ScriptResult, listener: Listener) -> ScriptResult:
    """The bencher reply a listener gets: the action's result, without the daemon's log file
    for an agent-facing listener.

    >>> bencher_reply(ScriptResult(code=1, stderr="boom", log_file="/r/logs/x.log"),
    ...               "agent").log_file is None
    True
    """
    return result if listener == "admin" else replace(result, log_file=None)


def prepare_reply(
    prepared: Result[Prepared, PrepareError],
) -> PrepareSucceeded | PrepareApplyFailed | PrepareCaptureFailed:
    """A `PrepareGrading` answer as a reply document.

    >>> prepare_reply(Success(Prepared(patch_bytes=10, empty=False))).outcome
    'prepared'
    >>> prepare_reply(Failure(CaptureError("unreadable"))).message
    'unreadable'
    """
    if isinstance(prepared, Success):
        done = prepared.unwrap()
        return PrepareSucceeded(
            empty=done.empty,
            patch_bytes=done.patch_bytes,
            left_out=list(done.left_out),
            log_file=done.log_file,
        )
    error = prepared.failure()
    if isinstance(error, ApplyError):
        return PrepareApplyFailed(log=error.log, log_file=error.log_file)
    return PrepareCaptureFailed(message=error.message)


def prepared_result(
    reply: PrepareSucceeded | PrepareApplyFailed | PrepareCaptureFailed,
) -> Result[Prepared, PrepareError]:
    """A reply document as the `PrepareGrading` answer it carries.

    >>> prepared_result(prepare_reply(Failure(ApplyError("does not apply", "a.log"))))
    <Failure: ApplyError(log='does not apply', log_file='a.log')>
    """
    match reply:
        case PrepareSucceeded(empty=empty, patch_bytes=size, left_out=left, log_file=log):
            return Success(Prepared(size, empty, left_out=tuple(left), log_file=log))
        case PrepareApplyFailed(log=log, log_file=log_file):
            return Failure(ApplyError(log, log_file))
        case PrepareCaptureFailed(message=message):
            return Failure(CaptureError(message))


def encode_patch(data: bytes) -> DiffText:
    """Patch bytes as JSON: the text, and the exact bytes in base64 when they are not UTF-8.

    >>> encode_patch(b"diff --git a/x b/x\\n")
    DiffText(diff='diff --git a/x b/x\\n', base64=None)
    >>> encode_patch(b"\\xff")
    DiffText(diff='\ufffd', base64='/w==')
    """
    try:
        return DiffText(diff=data.decode("utf-8"))
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
        return DiffText(diff=text, base64=base64.b64encode(data).decode("ascii"))


def decode_patch(text: DiffText) -> bytes:
    """The bytes of a patch sent as JSON.

    >>> decode_patch(encode_patch(b"\\xff\\x00a")) == b"\\xff\\x00a"
    True
    """
    if text.base64 is not None:
        return base64.b64decode(text.base64, validate=True)
    return text.diff.encode("utf-8")
