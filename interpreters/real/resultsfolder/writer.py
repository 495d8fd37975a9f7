"""What the evaluator writes into the results folder (interpreter layer): `checks.jsonl`,
`logs/notes.log`, the archive of the source tree, `result.json` and the patch guard's
`guard.json` (with its `guard` record in `checks.jsonl`); and what it says meanwhile, as
`logging` records (`interpreters.real.logs`): a progress line at INFO when a check begins (marked
`running`) and ends, a note at WARNING.

Every write is safe against links planted in the results folder: appends never follow one,
whole files are written atomically (`result.json` in place when the folder came with an empty
one: `interpreters.real.resultsfolder.write_result`). The archive never holds the grade back:
it is written by a child process, started at the latest when grading asks for it, and waited
for only once `result.json` is written.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, assert_never

from pydantic import ValidationError
from returns.pipeline import is_successful
from returns.result import Failure, Result, Success

from interpreters.real import archive, files
from interpreters.real.archive import child as archive_child
from interpreters.real.files.reading import read_start
from interpreters.real.logs import running
from interpreters.real.resultsfolder.ready import write_result
from ssegrade import Effect, TimeLimitReached
from ssegrade.guard import GuardReport
from ssegrade.internal.effects import (
    Archive,
    ArchiveError,
    CheckFinished,
    CheckRecord,
    CheckStarted,
    MayRunAhead,
    Notify,
    ResultsEffect,
    WriteGuard,
    WriteResult,
)
from ssegrade.internal.program import SignalArrived

__all__ = [
    "ARCHIVE_NAME",
    "GUARD_NAME",
    "ResultsWriter",
    "archive_whole",
    "check_label",
    "describe_check",
    "describe_guard",
    "guard_record",
    "parse_guard",
    "read_guard",
]

ARCHIVE_NAME = "source.tar.gz"
GUARD_NAME = "guard.json"
_log = logging.getLogger(__name__)
MAX_GUARD = 16 << 20
"""A larger `guard.json` is not read back (its flags list at most 50 paths each)."""


def check_label(name: str, poc: str | None) -> str:
    """How progress lines name a check: `build`, `poc /ssebench/pocs/poc.go`, …, and the
    guard's re-run of a PoC (`guard re-run of /ssebench/pocs/poc.go`)."""
    if name == "guard" and poc:
        return f"guard re-run of {poc}"
    return f"poc {poc}" if poc else name


def describe_check(record: CheckRecord) -> str:
    """One progress line for a finished check: status, seconds, exit code, log file."""
    log = f"; log {record.log_file}" if record.log_file else ""
    if record.name == "prepare":
        applies = "ready" if record.passed else "does not apply to the grading repo"
        left = f"; {len(record.left_out)} paths left out" if record.left_out else ""
        return f"patch: {applies}{left}{log}"
    if record.name == "end":
        kind = f"error ({record.error_kind})" if record.error_kind else "a failed check decides"
        return f"end: {record.ended}; {kind}"
    verdict = "passed" if record.passed else "FAILED"
    how = " (killed at its time limit)" if record.killed else ""
    code = "" if record.passed else f", exit {record.exit_code}"
    return (
        f"{check_label(record.name, record.poc)}: {verdict}{how} ({record.seconds:.1f}s{code}{log})"
    )


def describe_guard(report: GuardReport, where: str) -> str:
    """One progress line for the patch guard: the kinds of flag it raised, and its file."""
    if not report.checked:
        return f"guard: no patch to examine; {where}"
    if not report.flags:
        return f"guard: no flag; {where}"
    return f"guard: flagged {', '.join(report.kinds)} (advisory, not part of the grade); {where}"


def read_guard(folder: Path) -> GuardReport | None:
    """The `guard.json` of a results folder, or None when it is missing or unreadable (it is
    read without following a link, as every file of a results folder)."""
    read = read_start(str(folder / GUARD_NAME), MAX_GUARD)
    return parse_guard(read.unwrap() if is_successful(read) else None)


def parse_guard(data: bytes | None) -> GuardReport | None:
    """The report a `guard.json`'s bytes hold, or None (no bytes, or not a report)."""
    if data is None:
        return None
    try:
        return GuardReport.model_validate_json(data)
    except ValidationError:
        return None


