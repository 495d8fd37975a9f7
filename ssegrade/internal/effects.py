"""The effect vocabulary: values a program awaits and an interpreter answers.

Pure core. An effect is a frozen dataclass subclassing `Effect[A]`; awaiting it yields the effect
to whoever drives the program (`ssegrade.internal.run.run`) and returns the answer of type `A`. The
answers are `ssegrade.internal.answers`' values, named here too.

Each effect is defined once; the vocabularies are unions composed from a few parts:
- `ResultsEffect`: what grading says (its plan first) and writes into its results folder;
- `BenchEffect`: the bencher actions; with the results', the grading program's
  (`GradingEffect`), answered by the bencher programs locally or by the daemon over HTTP;
- `WorkEffect`: what one bencher action is made of (copies, scripts, git); with the results',
  what a system interpreter answers (`SystemEffect`);
- `PreviewEffect`: what the agent's `test_patch` awaits, `Bench` on its live tree and
  `SpillLog` for a long log;
- `DaemonRead`: what the daemon reads to serve its API (the live tree, the results, the task's
  files, the agent side's dialog).

The patch guard's effects (`ObserveGuard`, `WriteGuard`; `ReadTaskFile`, `ScanObjects` below
them) are awaited after the checks and never feed the verdict.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

from returns.result import Result

from ssegrade._guard_facts import GuardFacts, ObjectScan, SanitizerRuntime, SourceFile
from ssegrade.internal.answers import (
    ApplyError,
    ArchiveError,
    Capture,
    CaptureError,
    CheckRecord,
    Prepared,
    PrepareError,
    ScriptResult,
    Staged,
    StageItem,
    Workspace,
)
from ssegrade.internal.checks import Action
from ssegrade.internal.errors import SsegradeError
from ssegrade.internal.guard_document import GuardReport
from ssegrade.internal.result import EvaluationResult

__all__ = [
    "Action",
    "ApplyDiff",
    "ApplyError",
    "Archive",
    "ArchiveError",
    "Bench",
    "BenchEffect",
    "Capture",
    "CaptureError",
    "CaptureTree",
    "ChangedFiles",
    "CheckFinished",
    "CheckPatch",
    "CheckRecord",
    "CheckStarted",
    "DaemonRead",
    "Discard",
    "Effect",
    "FreshCopy",
    "GradingEffect",
    "MayRunAhead",
    "NewSession",
    "Notify",
    "ObserveGuard",
    "PrepareError",
    "PrepareGrading",
    "Prepared",
    "PreviewEffect",
    "ProvePatch",
    "ReadArtifact",
    "ReadDialog",
    "ReadRepoFiles",
    "ReadTaskFile",
    "RerunPoc",
    "ResultsEffect",
    "RunScript",
    "ScanObjects",
    "ScriptNotStarted",
    "ScriptResult",
    "SpillLog",
    "StageFiles",
    "StageItem",
    "Staged",
    "SystemEffect",
    "TimeLimitReached",
    "Unstage",
    "WorkEffect",
    "Workspace",
    "WriteArtifact",
    "WriteGuard",
    "WriteResult",
]

A_co = TypeVar("A_co", covariant=True)


class Effect(Generic[A_co]):
    """Base of every effect; `A_co` is the type of the answer an interpreter must give."""

    __slots__ = ()

    def __await__(self) -> Generator[Effect[A_co], object, A_co]:
        answer = yield self
        # The one unchecked cast: interpreters are total over the effect union and tested to
        # answer each effect with its declared type.
        return cast(A_co, answer)


class ScriptNotStarted(SsegradeError):
    """A task script could not be started: grading ends as `error` (a broken task); `log`
    is what the runner said."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


class TimeLimitReached(SsegradeError):
    """Thrown into the program by the run loop once the evaluation's `Deadline` has passed."""

    def __init__(self, seconds: int) -> None:
        super().__init__(f"the time limit of {seconds}s is spent")
        self.seconds = seconds


# ---------------------------------------------------------------------------- grading effects


@dataclass(frozen=True, slots=True)
class MayRunAhead(Effect[None]):
    """The plan, said before anything else: what an interpreter may start before it is asked
    for, because no script's outcome decides it. `fresh_copies`: the most fresh copies of the
    grading repo the checks will ask for (0: none may be made ahead); `patch_check`: the
    captured patch's check against the grading repo may run while its capture is proven;
    `archive`: the archive of the source tree may start now (the tree no longer changes).

    An interpreter may use it or ignore it (answering None): the grade is the same either way.
    The real interpreter overlaps that work with the rest; the fake ignores it; traces record
    it. No interpreter starts work ahead that the plan does not name.
    """

    fresh_copies: int = 0
    patch_check: bool = False
    archive: bool = False


