"""The output of a script run: spooled in the scratch area, bounded in the log and in memory.

Interpreter layer (files). A script writes its stdout and stderr to unnamed files in a spool
folder (the scratch area, never the results disk). The log file keeps the first `LOG_HEAD` and
the last `LOG_TAIL` bytes of each stream; the answer keeps the first `KEPT_HEAD` and the last
`KEPT_TAIL`; a line `[... N bytes cut ...]` stands for what is left out, N counting every byte.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO

from ssegrade.internal.answers import ScriptResult
from ssegrade.internal.errors import SsegradeError

__all__ = [
    "KEPT_HEAD",
    "KEPT_TAIL",
    "LOG_HEAD",
    "LOG_TAIL",
    "OUTPUT_KEPT",
    "LogWriteError",
    "bounded",
    "ends_with_newline",
    "write_log",
]

LOG_HEAD = 1 << 20
LOG_TAIL = 4 << 20
KEPT_HEAD = 64 << 10
KEPT_TAIL = (1 << 20) - KEPT_HEAD
OUTPUT_KEPT = KEPT_HEAD + KEPT_TAIL
"""Bytes of stdout and of stderr an answer keeps at most (besides the cut line)."""


class LogWriteError(SsegradeError, OSError):
    """The log file of a script run could not be written (e.g. the results disk is full);
    `result` is how the script ended all the same, when it ran (`run_script` sets it)."""

    result: ScriptResult | None = None


def cut_line(count: int) -> bytes:
    """The line that stands for `count` bytes left out."""
    return f"[... {count} bytes cut ...]\n".encode()


def bounded(stream: IO[bytes], head: int, tail: int) -> bytes:
    """The first `head` and last `tail` bytes of `stream`, with a cut line between them when
    some were left out. Cuts never split a UTF-8 sequence; the bytes dropped for that are
    counted in the cut line too."""
    size = stream.seek(0, os.SEEK_END)
    stream.seek(0)
    if size <= head + tail:
        return stream.read()
    first = _whole_head(stream.read(head))
    stream.seek(size - tail)
    last = stream.read(tail)
    skip = 0
    while skip < 3 and skip < len(last) and last[skip] & 0xC0 == 0x80:
        skip += 1  # do not start in the middle of a UTF-8 sequence
    kept_head, kept_tail = first, last[skip:]
    cut = size - len(kept_head) - len(kept_tail)
    joint = b"" if not kept_head or kept_head.endswith(b"\n") else b"\n"
    return kept_head + joint + cut_line(cut) + kept_tail


def _whole_head(data: bytes) -> bytes:
    """`data` without a UTF-8 sequence cut short at its end."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:
            continue  # a continuation byte: look for its lead byte
        if byte >= 0xC0:
            needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data[:-back] if needed > back else data
        return data
    return data


def ends_with_newline(stream: IO[bytes]) -> bool:
    """Whether `stream` is empty or its last byte is a newline (leaves it at its end)."""
    size = stream.seek(0, os.SEEK_END)
    if size == 0:
        return True
    stream.seek(-1, os.SEEK_END)
    last = stream.read(1)
    stream.seek(0, os.SEEK_END)
    return last == b"\n"


def write_log(log_path: Path, header: list[str], out: IO[bytes], err: IO[bytes]) -> str:
    """Write the log file: the header, then each stream bounded; answers its path. Raises
    `LogWriteError` when it cannot be written (and removes what was written of it)."""
    made = False
    try:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        # Never through a link planted where the log goes (the folder itself is ours).
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(log_path, flags, 0o644)
        made = True
        with os.fdopen(fd, "wb") as log:
            os.fchmod(log.fileno(), 0o644)
            log.write(("\n".join(header) + "\n").encode(errors="replace"))
            for name, stream in (("stdout", out), ("stderr", err)):
                size = stream.seek(0, os.SEEK_END)
                log.write(f"--- {name} ({size} bytes) ---\n".encode())
                text = bounded(stream, LOG_HEAD, LOG_TAIL)
                log.write(text)
                if text and not text.endswith(b"\n"):
                    log.write(b"\n")
            log.write(b"--- end ---\n")
    except OSError as exc:
        if made:
            with contextlib.suppress(OSError):
                os.unlink(log_path)
        reason = exc.strerror or str(exc)
        raise LogWriteError(f"cannot write the log {log_path}: {reason}") from exc
    return os.fspath(log_path)
