"""The bencher programs: how each grading effect is done with system effects.

Pure core. `BenchSession` is the state one runner session keeps (the copy the last build left
behind, the prepared patch); `bencher_interpreter` turns an interpreter of system effects into
one of grading effects, which is how both the local evaluator and the daemon run actions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from returns.pipeline import is_successful
from returns.result import Failure, Result, Success

from ssegrade.effects import (
    Action,
    ApplyDiff,
    ApplyToRepo,
    Bench,
    CaptureError,
    CaptureTree,
    Discard,
    Effect,
    FreshCopy,
    NewSession,
    Notify,
    Prepared,
    PrepareError,
    PrepareGrading,
    ProvePatch,
    RunScript,
    ScriptResult,
    StageFiles,
    Unstage,
    Workspace,
    WriteArtifact,
)
from ssegrade.run import Interpreter, run
from ssegrade.task import Task

__all__ = [
    "BenchSession",
    "bench",
    "bencher_interpreter",
    "gitignore_changes",
    "is_blank",
    "prepare",
    "task_path",
]


def task_path(folder: str, path: str) -> str:
    """A config path made absolute against the task folder.

    >>> task_path("/ssebench", "pocs/poc.go")
    '/ssebench/pocs/poc.go'
    >>> task_path("/ssebench", "/elsewhere/run.sh")
    '/elsewhere/run.sh'
    """
    return str(PurePosixPath(folder, path))


def gitignore_changes(patch: bytes) -> tuple[str, ...]:
    """The `.gitignore` files a patch touches: they decide what counts as new, so grading
    notes them.

    >>> gitignore_changes(b"diff --git a/src/.gitignore b/src/.gitignore\\nindex 1..2\\n")
    ('src/.gitignore',)
    """
    found: list[str] = []
    for line in patch.split(b"\n"):
        if line.startswith(b"diff --git a/"):
            path = line[len(b"diff --git a/") :].rsplit(b" b/", 1)[0].decode("utf-8", "replace")
            if path == ".gitignore" or path.endswith("/.gitignore"):
                found.append(path)
    return tuple(found)


def is_blank(patch: bytes) -> bool:
    """A patch that is empty or only whitespace is no change at all.

    >>> is_blank(b" \\n\\t"), is_blank(b"diff --git a/x b/x\\n")
    (True, False)
    """
    return not patch.strip()


@dataclass(slots=True)
class BenchSession:
    """The state of one runner session for one task."""

    task: Task
    folder: str
    build_copy: Workspace | None = None
    prepared: Result[Prepared, PrepareError] | None = None

    def script(self, key: str) -> str | None:
        """The absolute path of a script the task names, or None."""
        path: str | None = getattr(self.task.scripts, key)
        return task_path(self.folder, path) if path else None

    def poc(self, name: str) -> str | None:
        """The absolute path of a PoC the task names (by config path or absolute path)."""
        for configured in self.task.files.poc:
            absolute = task_path(self.folder, configured)
            if name in (configured, absolute):
                return absolute
        return None


def _refused(message: str) -> ScriptResult:
    return ScriptResult(code=-1, stderr=message)


async def prepare(session: BenchSession) -> Result[Prepared, PrepareError]:
    """New runner session, capture with its fidelity proof, save, apply once."""
    await NewSession()
    session.build_copy = None
    if session.prepared is not None:
        return session.prepared
    captured = await CaptureTree()
    if not is_successful(captured):
        return Failure(captured.failure())
    capture = captured.unwrap()
    proof = await ProvePatch(capture.patch, capture.base_tree)
    if not is_successful(proof):
        return Failure(proof.failure())
    if proof.unwrap() != capture.new_tree:
        return Failure(CaptureError("the captured patch does not reproduce the source tree"))
    await WriteArtifact("final.patch", capture.patch)
    await WriteArtifact("commits.log", capture.commits_log)
    for path in gitignore_changes(capture.patch):
        await Notify(f"the patch changes {path}: it decides which new files are left out")
    prepared = Prepared(patch_bytes=len(capture.patch), empty=is_blank(capture.patch))
    if prepared.empty:
        session.prepared = Success(prepared)
        return session.prepared
    applied = await ApplyToRepo(capture.patch)
    outcome: Result[Prepared, PrepareError] = (
        Success(prepared) if is_successful(applied) else Failure(applied.failure())
    )
    session.prepared = outcome
    return outcome


async def _run_staged(
    workspace: Workspace, script: str, extra: tuple[str, ...], label: str
) -> ScriptResult:
    staged = await StageFiles((script, *extra))
    try:
        return await RunScript(staged.paths[0], staged.paths[1:], workspace, label)
    finally:
        await Unstage(staged)


async def _build(session: BenchSession, script: str) -> ScriptResult:
    previous = session.build_copy
    workspace = await FreshCopy()
    session.build_copy = workspace
    if previous is not None:
        await Discard(previous)
    return await _run_staged(workspace, script, (), "build")


async def _run_poc(session: BenchSession, poc: str | None) -> ScriptResult:
    runner = session.script("run")
    if runner is None:
        return _refused("the task has no run script")
    found = session.poc(poc) if poc is not None else None
    if found is None:
        return _refused(f"the task names no PoC {poc!r}")
    if session.build_copy is None:
        if session.script("build") is not None:
            return _refused("no build yet: run the build action before run_poc")
        session.build_copy = await FreshCopy()
    index = [task_path(session.folder, p) for p in session.task.files.poc].index(found) + 1
    return await _run_staged(session.build_copy, runner, (found,), f"poc-{index}")


async def _function_test(script: str) -> ScriptResult:
    workspace = await FreshCopy()
    try:
        return await _run_staged(workspace, script, (), "function_test")
    finally:
        await Discard(workspace)


async def _intent_test(script: str, diff: str) -> ScriptResult:
    workspace = await FreshCopy()
    try:
        staged = await StageFiles((diff,))
        try:
            applied = await ApplyDiff(workspace, staged.paths[0], "intent_test-apply")
        finally:
            await Unstage(staged)
        if not is_successful(applied):
            error = applied.failure()
            return ScriptResult(code=1, stderr=error.log, log_file=error.log_file)
        return await _run_staged(workspace, script, (), "intent_test")
    finally:
        await Discard(workspace)


async def bench(session: BenchSession, action: Action, poc: str | None = None) -> ScriptResult:
    """Run one bencher action in this session; a missing script answers code -1."""
    if action == "run_poc":
        return await _run_poc(session, poc)
    key = "build" if action == "build" else "test"
    script = session.script(key)
    if script is None:
        return _refused(f"the task has no {key} script")
    if action == "build":
        return await _build(session, script)
    if action == "function_test":
        return await _function_test(script)
    diff = session.task.files.future_test
    if diff is None:
        return _refused("the task has no hidden tests")
    return await _intent_test(script, task_path(session.folder, diff))


def bencher_interpreter(session: BenchSession, system: Interpreter) -> Interpreter:
    """Answer grading effects with the bencher programs over `system`; pass the rest on."""

    def interpret(effect: Effect[Any]) -> object:
        if isinstance(effect, PrepareGrading):
            return run(prepare(session), system)
        if isinstance(effect, Bench):
            return run(bench(session, effect.action, effect.poc), system)
        return system(effect)

    return interpret
