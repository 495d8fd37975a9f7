"""A fake world: answers every system effect from data and records the trace.

Public, so that embedders can test programs without git, processes or files. Grading effects
are answered by wrapping the world with `ssegrade.bencher_interpreter`; see `FakeWorld.grade`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, assert_never

from returns.result import Failure, Result, Success

from ssegrade import (
    ApplyDiff,
    ApplyError,
    Archive,
    ArchiveError,
    BenchSession,
    Capture,
    CaptureError,
    CaptureTree,
    CheckFinished,
    CheckPatch,
    CheckRecord,
    CheckStarted,
    Deadline,
    Discard,
    Effect,
    EvaluationResult,
    FreshCopy,
    GradeOptions,
    GuardReport,
    NewSession,
    Notify,
    ObjectScan,
    ProvePatch,
    ReadTaskFile,
    RunScript,
    ScanObjects,
    ScriptResult,
    Staged,
    StageFiles,
    SystemEffect,
    Task,
    Unstage,
    Workspace,
    WriteArtifact,
    WriteGuard,
    WriteResult,
    bencher_interpreter,
    grade,
    run,
)

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

    For the patch guard: `task_files` holds the task's files by absolute path (a missing one
    cannot be read); `objects` is what a scan of the build's objects finds (None: every
    runtime asked for, in `a.out`).

    After a run, `trace` holds every effect in order, `artifacts` the results files written,
    `checks` the `checks.jsonl` records, `notes` the messages, `result` the grade written,
    `guard` the guard's report written.
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
    timeout: int = 3600
    now: float = 0.0
    trace: list[Effect[Any]] = field(default_factory=list)
    artifacts: dict[str, bytes] = field(default_factory=dict)
    checks: list[CheckRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    result: EvaluationResult | None = None
    guard: GuardReport | None = None
    live_workspaces: set[str] = field(default_factory=set)
    live_staged: set[str] = field(default_factory=set)
    applied: int = 0
    _counter: int = 0

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
        """Answer one system effect (the interpreter function)."""
        self.trace.append(effect)
        if not isinstance(effect, SystemEffect):
            raise TypeError(f"not a system effect: {effect!r}")
        return self._answer(effect)

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
            case ScanObjects(runtimes=runtimes):
                if self.objects is not None:
                    return self.objects
                return ObjectScan(1, tuple((runtime.name, "a.out") for runtime in runtimes))
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
        options = GradeOptions(task=task, folder=folder, timeout=self.timeout, **runtime)
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
