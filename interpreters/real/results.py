"""What the evaluator writes into the results folder (interpreter layer): progress lines,
`checks.jsonl`, `logs/notes.log`, the archive of the source tree and `result.json`.

Every write is safe against links planted in the results folder: appends never follow one,
whole files are written atomically. The archive never holds the grade back: it is written by a
child process, started at the latest when grading asks for it, and waited for only once
`result.json` is written.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, assert_never

from returns.pipeline import is_successful
from returns.result import Failure, Result, Success

from interpreters.real import files
from ssegrade import (
    Archive,
    ArchiveError,
    CheckFinished,
    CheckRecord,
    CheckStarted,
    Effect,
    Notify,
    TimeLimitReached,
    WriteResult,
)
from ssegrade.program import GradingInterrupted

__all__ = ["ARCHIVE_NAME", "ResultsWriter", "archive_whole", "check_label", "describe_check"]

ARCHIVE_NAME = "source.tar.gz"


def check_label(name: str, poc: str | None) -> str:
    """How progress lines name a check: `build`, `poc /ssebench/pocs/poc.go`, …"""
    return f"poc {poc}" if poc else name


def describe_check(record: CheckRecord) -> str:
    """One progress line for a finished check: status, seconds, exit code, log file."""
    log = f"; log {record.log_file}" if record.log_file else ""
    if record.name == "prepare":
        applies = "ready" if record.passed else "does not apply to the grading repo"
        left = f"; {len(record.left_out)} paths left out" if record.left_out else ""
        return f"patch: {applies}{left}{log}"
    verdict = "passed" if record.passed else "FAILED"
    how = " (killed at its time limit)" if record.killed else ""
    code = "" if record.passed else f", exit {record.exit_code}"
    return (
        f"{check_label(record.name, record.poc)}: {verdict}{how} ({record.seconds:.1f}s{code}{log})"
    )


Reported = Archive | CheckStarted | CheckFinished | Notify | WriteResult


def _append(path: Path, text: str) -> None:
    """Append `text` to `path`, never through a link planted in its place."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o644)
    try:
        data = text.encode(errors="replace")
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)


@dataclass(slots=True)
class ResultsWriter:
    """Answers the grading effects that stay with the evaluator: the archive of the source tree,
    `checks.jsonl` and progress lines, notes, and `result.json`."""

    source: Path | None
    results: Path
    say: Callable[[str], None] = print
    started: Callable[[str], None] | None = None
    """Shows that a check began (e.g. a live elapsed time); default: a line through `say`."""
    check: Callable[[], None] = lambda: None
    """Raises `TimeLimitReached` once the grading's deadline has passed: the archive stops."""
    _archive: files.ArchiveProcess | None = field(init=False, default=None)
    _asked: bool = field(init=False, default=False)
    """Whether grading asked for the archive (`Archive` answered that it is under way)."""

    def note(self, message: str) -> None:
        """Append a line to `logs/notes.log`."""
        _append(self.results / "logs" / "notes.log", f"{message}\n")

    def _not_archived(self, why: object) -> None:
        message = f"{ARCHIVE_NAME} not written: {why}"
        self.say(message)
        self.note(message)

    def start_archive(self) -> None:
        """Start writing the archive of the source tree in a child process, unless one is under
        way or there is no source tree; nothing when it cannot start (`Archive` then writes it
        itself). Only for a tree that no longer changes."""
        if self.source is not None and self._archive is None:
            with contextlib.suppress(OSError):
                self._archive = files.start_archive(self.source, self.results / ARCHIVE_NAME)

    def finish_archive(self) -> None:
        """Wait for the archive under way, if any, until the deadline; a failure is noted. An
        archive grading did not ask for (it reached its time limit first) is stopped: the
        grading program noted why."""
        started, self._archive = self._archive, None
        if started is None:
            return
        if not self._asked:
            started.stop()
            return
        try:
            finished = started.wait(self.check)
        except (TimeLimitReached, GradingInterrupted) as stopped:  # the grade is written
            self._not_archived(stopped)
            return
        if not is_successful(finished):
            self._not_archived(finished.failure())

    def stop_archive(self) -> None:
        """Stop the archive under way, if any, leaving nothing of it."""
        started, self._archive = self._archive, None
        if started is not None:
            started.stop()
            if self._asked:
                self._not_archived("grading ended before it was finished")

    def __call__(self, effect: Effect[Any]) -> object:
        """Answer `Archive` (the archive under way: finished once `result.json` is written),
        `CheckStarted`, `CheckFinished`, `Notify` or `WriteResult`."""
        if not isinstance(effect, Reported):
            raise TypeError(f"not an effect the evaluator answers locally: {effect!r}")
        match effect:
            case Archive():
                if self.source is None:  # a recorded patch: no tree to archive, nothing to say
                    return Success(None)
                self.start_archive()
                if self._archive is None:  # no child process: written here, before the grade
                    return archive_whole(self.source, self.results / ARCHIVE_NAME, self.check)
                self._asked = True
                return Success(None)  # under way; waited for once result.json is written
            case CheckStarted(name=name, poc=poc):
                label = check_label(name, poc)
                (self.started or self.say)(f"{label}: running…")
                return None
            case CheckFinished(record=record):
                line = json.dumps(asdict(record), separators=(",", ":")) + "\n"
                _append(self.results / "checks.jsonl", line)
                self.say(describe_check(record))
                return None
            case Notify(message=message):
                self.say(message)
                self.note(message)
                return None
            case WriteResult(result=result):
                try:
                    files.atomic_write(self.results / "result.json", result.to_json())
                except BaseException:
                    self.stop_archive()
                    raise
                self.finish_archive()
                return None
            case _:
                assert_never(effect)


def archive_whole(
    source: Path, dest: Path, check: Callable[[], None]
) -> Result[None, ArchiveError]:
    """Archive `source` to `dest`, stopping when `check` raises: whole or absent."""
    try:
        archived = files.archive(source, dest, check=check)
    except TimeLimitReached:
        return Failure(ArchiveError("not finished within the time limit"))
    if is_successful(archived):
        return Success(None)
    return Failure(ArchiveError(archived.failure()))
