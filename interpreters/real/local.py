"""The local real interpreter: answers system effects with git, copies, processes and files.

Interpreter layer. Wrap it with `ssegrade.bencher_interpreter` to answer grading effects too;
the evaluator and the daemon both do. It bounds its blocking work by the run loop's `Deadline`:
every git command is killed when it is reached, copies and the archive check it between batches,
scripts get the time left. With `ahead` (the evaluator, whose trees do not change while it
grades) it hands what no script decides to `WorkAhead`, as far as the program's plan allows
(`MayRunAhead`: it guesses nothing from the other effects), and its checks work in copy-on-write
views where the kernel allows (`Workspaces`); what it writes into the results folder goes
through `ResultsWriter`.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, assert_never

from returns.pipeline import is_successful
from returns.result import Failure, Result

from interpreters.real import archive, files, git
from interpreters.real.ahead import WorkAhead
from interpreters.real.guardcost import LOG_LABEL, GuardClock
from interpreters.real.objects import answer_observation
from interpreters.real.places import Places
from interpreters.real.resultsfolder.writer import ResultsWriter
from interpreters.real.runner import (
    EnvPolicy,
    LogWriteError,
    Runner,
    kill_session,
    new_session,
    run_script,
)
from interpreters.real.runner.policy import ContainmentPolicy
from interpreters.real.support import SupportFolders
from interpreters.real.taskview import stage_folder_of, stage_items
from interpreters.real.workspaces import Workspaces
from ssegrade import Deadline, Effect
from ssegrade.internal.effects import (
    ApplyDiff,
    ApplyError,
    Archive,
    Capture,
    CaptureError,
    CaptureTree,
    CheckPatch,
    Discard,
    FreshCopy,
    MayRunAhead,
    NewSession,
    ProvePatch,
    ReadRepoFiles,
    ReadTaskFile,
    ResultsEffect,
    RunScript,
    ScanObjects,
    ScriptResult,
    Staged,
    StageFiles,
    StageItem,
    Unstage,
    WorkEffect,
    Workspace,
    WriteArtifact,
    WriteGuard,
)
from ssegrade.internal.run import script_limit

__all__ = ["LocalSystem", "Places"]


@dataclass(slots=True)
class LocalSystem:
    """Answers every system effect for real. Scripts run as `runner`, inside the time limits:
    the whole evaluation's `deadline` (none: no limit), each script at most `script_timeout`,
    by default its share of the time left that keeps time for the `later` scripts after it
    (`later(label)`: how many; `ssegrade.internal.run.script_limit`).

    With `ahead`, work that does not depend on a script's outcome is done in the background
    (see the module's docstring); `close` must then be called at the end.
    """

    places: Places
    runner: Runner
    deadline: Deadline | None = None
    script_timeout: float | None = None
    env: EnvPolicy | None = None
    memory: int | None = None
    containment: ContainmentPolicy | None = None
    ahead: bool = False
    later: Callable[[str], int] = lambda label: 0
    """How many task scripts grading runs after the one of a label (`scripts_after`)."""
    views: bool | None = None
    """Whether checks may work in copy-on-write views of the grading repo instead of fresh
    copies (see `Workspaces`); None: with `ahead`, whose trees do not change while it grades."""
    _count: int = field(init=False, default=0)
    _session: int = field(init=False, default=0)
    _token: str = field(init=False, default="")
    _writer: ResultsWriter = field(init=False)
    _support: SupportFolders = field(init=False)
    _ahead: WorkAhead | None = field(init=False, default=None)
    _trees: Workspaces = field(init=False)
    _plan: MayRunAhead = field(init=False, default_factory=MayRunAhead)
    """What the program said may run ahead: nothing until it says."""
    _guard: GuardClock = field(init=False, default_factory=GuardClock)
    """What the patch guard's step costs, timed on the effects answered (its log)."""

    def __post_init__(self) -> None:
        baseline = self.places.baseline
        cache = None if baseline is None else baseline.path / archive.CACHE_NAME
        self._writer = ResultsWriter(self.places.source, self.places.results, self._check, cache)
        for folder in (self.places.results / "logs", self.places.scratch):
            folder.mkdir(parents=True, exist_ok=True)
        self.places.scratch.chmod(0o711)
        self._support = SupportFolders(
            self.places.support,
            self.places.scratch / "support",
            open_to_runner=self.runner.isolated,
        )
        self._new_home()
        self._trees = Workspaces(
            self.places.repo,
            self.places.scratch,
            self.runner,
            self.containment,
            self.ahead if self.views is None else self.views,
            self._next,
            self._remove,
            self._check,
            self._until,
        )
        if self.ahead:
            # Out of the runner's sight: a script could otherwise change the next check's copy.
            self._ahead = self._trees.ahead = WorkAhead(
                self.places.scratch / "private",
                self._trees.make_copy,
                self._check,
                self._left,
                self._writer.note,
            )

    def log_notes(self, notes: Sequence[str]) -> None:
        """Keep notes said before grading began (warnings about its inputs) in the log."""
        for message in notes:
            self._writer.note(message)

    def stop(self) -> None:
        """Kill every process of this system's runner session (as root: of the runner)."""
        kill_session(self.runner, self._token)

    def close(self, remove: bool = True) -> None:
        """Stop and wait for the background work; remove what it left in the scratch folder,
        unless the caller will (`remove=False`: it removes the scratch folder whole)."""
        self._writer.stop_archive()  # only when grading ended without writing its result
        try:
            self._trees.close()
        finally:
            ahead, self._ahead = self._ahead, None
            if ahead is not None:
                ahead.close(remove)

    # -------------------------------------------------------------- helpers

    def _next(self, stem: str) -> Path:
        self._count += 1
        return self.places.scratch / f"{stem}-{self._count}"

    def _stage_of(self, script: str) -> tuple[Path, ...]:
        return stage_folder_of(self.places.scratch, Path(script))

    def _log_path(self, label: str) -> Path:
        self._count += 1
        return self.places.results / "logs" / f"{self._count:02d}-{label}.log"

    def _owner(self) -> tuple[int, int] | None:
        return (self.runner.uid, self.runner.gid) if self.runner.isolated else None

    def _home(self) -> Path:
        return self.places.scratch / f"session-{self._session}" / "home"

    def _new_home(self) -> None:
        self._session += 1
        self._token = new_session()
        home = self._home()
        home.mkdir(parents=True, mode=0o700)
        owner = self._owner()
        if owner is not None:
            os.chown(home.parent, *owner)
            os.chown(home, *owner)

    def _left(self) -> float | None:
        """The seconds left (None: no limit); raises `TimeLimitReached` when none are."""
        if self.deadline is None:
            return None
        self.deadline.check()
        return self.deadline.left()

    def _time_left(self) -> bool:
        return self.deadline is None or not self.deadline.passed()

    def _check(self) -> None:
        if self.deadline is not None:
            self.deadline.check()

    def _until(self) -> Deadline | None:
        """When git commands are killed: at the deadline, on its own clock."""
        return self.deadline

    def _write_log(self, label: str, command: str, text: str) -> str:
        path = self._log_path(label)
        files.atomic_write(path, f"$ {command}\n{text}".encode())
        return str(path)

    def _log_guard_cost(self) -> None:
        """`logs/NN-guard-cost.log`: what the guard's step cost (`GuardClock`); advisory, so
        a log that cannot be written is left out."""
        cost = self._guard.cost()
        if cost is not None:
            with contextlib.suppress(OSError):
                files.atomic_write(self._log_path(LOG_LABEL), cost.log_text().encode())

    def _remove(self, path: Path) -> None:
        """Remove a scratch tree: in the background when working ahead."""
        if self._ahead is None:
            files.remove_tree(path)
        else:
            self._ahead.remove(path)

    # -------------------------------------------------------------- effects

    def __call__(self, effect: Effect[Any]) -> object:
        """Answer one system effect: the plan here, the results' with its `ResultsWriter`, the
        others here; before `guard.json`, what the guard's step cost is logged."""
        if isinstance(effect, WriteGuard):
            self._log_guard_cost()
        started = self._guard.started()
        try:
            return self._call(effect)
        finally:
            self._guard.ended(effect, started)

    def _call(self, effect: Effect[Any]) -> object:
        if isinstance(effect, MayRunAhead):
            self._follow(effect)
            return None
        if isinstance(effect, ResultsEffect):
            if isinstance(effect, Archive) and self._ahead is not None:
                self._ahead.checks_over()
            return self._writer(effect)
        if not isinstance(effect, WorkEffect):
            raise TypeError(f"not a system effect: {effect!r}")
        return self._answer(effect)

    def _answer(self, effect: WorkEffect) -> object:
        match effect:
            case NewSession():
                self.stop()
                self._new_home()
                return None
            case CaptureTree():
                return self._capture()
            case ProvePatch(patch=patch, base_tree=base):
                if self.places.baseline is None:
                    return Failure(CaptureError("no baseline to prove the patch against"))
                return git.prove(self.places.baseline, patch, base, until=self._until())
            case WriteArtifact(name=name, data=data):
                files.atomic_write(self.places.results / name, data)
                return str(self.places.results / name)
            case CheckPatch(patch=patch):
                return self._check_patch(patch)
            case FreshCopy(patch=patch):
                self._left()
                return self._trees.fresh(patch)
            case StageFiles(items=items):
                return self._stage(items)
            case Unstage(staged=staged):
                # Hidden material: gone before anything else runs, never left for later.
                files.remove_tree(Path(staged.folder))
                return None
            case RunScript():
                return self._run(effect)
            case ApplyDiff(workspace=workspace, diff=diff, label=label):
                return self._apply_diff(workspace, Path(diff), label)
            case Discard(workspace=workspace):
                self._trees.discard(workspace)
                return None
            case ScanObjects(workspace=workspace):
                written = replace(effect, workspace=self._trees.written(workspace))
                return answer_observation(written, self.places.repo, self.deadline)
            case ReadTaskFile() | ReadRepoFiles():
                return answer_observation(effect, self.places.repo, self.deadline)
            case _:
                assert_never(effect)

    def _follow(self, plan: MayRunAhead) -> None:
        """Take the program's plan, when working ahead: the archive's child starts at once,
        its imports and its walk of the source tree overlapping the capture."""
        if self._ahead is None:
            return
        self._plan = plan
        self._ahead.planned = plan.fresh_copies
        baseline = self.places.baseline
        if plan.archive and baseline is not None:
            self._writer.warm_archive(baseline.path)

    def _capture(self) -> Result[Capture, CaptureError]:
        if self.places.source is None or self.places.baseline is None:
            return Failure(CaptureError("no source tree and baseline to capture"))
        if self._ahead is not None and not self._trees.maybe():
            self._ahead.prefetch(None)  # the copy needs no patch yet: it overlaps the capture
        if self._ahead is not None and self._plan.archive:
            # Nothing a grading does touches the source tree: it is already as it will be
            # after grading, and its archive (mostly copied from the baseline's) overlaps all.
            self._writer.start_archive()
        captured = git.capture(self.places.source, self.places.baseline, until=self._until())
        if is_successful(captured) and self._time_left():
            self._trees.patch_known(captured.unwrap().patch)  # a view's layer overlaps the proof
        if (
            self._ahead is not None
            and self._plan.patch_check
            and is_successful(captured)
            and self._time_left()
        ):
            patch = captured.unwrap().patch
            if patch.strip():  # the check only reads the grading repo: it overlaps the proof
                self._ahead.start_check(patch, self._git_check)
        return captured

    def _git_check(self, patch: bytes) -> Result[None, ApplyError]:
        return git.check_patch(self.places.repo, patch, until=self._until())

    def _check_patch(self, patch: bytes) -> Result[None, ApplyError]:
        checked = None if self._ahead is None else self._ahead.checked(patch)
        if checked is None:
            checked = self._git_check(patch)
        text = "applies\n" if is_successful(checked) else checked.failure().log
        log = self._write_log("apply", "git apply --check --binary final.patch", text)
        if is_successful(checked):
            return checked
        return Failure(ApplyError(checked.failure().log, log))

    def _apply_diff(self, workspace: Workspace, diff: Path, label: str) -> Result[None, ApplyError]:
        applied = self._trees.apply_diff(workspace, diff)
        text = "applied\n" if is_successful(applied) else applied.failure().log
        log = self._write_log(label, f"git apply -p1 {diff.name}", text)
        if is_successful(applied):
            return applied
        return Failure(ApplyError(applied.failure().log, log))

    def _stage(self, items: tuple[StageItem, ...]) -> Staged:
        return stage_items(self._next("stage"), items, self.places.task, self._owner(), self._check)

    def _env_policy(self) -> EnvPolicy:
        """The script environment: as asked, and never naming the results or the baseline."""
        policy = self.env or EnvPolicy()
        hidden = [str(self.places.results)]
        if self.places.baseline is not None:
            hidden.append(str(self.places.baseline.path))
        return replace(policy, hidden=(*policy.hidden, *hidden))

    def _restore_support(self) -> None:
        for path in self._support.restore():
            self._writer.note(f"restored the support folder {path}: a script had changed it")

    def _limit(self, label: str) -> float:
        """The script's time limit: its share of the time left
        (`ssegrade.internal.run.script_limit`)."""
        left = self._left()
        if left is None or self.deadline is None:
            return self.script_timeout if self.script_timeout is not None else math.inf
        return script_limit(left, self.deadline.seconds, self.later(label), self.script_timeout)

    def _run(self, effect: RunScript) -> ScriptResult:
        limit = self._limit(effect.label)
        if effect.limit is not None:  # its own limit, inside the grading's time
            limit = min(limit, effect.limit)
            if limit < effect.least:
                return ScriptResult(
                    code=-1, not_started=f"too little time left ({limit:.0f}s of the grading's)"
                )
        env = self._env_policy()
        if effect.env:  # set over the rest, as `--script-env NAME=VALUE` is
            env = replace(env, extra=(*env.extra, *effect.env))
        self._restore_support()
        try:
            result = run_script(
                self.runner,
                [effect.script, *effect.args],
                Path(effect.workspace.path),
                home=self._home(),
                limit=limit,
                log_path=self._log_path(effect.label),
                label=effect.label,
                session=self._token,
                spool=self.places.scratch,
                keep=(*self.places.support, *self._stage_of(effect.script)),
                env=env,
                memory=self.memory,
                containment=self.containment,
                view=self._trees.mount(effect.workspace),
                workspace=self._trees.describe(effect.workspace),
            )
        except LogWriteError as exc:
            if exc.result is None or exc.result.not_started is not None:
                raise
            # The script ended: its exit code is its check's outcome, whatever became of the
            # log (a full disk, perhaps of the script's own making, must not undo a failure).
            with contextlib.suppress(OSError):
                self._writer.note(f"{exc}: the outcome of {effect.label} stands without it")
            said = f"\nssegrade: {exc}; the exit code stands\n"
            result = replace(exc.result, stderr=exc.result.stderr + said)
        finally:
            self._restore_support()
        return result