def guard_record(report: GuardReport, where: str) -> dict[str, Any]:
    """The `guard` line of `checks.jsonl`: a check record's keys (`exit_code` is the number
    of flags, `passed` that there is none), `flags`, the kinds raised, and `seen`, each flag's
    kind, how sure it is and where."""
    flags = len(report.flags)
    record = CheckRecord("guard", None, flags, 0.0, False, where, passed=not flags)
    seen = [{"kind": f.kind, "confidence": f.confidence, "where": f.where} for f in report.flags]
    return {**asdict(record), "flags": list(report.kinds), "seen": seen}


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
    """Answers the grading effects that stay with the evaluator (`ResultsEffect`): the
    archive of the source tree, `checks.jsonl` and progress lines, notes, and `result.json`."""

    source: Path | None
    results: Path
    check: Callable[[], None] = lambda: None
    """Raises `TimeLimitReached` once the grading's deadline has passed: the archive stops."""
    cache: Path | None = None
    """The baseline's archive cache (`archive.CACHE_NAME` in its folder), if there is one."""
    _archive: archive.ArchiveProcess | None = field(init=False, default=None)
    _warmed: bool = field(init=False, default=False)
    """Whether this grading started the archive's child ahead (`warm_archive`), not yet taken."""
    _asked: bool = field(init=False, default=False)
    """Whether grading asked for the archive (`Archive` answered that it is under way)."""

    def note(self, message: str) -> None:
        """Append a line to `logs/notes.log`."""
        _append(self.results / "logs" / "notes.log", f"{message}\n")

    def _not_archived(self, why: object) -> None:
        message = f"{ARCHIVE_NAME} not written: {why}"
        _log.warning(message)
        self.note(message)

    def warm_archive(self, baseline: Path) -> None:
        """Start the archive's child now, told the source tree and `baseline` (the folder of
        the archive cache): it imports and begins the walk while grading goes on, and
        `start_archive` hands it its job (best effort: nothing when it cannot start)."""
        if self.source is not None and self._archive is None:
            archive_child.warm_up(
                (os.fspath(self.source.absolute()), os.fspath(baseline.absolute()))
            )
            self._warmed = True

    def start_archive(self) -> None:
        """Start writing the archive of the source tree in a child process, unless one is under
        way or there is no source tree; nothing when it cannot start (`Archive` then writes it
        itself). Only for a tree that no longer changes."""
        if self.source is not None and self._archive is None:
            self._warmed = False  # the child started ahead, if any, is taken here
            with contextlib.suppress(OSError):
                self._archive = archive.start_archive(
                    self.source, self.results / ARCHIVE_NAME, self.cache
                )

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
        except (TimeLimitReached, SignalArrived) as stopped:  # the grade is written
            self._not_archived(stopped)
            return
        if not is_successful(finished):
            self._not_archived(finished.failure())
        else:
            self._archived(finished.unwrap())

    def _archived(self, said: str | None) -> None:
        if said:
            _log.debug(said)
            self.note(said)

    def stop_archive(self) -> None:
        """Stop the archive under way, if any, leaving nothing of it; a child started ahead
        for this grading and never given its job ends too, so that no later archive of this
        process takes it for its own."""
        if self._warmed:
            self._warmed = False
            unused = archive_child.take_warm()
            if unused is not None:
                unused.kill()
        started, self._archive = self._archive, None
        if started is not None:
            started.stop()
            if self._asked:
                self._not_archived("grading ended before it was finished")

    def __call__(self, effect: Effect[Any]) -> object:
        """Answer `Archive` (the archive under way: finished once `result.json` is written),
        `CheckStarted`, `CheckFinished`, `Notify`, `WriteResult` or `WriteGuard`."""
        if not isinstance(effect, ResultsEffect):
            raise TypeError(f"not an effect the evaluator answers locally: {effect!r}")
        match effect:
            case MayRunAhead():
                return None  # what runs ahead is the system's choice (`LocalSystem`)
            case Archive():
                if self.source is None:  # a recorded patch: no tree to archive, nothing to say
                    return Success(None)
                self.start_archive()
                if self._archive is None:  # no child process: written here, before the grade
                    archived = archive_whole(
                        self.source, self.results / ARCHIVE_NAME, self.check, self.cache
                    )
                    if is_successful(archived):
                        self._archived(archived.unwrap())
                        return Success(None)
                    return archived
                self._asked = True
                return Success(None)  # under way; waited for once result.json is written
            case CheckStarted(name=name, poc=poc):
                _log.info("%s: running…", check_label(name, poc), extra=running())
                return None
            case CheckFinished(record=record):
                line = json.dumps(asdict(record), separators=(",", ":")) + "\n"
                _append(self.results / "checks.jsonl", line)
                _log.info(describe_check(record))
                return None
            case Notify(message=message):
                _log.warning(message)
                self.note(message)
                return None
            case WriteResult(result=result):
                try:
                    write_result(self.results, result.to_json())
                except BaseException:
                    self.stop_archive()
                    raise
                self.finish_archive()
                return None
            case WriteGuard(report=report):
                path = self.results / GUARD_NAME
                files.atomic_write(path, report.to_json())
                line = json.dumps(guard_record(report, str(path)), separators=(",", ":"))
                _append(self.results / "checks.jsonl", line + "\n")
                _log.info(describe_guard(report, str(path)))
                return None
            case _:
                assert_never(effect)


def archive_whole(
    source: Path, dest: Path, check: Callable[[], None], cache: Path | None = None
) -> Result[str | None, ArchiveError]:
    """Archive `source` to `dest`, stopping when `check` raises: whole or absent; what the
    archive cache `cache` spared, if any."""
    try:
        archived = archive.archive(source, dest, check=check, cache=cache)
    except TimeLimitReached:
        return Failure(ArchiveError("not finished within the time limit"))
    if is_successful(archived):
        return Success(archived.unwrap())
    return Failure(ArchiveError(archived.failure()))
