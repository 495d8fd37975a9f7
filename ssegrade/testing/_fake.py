"""A fake world: answers every effect from data and records the trace.

Pure core, part of the testing kit (`ssegrade.testing`): embedders test programs with it,
without git, processes or files. It answers the system effects and the daemon's reads
(`DaemonRead`) itself, and the grading effects by running the bencher programs over itself
(`ssegrade.bencher_interpreter`): for the whole grading program see `FakeWorld.grade`; for
the preview, `Bench` on the live tree and `SpillLog`, give the world its task.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, assert_never

from returns.result import Failure, Result, Success

from ssegrade import (
    BenchSession,
    Deadline,
    Effect,
    EvaluationResult,
    GradeOptions,
    Task,
    bencher_interpreter,
    grade,
    run,
)
from ssegrade.guard import SourceFile
from ssegrade.guard._facts import ObjectScan
from ssegrade.guard._model import GuardReport
from ssegrade.internal.effects import (
    ApplyDiff,
    ApplyError,
    Archive,
    ArchiveError,
    Bench,
    Capture,
    CaptureError,
    CaptureTree,
    ChangedFiles,
    CheckFinished,
    CheckPatch,
    CheckRecord,
    CheckStarted,
    Discard,
    FreshCopy,
    MayRunAhead,
    NewSession,
    Notify,
    ObserveGuard,
    PrepareGrading,
    ProvePatch,
    ReadArtifact,
    ReadDialog,
    ReadRepoFiles,
    ReadTaskFile,
    RerunPoc,
    RunScript,
    ScanObjects,
    ScriptResult,
    SpillLog,
    Staged,
    StageFiles,
    SystemEffect,
    Unstage,
    Workspace,
    WriteArtifact,
    WriteGuard,
    WriteResult,
)
from ssegrade.internal.run import Interpreter

__all__ = ["FakeWorld", "Script"]


@dataclass(frozen=True, slots=True)
class Script:
    """How a fake script run ends: exit code, output, or the overall time limit."""

    code: int = 0
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.5
    killed: bool = False
    time_limit: bool = False


@dataclass(slots=True)
class FakeWorld:
    """Answers from data. Scripts are looked up by run label: `build`, `poc-1`, `poc-2`, …,
    `function_test`, `intent_test`; a missing label passes.

    For the daemon's reads: `changed` is the listing `ChangedFiles` answers (it fails with
    `capture_error` as the capture does), `dialog` the agent side's dialog file (None: none);
    `ReadArtifact` reads back what was written into `artifacts`.

    For the patch guard: `task_files` holds the task's files by absolute path (a missing one
    cannot be read); `objects` is what a scan of the build's objects finds (None: every
    runtime asked for, in `a.out`).

    The grading effects (`PrepareGrading`, `Bench`, `ObserveGuard`) asked of the world itself
    are answered by the bencher programs over it, for `task` in `folder` (a `Bench` of the
    preview: on the live tree, no patch prepared); `SpillLog` writes a long log to a new path
    under `/logs`, or fails with `spill_error`.

    After a run, `trace` holds every effect in order, `artifacts` the results files written,
    `checks` the `checks.jsonl` records, `notes` the messages, `result` the grade written,
    `guard` the guard's report written, `spilled` the logs spilled by path.
    """

    patch: bytes = b""
    commits_log: bytes = b""
    left_out: tuple[str, ...] = ()
    capture_error: str | None = None
    proof_differs: bool = False
    apply_error: str | None = None
    intent_apply_error: str | None = None
    archive_error: str | None = None
    scripts: dict[str, Script] = field(default_factory=dict)
    crash_on: str | None = None
    task_files: dict[str, bytes] = field(default_factory=dict)
    objects: ObjectScan | None = None
    repo_files: dict[str, bytes] = field(default_factory=dict)
    changed: bytes = b""
    dialog: bytes | None = None
    timeout: int = 3600
    now: float = 0.0
    task: Task | None = None
    folder: str = "/task"
    spill_error: str | None = None
    trace: list[Effect[Any]] = field(default_factory=list)
    artifacts: dict[str, bytes] = field(default_factory=dict)
    checks: list[CheckRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    result: EvaluationResult | None = None
    guard: GuardReport | None = None
    spilled: dict[str, str] = field(default_factory=dict)
    live_workspaces: set[str] = field(default_factory=set)
    live_staged: set[str] = field(default_factory=set)
    applied: int = 0
    _counter: int = 0
    _bencher: Interpreter | None = None

    def _next(self, kind: str) -> str:
        self._counter += 1
        return f"/scratch/{kind}-{self._counter}"

    def _script(self, effect: RunScript) -> ScriptResult:
        if self.crash_on == effect.label:
            raise RuntimeError(f"the interpreter broke during {effect.label}")
        if effect.workspace.path not in self.live_workspaces:
            raise RuntimeError(f"{effect.label} ran in a discarded workspace")
        spec = self.scripts.get(effect.label, Script())
        if spec.time_limit:  # killed at the grading's deadline, which the clock then shows
            self.now += self.timeout
            return ScriptResult(code=-1, seconds=spec.seconds, killed=True, log_file=None)
        return ScriptResult(
            code=-1 if spec.killed else spec.code,
            stdout=spec.stdout,
            stderr=spec.stderr,
            seconds=spec.seconds,
            killed=spec.killed,
            log_file=f"logs/{effect.label}.log",
        )

    def __call__(self, effect: Effect[Any]) -> object:
        """Answer one effect (the interpreter function)."""
        self.trace.append(effect)
        match effect:
            case PrepareGrading() | Bench() | ObserveGuard() | RerunPoc():
                return self._bench(effect)
            case SpillLog(name=name, text=text):
                if self.spill_error is not None:
                    return Failure(self.spill_error)
                path = f"/logs/{name}-{len(self.spilled) + 1}.log"
                self.spilled[path] = text
                return Success(path)
            case ChangedFiles():
                if self.capture_error is not None:
                    return Failure(CaptureError(self.capture_error))
                return Success(self.changed)
            case ReadArtifact(name=name):
                return self.artifacts.get(name)
            case ReadDialog():
                return self.dialog
        if not isinstance(effect, SystemEffect):
            raise TypeError(f"not an effect the world knows: {effect!r}")
        return self._answer(effect)

    def _bench(self, effect: Effect[Any]) -> object:
        if self._bencher is None:
            if self.task is None:
                raise TypeError(f"{effect!r} needs the world's task: FakeWorld(task=...)")
            self._bencher = bencher_interpreter(self.session(self.task, self.folder), self)
        return self._bencher(effect)

    def _answer(self, effect: SystemEffect) -> object:
        match effect:
            case NewSession():
                self.live_workspaces.clear()
                self.live_staged.clear()
                return None
            case CaptureTree():
                if self.capture_error is not None:
                    return Failure(CaptureError(self.capture_error))
                return Success(Capture(self.patch, "base", "new", self.commits_log, self.left_out))
            case ProvePatch():
                return Success("other" if self.proof_differs else "new")
            case WriteArtifact(name=name, data=data):
                self.artifacts[name] = data
                return f"results/{name}"
            case CheckPatch():
                self.applied += 1
                if self.apply_error is not None:
                    return Failure(ApplyError(self.apply_error))
                return Success(None)
            case FreshCopy():
                path = self._next("copy")
                self.live_workspaces.add(path)
                return Workspace(path)
            case StageFiles(items=items):
                folder = self._next("stage")
                self.live_staged.add(folder)
                return Staged(folder, tuple(f"{folder}/{i}" for i in range(len(items))))
            case Unstage(staged=staged):
                self.live_staged.discard(staged.folder)
                return None
            case RunScript():
                return self._script(effect)
            case ApplyDiff():
                if self.intent_apply_error is not None:
                    return Failure(ApplyError(self.intent_apply_error, "logs/intent.log"))
                return Success(None)
            case Discard(workspace=workspace):
                self.live_workspaces.discard(workspace.path)
                return None
            case ReadTaskFile(path=path, limit=limit):
                content = self.task_files.get(path)
                return (
                    Failure(f"{path}: no such file")
                    if content is None
                    else Success(content[:limit])
                )
            case ReadRepoFiles(paths=paths, limit=limit):
                got = ((p, self.repo_files.get(p)) for p in paths)
                return tuple(
                    SourceFile(p, d if d is None or len(d) <= limit else None) for p, d in got
                )
            case ScanObjects(runtimes=runtimes):
                if self.objects is not None:
                    return self.objects
                return ObjectScan(1, tuple((runtime.name, "a.out") for runtime in runtimes))
            case MayRunAhead():
                return None  # the fake does everything when asked: nothing to run ahead
            case Archive():
                if self.archive_error is not None:
                    return Failure(ArchiveError(self.archive_error))
                return Success(None)
            case CheckStarted():
                return None
            case CheckFinished(record=record):
                self.checks.append(record)
                return None
            case Notify(message=message):
                self.notes.append(message)
                return None
            case WriteResult(result=result):
                self.result = result
                self.artifacts["result.json"] = result.to_json()
                return None
            case WriteGuard(report=report):
                self.guard = report
                self.artifacts["guard.json"] = report.to_json()
                return None
            case _:
                assert_never(effect)

    def session(self, task: Task, folder: str = "/task") -> BenchSession:
        """A bencher session over this world."""
        return BenchSession(task=task, folder=folder)

    def grade(self, task: Task, folder: str = "/task", **runtime: Any) -> EvaluationResult:
        """Run the whole grading program against this world."""
        options = GradeOptions(task=task, folder=folder, **runtime)
        deadline = Deadline.starting(self.timeout, self.clock)
        interpret = bencher_interpreter(self.session(task, folder), self, deadline)
        return run(grade(options), interpret, deadline)

    def clock(self) -> float:
        """This world's clock: it moves only when a script is killed at the deadline."""
        return self.now

    def script_labels(self) -> list[str]:
        """The labels of the scripts that ran, in order."""
        return [e.label for e in self.trace if isinstance(e, RunScript)]

    def leaks(self) -> Result[None, str]:
        """Staged files still in place: hidden material must never outlive its check."""
        if self.live_staged:
            return Failure(f"staged files left behind: {sorted(self.live_staged)}")
        return Success(None)
