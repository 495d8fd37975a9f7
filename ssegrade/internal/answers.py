"""What interpreters answer: the values effects get back, and the record of a check run.

Pure core. Frozen dataclasses an interpreter gives back to a program (how a script run ended,
a workspace, staged files, a capture, a prepared patch, the errors of a patch, a capture or
an archive) and `CheckRecord`, one line of `checks.jsonl`. `ScriptResult` is also the daemon's
bencher reply. The effects that ask for them are in `ssegrade.internal.effects`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import ConfigDict

__all__ = [
    "ApplyError",
    "ArchiveError",
    "Capture",
    "CaptureError",
    "CheckRecord",
    "Containment",
    "PrepareError",
    "Prepared",
    "ScriptResult",
    "StageItem",
    "Staged",
    "Workspace",
]


Containment = Literal["full", "container", "weak"]
"""How a script ran: in `full` containment (namespaces, private /tmp, pids cgroup),
`container` (the container is the boundary) or `weak` (own session and process group)."""


@dataclass(frozen=True, slots=True)
class ScriptResult:
    """How one script run ended: the `Bench` answer, and the daemon's bencher reply (the
    original daemon's `code`, `stdout`, `stderr`, then ssegrade's fields). `code` is -1 when
    it was killed by its limit or could not run (its reason is in `stderr`); `not_started`
    says why a task script could not be started at all (`cannot start <script>: <reason>`): a
    broken task, not a failed check. `log_file` is the log of the run (the daemon shows it to
    the admin listener only); `containment` the mode it ran in (`full`, `weak`; None when it
    did not run)."""

    # Read as it is written, nothing coerced nor added, an instance checked too: a reply, a
    # recorded answer or an interpreter's answer of the wrong shape is refused.
    __pydantic_config__ = ConfigDict(
        defer_build=True, extra="forbid", strict=True, revalidate_instances="always"
    )

    code: int
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    killed: bool = False
    log_file: str | None = None
    not_started: str | None = None
    containment: Containment | None = None

    @property
    def passed(self) -> bool:
        """A script passes when it exits 0."""
        return self.code == 0

    @property
    def log(self) -> str:
        """stdout, a newline, stderr: the text `error_log` reports."""
        return f"{self.stdout}\n{self.stderr}"


@dataclass(frozen=True, slots=True)
class Workspace:
    """A fresh copy of the grading repo in the scratch area."""

    path: str


@dataclass(frozen=True, slots=True)
class StageItem:
    """A task file to stage (absolute path); with `along`, the task folder holding it
    (absolute) is staged whole, so that the file's siblings (a Go module's `go.mod`, a
    harness crate) come with it."""

    path: str
    along: str | None = None


@dataclass(frozen=True, slots=True)
class Staged:
    """Task files copied where the runner can read them, for one check only; `paths[i]` is
    where the i-th staged item's file is."""

    folder: str
    paths: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Capture:
    """The captured patch and what proves it: base and new tree ids of the private repo."""

    patch: bytes
    base_tree: str
    new_tree: str
    commits_log: bytes = b""
    left_out: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Prepared:
    """The patch is captured (or given), saved and known to apply (or empty); `patch` is what
    every fresh copy gets applied."""

    patch_bytes: int
    empty: bool
    patch: bytes = b""
    left_out: tuple[str, ...] = ()
    log_file: str | None = None


@dataclass(frozen=True, slots=True)
class ApplyError:
    """A patch or diff that git refused; `log` is git's message."""

    log: str
    log_file: str | None = None


@dataclass(frozen=True, slots=True)
class CaptureError:
    """The patch could not be captured or does not reproduce the source tree."""

    message: str


@dataclass(frozen=True, slots=True)
class ArchiveError:
    """`source.tar.gz` could not be written (never changes the grade)."""

    message: str


PrepareError = ApplyError | CaptureError


@dataclass(frozen=True, slots=True)
class CheckRecord:
    """One line of `checks.jsonl`: a check that ran, with the containment its script ran in,
    or (`name == "prepare"`) how the patch was prepared, with the paths the capture left
    out, or (`name == "end"`) how a grading that did not run to its end ended."""

    name: str
    poc: str | None
    exit_code: int
    seconds: float
    killed: bool
    log_file: str | None
    passed: bool
    left_out: tuple[str, ...] = ()
    containment: Containment | None = None
    ended: str | None = None
    """For the `end` record of a grading that did not run to its end: how it ended."""
    error_kind: str | None = None
    """For the `end` record: the kind of the grade's `error`, if it is one."""

    @staticmethod
    def of_run(name: str, poc: str | None, result: ScriptResult) -> CheckRecord:
        """The record of a check's script run: its exit code, time, kill and log file."""
        return CheckRecord(
            name=name,
            poc=poc,
            exit_code=result.code,
            seconds=result.seconds,
            killed=result.killed,
            log_file=result.log_file,
            passed=result.passed,
            containment=result.containment,
        )
