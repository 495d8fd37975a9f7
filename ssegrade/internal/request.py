"""One grading asked for (`Request`) and what it gave (`Graded`).

Pure core: frozen records, no I/O. The application layer (`interpreters.app`) takes a
`Request` and answers a `Graded`; every entry point that grades on this machine (evaluate,
verify, batch workers, Ray nodes) builds one, and none reads back from disk what the grading
it ran did. The script options are the interpreter's own (`S`: the core does not know how
scripts are contained), carried whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Generic, TypeVar

from ssegrade.guard._model import GuardReport
from ssegrade.internal.answers import CheckRecord, Containment
from ssegrade.internal.result import EvaluationResult, RuntimeResult

__all__ = ["Graded", "Limits", "Request"]

S = TypeVar("S")

_WEAKEST: tuple[Containment, ...] = ("weak", "container", "full")


@dataclass(frozen=True, slots=True)
class Limits:
    """The time limit of the whole grading and of each script (None: a share of the time
    left, as SPEC §3 says), in seconds."""

    timeout: int = 3600
    script_timeout: int | None = None


@dataclass(frozen=True, slots=True)
class Request(Generic[S]):
    """One grading to run: the task folder, what is graded (a recorded `patch`, else the
    agent's `source` tree against its `baseline`), the grading `repo`, the `results`
    folder, the limits, the scripts' options (`scripts`, whole), the runtime facts written
    in `result.json`, and how the results folder is taken: `force` clears an earlier grade,
    `holder` is the token of a batch driver that holds it already. `trace` names a file to
    record the grading's steps in (the source tree is not read when a patch is given).

    >>> Request(PurePath("/t"), PurePath("/r"), scripts=None, patch=b"").limits.timeout
    3600
    """

    task: PurePath
    results: PurePath
    scripts: S
    patch: bytes | None = None
    source: PurePath | None = None
    baseline: PurePath | None = None
    repo: PurePath | None = None
    limits: Limits = field(default_factory=Limits)
    runtime: RuntimeResult = field(default_factory=RuntimeResult)
    runner_user: str | None = None
    force: bool = False
    holder: str | None = None
    trace: PurePath | None = None


@dataclass(frozen=True, slots=True)
class Graded:
    """What one grading gave: the whole `result.json` (`document`), each check's record as
    `checks.jsonl` holds it, the notes said while grading (`logs/notes.log`), and the patch
    guard's report (None when none was written)."""

    document: EvaluationResult
    checks: tuple[CheckRecord, ...] = ()
    notes: tuple[str, ...] = ()
    guard: GuardReport | None = None

    @property
    def containment(self) -> Containment | None:
        """The containment the grading's scripts ran in: the weakest when they differ, None
        when no script ran.

        >>> from ssegrade.internal.result import PatchResult
        >>> run = CheckRecord("build", None, 0, 1.0, False, None, True, containment="full")
        >>> weak = CheckRecord("poc", "/t/p", 0, 1.0, False, None, True, containment="weak")
        >>> doc = EvaluationResult(patch_result=PatchResult(status="passed"))
        >>> Graded(doc, (run, weak)).containment, Graded(doc).containment
        ('weak', None)
        """
        modes = {record.containment for record in self.checks}
        return next((mode for mode in _WEAKEST if mode in modes), None)
