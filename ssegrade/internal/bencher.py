"""The bencher programs: how each grading effect is done with system effects.

Pure core. `BenchSession` is the state one runner session keeps (the copy the last build left
behind, the prepared patch); `bencher_interpreter` turns an interpreter of system effects into
one of grading effects, which is how both the local evaluator and the daemon run actions.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

from returns.pipeline import is_successful
from returns.result import Failure, Result, Success

from ssegrade.guard import (
    POC_BYTES,
    SOURCE_BYTES,
    GuardFacts,
    PocFile,
    diff_paths,
    runtimes_for,
    source_paths,
)
from ssegrade.internal.effects import (
    Action,
    ApplyDiff,
    Bench,
    CaptureError,
    CaptureTree,
    CheckPatch,
    Discard,
    Effect,
    FreshCopy,
    NewSession,
    Notify,
    ObserveGuard,
    Prepared,
    PrepareError,
    PrepareGrading,
    ProvePatch,
    ReadRepoFiles,
    ReadTaskFile,
    RerunPoc,
    RunScript,
    ScanObjects,
    ScriptResult,
    StageFiles,
    StageItem,
    Unstage,
    Workspace,
    WriteArtifact,
)
from ssegrade.internal.run import Deadline, Interpreter, run
from ssegrade.internal.task import Task, poc_folder

__all__ = [
    "BenchSession",
    "bench",
    "bencher_interpreter",
    "fresh_copies",
    "gitignore_changes",
    "is_blank",
    "observe",
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
    """The state of one runner session for one task. `recorded` is a patch given up front
    (`evaluate --patch`): it is graded instead of capturing the source tree."""

    task: Task
    folder: str
    recorded: bytes | None = None
    build_copy: Workspace | None = None
    prepared: Result[Prepared, PrepareError] | None = None
    saved: dict[str, bytes] = field(default_factory=dict)
    """What preparing wrote into the results folder, by name: a later `prepare` writes it
    again (a forced grading may have cleared the folder meanwhile)."""

    def script(self, key: str) -> str | None:
        """The absolute path of a script the task names, or None."""
        path: str | None = getattr(self.task.scripts, key)
        return task_path(self.folder, path) if path else None

    def poc(self, name: str) -> str | None:
        """The config path of a PoC the task names (by config path or absolute path)."""
        for configured in self.task.files.poc:
            if name in (configured, task_path(self.folder, configured)):
                return configured
        return None

    @property
    def patch(self) -> bytes:
        """The patch every fresh copy gets: the prepared one, or none before preparing."""
        if self.prepared is None or not is_successful(self.prepared):
            return b""
        return self.prepared.unwrap().patch


def _refused(message: str) -> ScriptResult:
    return ScriptResult(code=-1, stderr=message)


def _capture_log(patch: bytes, left_out: tuple[str, ...], recorded: bool) -> bytes:
    lines = [
        "patch: given with --patch" if recorded else "patch: captured against the baseline",
        f"patch bytes: {len(patch)}",
        *(
            f"changes {path}: it decides which new files are left out"
            for path in gitignore_changes(patch)
        ),
        f"left out of the capture: {len(left_out)} paths",
        *(f"  {path}" for path in left_out),
    ]
    return "".join(f"{line}\n" for line in lines).encode()


async def _patch(session: BenchSession) -> Result[tuple[bytes, tuple[str, ...]], CaptureError]:
    if session.recorded is not None:
        await _save(session, "final.patch", session.recorded)
        await _save(session, "commits.log", b"")
        return Success((session.recorded, ()))
    captured = await CaptureTree()
    if not is_successful(captured):
        return Failure(captured.failure())
    capture = captured.unwrap()
    proof = await ProvePatch(capture.patch, capture.base_tree)
    if not is_successful(proof):
        return Failure(proof.failure())
    if proof.unwrap() != capture.new_tree:
        return Failure(CaptureError("the captured patch does not reproduce the source tree"))
    await _save(session, "final.patch", capture.patch)
    await _save(session, "commits.log", capture.commits_log)
    return Success((capture.patch, capture.left_out))


async def _save(session: BenchSession, name: str, data: bytes) -> str:
    """Write the results file `name`, and keep it in `session.saved`; where it is."""
    session.saved[name] = data
    return await WriteArtifact(name, data)


async def prepare(session: BenchSession) -> Result[Prepared, PrepareError]:
    """New runner session; capture with its fidelity proof (or take the recorded patch),
    save it, and check once that it applies to the grading repo, which is never modified:
    every fresh copy gets the patch applied in it."""
    await NewSession()
    session.build_copy = None
    if session.prepared is not None:
        for name, data in session.saved.items():
            await WriteArtifact(name, data)
        return session.prepared
    got = await _patch(session)
    if not is_successful(got):
        return Failure(got.failure())
    patch, left_out = got.unwrap()
    log = await _save(
        session, "logs/capture.log", _capture_log(patch, left_out, session.recorded is not None)
    )
    for path in gitignore_changes(patch):
        await Notify(f"the patch changes {path}: it decides which new files are left out")
    if left_out:
        await Notify(f"the capture left out {len(left_out)} paths: see logs/capture.log")
    empty = is_blank(patch)
    prepared = Prepared(len(patch), empty, b"" if empty else patch, left_out, log)
    if not empty:
        checked = await CheckPatch(patch)
        if not is_successful(checked):
            session.prepared = Failure(checked.failure())
            return session.prepared
    session.prepared = Success(prepared)
    return session.prepared


async def _run_staged(
    workspace: Workspace,
    script: str,
    extra: tuple[StageItem, ...],
    label: str,
    rerun: RerunPoc | None = None,
) -> ScriptResult:
    staged = await StageFiles((StageItem(script), *extra))
    try:
        run = RunScript(staged.paths[0], staged.paths[1:], workspace, label)
        if rerun is not None:
            run = replace(run, env=rerun.env, limit=rerun.seconds, least=rerun.least)
        result = await run
    finally:
        await Unstage(staged)
    if result.not_started is not None:  # name the task's script, not its staged copy
        reason = result.not_started.replace(staged.paths[0], script)
        return replace(result, not_started=reason)
    return result


def fresh_copies(task: Task) -> int:
    """How many fresh copies a whole grading of `task` asks for: one for the build and the
    PoCs, one for the functional tests, one for the intent tests (fewer when it stops early).
    Read by the grading program's plan alone (`ssegrade.internal.program.plan`, `MayRunAhead`): an
    interpreter learns it from the plan, never beside it.

    >>> from ssegrade.internal.task import Files, Scripts
    >>> fresh_copies(Task(id="t", scripts=Scripts(build="b", run="r", test="t"),
    ...                   files=Files(poc=("p",), future_test="f.diff")))
    3
    >>> fresh_copies(Task(id="t", scripts=Scripts(run="r"), files=Files(poc=("p",))))
    1
    """
    has = task.checks
    return sum((bool(has & {"build", "poc"}), "function_test" in has, "intent_test" in has))


async def _build(session: BenchSession, script: str) -> ScriptResult:
    previous = session.build_copy
    workspace = await FreshCopy(session.patch)
    session.build_copy = workspace
    if previous is not None:
        await Discard(previous)
    return await _run_staged(workspace, script, (), "build")


async def _run_poc(
    session: BenchSession, poc: str | None, rerun: RerunPoc | None = None
) -> ScriptResult:
    runner = session.script("run")
    if runner is None:
        return _refused("the task has no run script")
    found = session.poc(poc) if poc is not None else None
    if found is None:
        return _refused(f"the task names no PoC {poc!r}")
    if session.build_copy is None:
        if rerun is not None:
            return ScriptResult(code=-1, not_started="no copy the PoCs ran in")
        if session.script("build") is not None:
            return _refused("no build yet: run the build action before run_poc")
        session.build_copy = await FreshCopy(session.patch)
    index = session.task.files.poc.index(found) + 1
    along = poc_folder(session.task, found)
    item = StageItem(
        task_path(session.folder, found),
        None if along is None else task_path(session.folder, along),
    )
    label = f"poc-{index}" if rerun is None else f"guard-poc-{index}"
    return await _run_staged(session.build_copy, runner, (item,), label, rerun)


async def _function_test(session: BenchSession, script: str) -> ScriptResult:
    workspace = await FreshCopy(session.patch)
    try:
        return await _run_staged(workspace, script, (), "function_test")
    finally:
        await Discard(workspace)


async def _intent_test(session: BenchSession, script: str, diff: str) -> ScriptResult:
    workspace = await FreshCopy(session.patch)
    try:
        staged = await StageFiles((StageItem(diff),))
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
        return await _function_test(session, script)
    diff = session.task.files.future_test
    if diff is None:
        return _refused("the task has no hidden tests")
    return await _intent_test(session, script, task_path(session.folder, diff))


HIDDEN_DIFF_BYTES = 64 << 20
"""The most bytes of the hidden test diff read for the guard (to list the paths it touches)."""


async def observe(session: BenchSession) -> GuardFacts:
    """What the patch guard reads besides the patch, in this session: the PoC files, the
    paths of the hidden test diff and, when the task names a sanitizer and was built, a scan
    of the build's copy for its runtime. A file that cannot be read is left out."""
    task = session.task
    pocs: list[PocFile] = []
    for poc in task.files.poc:
        read = await ReadTaskFile(task_path(session.folder, poc), POC_BYTES)
        if is_successful(read):
            pocs.append(PocFile(poc, read.unwrap()))
    hidden: tuple[str, ...] = ()
    if task.files.future_test is not None:
        diff = task_path(session.folder, task.files.future_test)
        read = await ReadTaskFile(diff, HIDDEN_DIFF_BYTES)
        if is_successful(read):
            hidden = diff_paths(read.unwrap())
    runtimes = runtimes_for(task.sanitizer)
    scan = None
    if runtimes and "build" in task.checks and session.build_copy is not None:
        scan = await ScanObjects(session.build_copy, runtimes, diff_paths(session.patch))
    sources = await ReadRepoFiles(source_paths(session.patch), SOURCE_BYTES)
    return GuardFacts(tuple(pocs), hidden, scan, sources)


def bencher_interpreter(
    session: BenchSession, system: Interpreter, deadline: Deadline | None = None
) -> Interpreter:
    """Answer grading effects (`PrepareGrading`, `Bench`, `ObserveGuard`, `RerunPoc`) with
    the bencher programs over `system`, within `deadline` (the grading's, so that its inner
    steps stop at it too); pass the rest on."""

    def interpret(effect: Effect[Any]) -> object:
        if isinstance(effect, PrepareGrading):
            return run(prepare(session), system, deadline)
        if isinstance(effect, Bench):
            return run(bench(session, effect.action, effect.poc), system, deadline)
        if isinstance(effect, ObserveGuard):
            return run(observe(session), system, deadline)
        if isinstance(effect, RerunPoc):  # the guard's: as `run_poc`, with the options pinned
            return run(_run_poc(session, effect.poc, effect), system, deadline)
        return system(effect)

    return interpret