@dataclass(frozen=True, slots=True)
class PrepareGrading(Effect[Result[Prepared, PrepareError]]):
    """New runner session, capture, write `final.patch`/`commits.log`, check that the patch
    applies to the grading repo (which is never modified)."""


@dataclass(frozen=True, slots=True)
class Bench(Effect[ScriptResult]):
    """One bencher action; `poc` is the config path of the PoC for `run_poc`."""

    action: Action
    poc: str | None = None


@dataclass(frozen=True, slots=True)
class Archive(Effect[Result[None, ArchiveError]]):
    """Write `source.tar.gz` of the source tree as it is now."""


@dataclass(frozen=True, slots=True)
class CheckStarted(Effect[None]):
    """A check is about to run: say so on the progress stream (`poc`: the PoC's path)."""

    name: str
    poc: str | None = None


@dataclass(frozen=True, slots=True)
class CheckFinished(Effect[None]):
    """A check finished: append to `checks.jsonl` and say so on the progress stream."""

    record: CheckRecord


@dataclass(frozen=True, slots=True)
class Notify(Effect[None]):
    """A line for the evaluator's log (a warning or a note)."""

    message: str


@dataclass(frozen=True, slots=True)
class WriteResult(Effect[None]):
    """Write `result.json` atomically."""

    result: EvaluationResult


@dataclass(frozen=True, slots=True)
class ObserveGuard(Effect[GuardFacts]):
    """Observe what the patch guard reads besides the patch: the PoC files' bytes, the paths
    of the hidden test diff and, when the task names a sanitizer, whether the objects the
    grading build produced carry its runtime. Awaited after the checks; advisory only."""


@dataclass(frozen=True, slots=True)
class RerunPoc(Effect[ScriptResult]):
    """Run a PoC that passed once more, as `run_poc` runs it (in the build's copy, the PoC
    staged), with `env` set over the script's environment, for at most `seconds` inside the
    time left, and not at all when less than `least` is left (`not_started` says why): the
    patch guard's pinned-options re-run (`ssegrade.guard._pinning`). Awaited after
    `result.json` is written; advisory. An interpreter that cannot run it raises, and the
    guard notes why."""

    poc: str
    env: tuple[tuple[str, str], ...]
    seconds: float
    least: float = 0.0


@dataclass(frozen=True, slots=True)
class WriteGuard(Effect[None]):
    """Write `guard.json` atomically, and a `guard` record in `checks.jsonl`."""

    report: GuardReport


# ---------------------------------------------------------------------------- preview effects


@dataclass(frozen=True, slots=True)
class SpillLog(Effect[Result[str, str]]):
    """Write `text` whole to a new file in the log folder; answer its path, or why it failed.

    `name` is a file-name-safe stem naming the check (`test_patch-build`,
    `test_patch-run_poc`, …); the interpreter makes the file name new (it never overwrites).
    """

    name: str
    text: str


PreviewEffect = Bench | SpillLog
"""Every effect the `test_patch` preview awaits: an interpreter for it must answer both."""


# ---------------------------------------------------------------------------- system effects


@dataclass(frozen=True, slots=True)
class NewSession(Effect[None]):
    """Kill every runner process and discard the scratch area and caches."""


@dataclass(frozen=True, slots=True)
class CaptureTree(Effect[Result[Capture, CaptureError]]):
    """Stage the source tree in the private repo and diff it against the baseline."""


@dataclass(frozen=True, slots=True)
class ProvePatch(Effect[Result[str, CaptureError]]):
    """Apply `patch` to `base_tree` in a scratch index; answer the resulting tree id."""

    patch: bytes
    base_tree: str


@dataclass(frozen=True, slots=True)
class WriteArtifact(Effect[str]):
    """Write a file of the results folder atomically; answers the path written."""

    name: str
    data: bytes


@dataclass(frozen=True, slots=True)
class CheckPatch(Effect[Result[None, ApplyError]]):
    """`git apply --check --binary` of the patch against the grading repo, which stays
    untouched."""

    patch: bytes


@dataclass(frozen=True, slots=True)
class FreshCopy(Effect[Workspace]):
    """A fresh copy of the grading repo, owned by the runner, with `patch` applied in it
    (checked beforehand with `CheckPatch`: a copy it does not apply to is an exception)."""

    patch: bytes = b""


@dataclass(frozen=True, slots=True)
class StageFiles(Effect[Staged]):
    """Copy task files (absolute paths, each alone or with its folder) where the runner can
    read them."""

    items: tuple[StageItem, ...]


@dataclass(frozen=True, slots=True)
class Unstage(Effect[None]):
    """Remove staged files."""

    staged: Staged


@dataclass(frozen=True, slots=True)
class RunScript(Effect[ScriptResult]):
    """Run `script args…` in `workspace` as the runner, with the time limits, then clean up.
    `env`: variables set over the script's environment; `limit`: this run's own limit in
    seconds, inside the grading's (None: the script limit); with `least`, a run that would
    have less than that is not started (`not_started` says so)."""

    script: str
    args: tuple[str, ...]
    workspace: Workspace
    label: str
    env: tuple[tuple[str, str], ...] = ()
    limit: float | None = None
    least: float = 0.0


@dataclass(frozen=True, slots=True)
class ApplyDiff(Effect[Result[None, ApplyError]]):
    """`git apply -p1` of a staged diff inside a workspace, as the runner."""

    workspace: Workspace
    diff: str
    label: str


@dataclass(frozen=True, slots=True)
class Discard(Effect[None]):
    """Remove a workspace."""

    workspace: Workspace


@dataclass(frozen=True, slots=True)
class ReadTaskFile(Effect[Result[bytes, str]]):
    """Read the first `limit` bytes of a task file (absolute path), never through a link;
    answers why it could not be read."""

    path: str
    limit: int


@dataclass(frozen=True, slots=True)
class ReadRepoFiles(Effect[tuple[SourceFile, ...]]):
    """Read the grading repo's files at `paths` (relative), each up to `limit` bytes (a larger
    one, a link or a missing one answers None), never through a link: for the patch guard."""

    paths: tuple[str, ...]
    limit: int


@dataclass(frozen=True, slots=True)
class ScanObjects(Effect[ObjectScan]):
    """Look for each sanitizer runtime in the ELF files of `workspace` that grading
    produced (new or changed since the copy was made; `skip`: paths the patch wrote itself),
    read-only, never through a link, within the interpreter's bounds of time and size."""

    workspace: Workspace
    runtimes: tuple[SanitizerRuntime, ...]
    skip: tuple[str, ...] = ()


# ---------------------------------------------------------------------------- the daemon's reads


@dataclass(frozen=True, slots=True)
class ChangedFiles(Effect[Result[bytes, CaptureError]]):
    """The files the source tree changes against the baseline, staged as `CaptureTree` stages
    them, as `git diff-tree -r -z --raw --numstat --no-renames` lists them."""


@dataclass(frozen=True, slots=True)
class ReadArtifact(Effect[bytes | None]):
    """A file of the results folder (`WriteArtifact`'s `name`); None when there is none."""

    name: str


@dataclass(frozen=True, slots=True)
class ReadDialog(Effect[bytes | None]):
    """The agent side's dialog file (`dialog.jsonl` in its archive folder), never through a
    link; None when there is none."""


# ---------------------------------------------------------------------------- vocabularies

ResultsEffect = (
    MayRunAhead | Archive | CheckStarted | CheckFinished | Notify | WriteResult | WriteGuard
)
"""What grading says (its plan, its progress, its notes) and writes into its results folder:
answered where the results are kept (`ResultsWriter`), whoever answers the rest; the plan by
whoever may run ahead (`LocalSystem`), ignored elsewhere."""

BenchEffect = PrepareGrading | Bench | ObserveGuard | RerunPoc
"""The bencher's actions: the bencher programs answer them over a system, or the daemon."""

GradingEffect = BenchEffect | ResultsEffect
"""Every effect the grading program awaits."""

WorkEffect = (
    NewSession
    | CaptureTree
    | ProvePatch
    | WriteArtifact
    | CheckPatch
    | FreshCopy
    | StageFiles
    | Unstage
    | RunScript
    | ApplyDiff
    | Discard
    | ReadTaskFile
    | ReadRepoFiles
    | ScanObjects
)
"""What one bencher action is made of: copies, scripts, git, task files."""

SystemEffect = WorkEffect | ResultsEffect
"""Every effect a system interpreter answers: the bencher programs' and the results'."""

DaemonRead = CaptureTree | ChangedFiles | ReadArtifact | ReadTaskFile | ReadDialog
"""What the daemon reads to answer its API besides the bencher actions: the live tree's patch
and files, the results folder, the task's files, the agent side's dialog."""
