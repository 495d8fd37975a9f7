"""The local real interpreter: answers system effects with git, copies, processes and files.

Wrap it with `ssegrade.bencher_interpreter` to answer grading effects too; the evaluator and
the daemon both do.

The evaluation's one time limit is the run loop's `Deadline`; this interpreter only bounds its
blocking work by it: every git command is killed when it is reached, copies and the archive
check it between batches, scripts get the time left. Working ahead (`LocalSystem.ahead`, for the
evaluator, whose trees do not change while it grades), the archive of the source tree is
written in the background from the end of the capture on, the next fresh copy is made while a
script runs, and discarded copies are removed in the background.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, assert_never

from returns.pipeline import is_successful
from returns.result import Failure, Result, Success

from interpreters.real import files, git
from interpreters.real.runner import EnvPolicy, Runner, kill_session, new_session, run_script
from interpreters.real.support import SupportFolders
from ssegrade import (
    ApplyDiff,
    ApplyError,
    Archive,
    ArchiveError,
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
    FreshCopy,
    NewSession,
    Notify,
    ProvePatch,
    RunScript,
    ScriptResult,
    Staged,
    StageFiles,
    StageItem,
    SystemEffect,
    TimeLimitReached,
    Unstage,
    Workspace,
    WriteArtifact,
    WriteResult,
)

__all__ = ["LocalSystem", "Places", "ResultsWriter", "check_label", "describe_check"]


@dataclass(frozen=True, slots=True)
class Places:
    """Where a grading works: the task, the agent's tree and its baseline (none when a
    recorded patch is graded), the grading repo, the results folder, a scratch folder for
    copies and staged files, and the task's support folders."""

    task: Path
    source: Path | None
    baseline: git.Baseline | None
    repo: Path
    results: Path
    scratch: Path
    support: tuple[Path, ...] = ()


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

    def note(self, message: str) -> None:
        """Append a line to `logs/notes.log`."""
        _append(self.results / "logs" / "notes.log", f"{message}\n")

    def __call__(self, effect: Effect[Any]) -> object:
        """Answer `Archive`, `CheckFinished`, `Notify` or `WriteResult`."""
        if not isinstance(effect, Reported):
            raise TypeError(f"not an effect the evaluator answers locally: {effect!r}")
        match effect:
            case Archive():
                if self.source is None:
                    return Failure(ArchiveError("no source tree (a recorded patch was graded)"))
                archived = files.archive(self.source, self.results / "source.tar.gz")
                if is_successful(archived):
                    return Success(None)
                return Failure(ArchiveError(archived.failure()))
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
                files.atomic_write(self.results / "result.json", result.to_json())
                return None
            case _:
                assert_never(effect)


class _Stopped(Exception):
    """Background work that is no longer wanted."""


@dataclass(slots=True)
class _Job:
    """Background work (a fresh copy made ahead, the archive) and how to stop it."""

    future: Future[Any]
    stop: threading.Event
    path: Path | None = None
    patch: bytes | None = None


@dataclass(slots=True)
class LocalSystem:
    """Answers every system effect for real. Scripts run as `runner`, inside the time limits:
    the whole evaluation's `deadline` (none: no limit), each script at most `script_timeout`.

    With `ahead`, work that does not depend on a script's outcome is done in the background
    (see the module's docstring); `close` must then be called at the end.
    """

    places: Places
    runner: Runner
    deadline: Deadline | None = None
    script_timeout: float | None = None
    say: Callable[[str], None] = print
    started: Callable[[str], None] | None = None
    env: EnvPolicy | None = None
    memory: int | None = None
    ahead: bool = False
    _count: int = field(init=False, default=0)
    _session: int = field(init=False, default=0)
    _token: str = field(init=False, default="")
    _writer: ResultsWriter = field(init=False)
    _support: SupportFolders = field(init=False)
    _pool: ThreadPoolExecutor | None = field(init=False, default=None)
    _prefetched: _Job | None = field(init=False, default=None)
    _archive: files.ArchiveProcess | None = field(init=False, default=None)
    _removals: list[Future[None]] = field(init=False, default_factory=list)
    _checked: tuple[bytes, Future[Result[None, ApplyError]]] | None = field(
        init=False, default=None
    )

    def __post_init__(self) -> None:
        self._writer = ResultsWriter(
            self.places.source, self.places.results, self.say, self.started
        )
        for folder in (self.places.results / "logs", self.places.scratch):
            folder.mkdir(parents=True, exist_ok=True)
        self.places.scratch.chmod(0o711)
        self._support = SupportFolders(
            self.places.support,
            self.places.scratch / "support",
            open_to_runner=self.runner.isolated,
        )
        self._new_home()
        if self.ahead:
            # Copies made ahead and trees on their way out wait where the runner cannot find
            # them (a script could otherwise change the next check's copy in advance): a folder
            # it cannot list, under names it cannot guess. It can pass through, so that git
            # can apply the patch as the runner in a copy made ahead.
            self._private().mkdir(mode=0o711)
            self._pool = ThreadPoolExecutor(4, thread_name_prefix="ahead")

    def log_notes(self, notes: list[str]) -> None:
        """Keep notes said before grading began (warnings about its inputs) in the log."""
        for message in notes:
            self._writer.note(message)

    def stop(self) -> None:
        """Kill every process of this system's runner session (as root: of the runner)."""
        kill_session(self.runner, self._token)

    def close(self) -> None:
        """Stop and wait for the background work; remove what it left in the scratch folder."""
        if self._pool is None:
            return
        self._drop_prefetched()
        if self._archive is not None:
            self._archive.stop()
            self._archive = None
        self._pool.shutdown(wait=True)
        self._pool = None
        for removal in self._removals:
            error = removal.exception()
            if error is not None:
                self._writer.note(f"could not remove a scratch tree: {error}")
        self._removals.clear()

    # -------------------------------------------------------------- helpers

    def _next(self, stem: str) -> Path:
        self._count += 1
        return self.places.scratch / f"{stem}-{self._count}"

    def _log_path(self, label: str) -> Path:
        self._count += 1
        return self.places.results / "logs" / f"{self._count:02d}-{label}.log"

    def _owner(self) -> tuple[int, int] | None:
        return (self.runner.uid, self.runner.gid) if self.runner.isolated else None

    def _home(self) -> Path:
        return self.places.scratch / f"session-{self._session}" / "home"

    def _private(self) -> Path:
        return self.places.scratch / "private"

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

    def _until(self) -> float | None:
        """The deadline as a `time.monotonic()` instant: when git commands are killed."""
        return None if self.deadline is None else time.monotonic() + self.deadline.left()

    def _write_log(self, label: str, command: str, text: str) -> str:
        path = self._log_path(label)
        files.atomic_write(path, f"$ {command}\n{text}".encode())
        return str(path)

    def _remove(self, path: Path) -> None:
        """Remove a scratch tree: in the background when working ahead, out of the runner's
        reach first."""
        if self._pool is None:
            files.remove_tree(path)
            return
        away = self._private() / f"trash-{secrets.token_hex(16)}"
        try:
            os.rename(path, away)
        except FileNotFoundError:
            return
        self._removals.append(self._pool.submit(files.remove_tree, away))

    # -------------------------------------------------------------- effects

    def __call__(self, effect: Effect[Any]) -> object:
        """Answer one system effect."""
        if not isinstance(effect, SystemEffect):
            raise TypeError(f"not a system effect: {effect!r}")
        return self._answer(effect)

    def _answer(self, effect: SystemEffect) -> object:
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
                return self._fresh_copy(patch)
            case StageFiles(items=items):
                return self._stage(items)
            case Unstage(staged=staged):
                # Hidden material: gone before anything else runs, never left for later.
                files.remove_tree(Path(staged.folder))
                return None
            case RunScript():
                return self._run(effect)
            case ApplyDiff(workspace=workspace, diff=diff, label=label):
                return self._apply_diff(Path(workspace.path), Path(diff), label)
            case Discard(workspace=workspace):
                self._remove(Path(workspace.path))
                return None
            case Archive():
                return self._archived()
            case CheckStarted() | CheckFinished() | Notify() | WriteResult():
                return self._writer(effect)
            case _:
                assert_never(effect)

    def _capture(self) -> Result[Capture, CaptureError]:
        if self.places.source is None or self.places.baseline is None:
            return Failure(CaptureError("no source tree and baseline to capture"))
        if self._pool is not None and self._prefetched is None:
            self._prefetch(None)  # the copy needs no patch yet: it overlaps the capture
        captured = git.capture(self.places.source, self.places.baseline, until=self._until())
        if self._pool is not None and is_successful(captured) and captured.unwrap().patch.strip():
            # The check against the grading repo only reads it: it overlaps the proof.
            patch = captured.unwrap().patch
            until = self._until()
            future = self._pool.submit(git.check_patch, self.places.repo, patch, until=until)
            self._checked = (patch, future)
        if self._pool is not None and self._archive is None and self._time_left():
            # No check touches the source tree: it is already as it will be after grading.
            # A child process writes it: it shares no lock with this one, and stops at a kill.
            with contextlib.suppress(OSError):  # then written in the foreground at the end
                dest = self.places.results / ARCHIVE_NAME
                self._archive = files.start_archive(self.places.source, dest)
        return captured

    def _archived(self) -> Result[None, ArchiveError]:
        self._drop_prefetched()  # the checks are over
        started, self._archive = self._archive, None
        if started is None:
            if self.places.source is None:
                return Failure(ArchiveError("no source tree (a recorded patch was graded)"))
            dest = self.places.results / ARCHIVE_NAME
            return _archive(self.places.source, dest, self._check)
        finished = started.finish(None if self.deadline is None else self.deadline.left())
        if is_successful(finished):
            return Success(None)
        return Failure(ArchiveError(finished.failure()))

    def _checker(self, stop: threading.Event) -> Callable[[], None]:
        def check() -> None:
            if stop.is_set():
                raise _Stopped
            self._check()

        return check

    def _check_patch(self, patch: bytes) -> Result[None, ApplyError]:
        ahead, self._checked = self._checked, None
        if ahead is not None and ahead[0] == patch:
            try:
                checked = ahead[1].result(timeout=self._left())
            except FutureTimeout:
                self._check()
                raise
        else:
            checked = git.check_patch(self.places.repo, patch, until=self._until())
        text = "applies\n" if is_successful(checked) else checked.failure().log
        log = self._write_log("apply", "git apply --check --binary final.patch", text)
        if is_successful(checked):
            return checked
        return Failure(ApplyError(checked.failure().log, log))

    def _make_copy(self, dest: Path, patch: bytes | None, check: Callable[[], None]) -> None:
        """A fresh copy of the grading repo at `dest`, with `patch` applied in it (if any)."""
        files.fresh_copy(self.places.repo, dest, self._owner(), check=check)
        check()
        if patch:
            applied = git.apply_patch(dest, patch, run_as=self._owner(), until=self._until())
            check()
            if not is_successful(applied):
                raise RuntimeError(
                    "the patch applies to the grading repo but not to a fresh copy of it: "
                    + applied.failure().log.strip()
                )

    def _fresh_copy(self, patch: bytes) -> Workspace:
        self._left()
        dest = self._next("copy")
        made = self._take_prefetched(patch)
        if made is None:
            try:
                self._make_copy(dest, patch, self._check)
            except TimeLimitReached:
                self._remove(dest)
                raise
        else:
            os.rename(made, dest)
        if self._pool is not None:
            self._prefetch(patch)
        return Workspace(str(dest))

    def _prefetch(self, patch: bytes | None) -> None:
        """Start the next fresh copy in the background, out of the runner's reach."""
        assert self._pool is not None
        path = self._private() / f"copy-{secrets.token_hex(16)}"
        stop = threading.Event()
        future = self._pool.submit(self._make_copy, path, patch, self._checker(stop))
        self._prefetched = _Job(future, stop, path, patch)

    def _take_prefetched(self, patch: bytes) -> Path | None:
        """The copy made ahead, with `patch` applied; None when there is none to use."""
        job, self._prefetched = self._prefetched, None
        if job is None or job.path is None:
            return None
        if job.patch is not None and job.patch != patch:
            self._drop(job)
            return None
        try:
            job.future.result(timeout=self._left())
        except (FutureTimeout, TimeLimitReached):
            self._drop(job)
            raise
        except Exception:  # noqa: BLE001 - copied again in the foreground, which says why
            self._drop(job)
            return None
        if job.patch is None and patch:
            try:
                self._make_patch_applied(job.path, patch)
            except BaseException:
                self._remove(job.path)
                raise
        return job.path

    def _make_patch_applied(self, path: Path, patch: bytes) -> None:
        applied = git.apply_patch(path, patch, run_as=self._owner(), until=self._until())
        if not is_successful(applied):
            raise RuntimeError(
                "the patch applies to the grading repo but not to a fresh copy of it: "
                + applied.failure().log.strip()
            )

    def _drop(self, job: _Job) -> None:
        """Stop a copy made ahead that nobody will use and remove it in the background."""
        assert self._pool is not None
        assert job.path is not None
        job.stop.set()
        path = job.path

        def remove() -> None:
            with contextlib.suppress(Exception):
                job.future.result()
            files.remove_tree(path)

        self._removals.append(self._pool.submit(remove))

    def _drop_prefetched(self) -> None:
        job, self._prefetched = self._prefetched, None
        if job is not None:
            self._drop(job)

    def _apply_diff(self, workspace: Path, diff: Path, label: str) -> Result[None, ApplyError]:
        applied = git.apply_diff(workspace, diff, run_as=self._owner(), until=self._until())
        text = "applied\n" if is_successful(applied) else applied.failure().log
        log = self._write_log(label, f"git apply -p1 {diff.name}", text)
        if is_successful(applied):
            return applied
        return Failure(ApplyError(applied.failure().log, log))

    def _stage(self, items: tuple[StageItem, ...]) -> Staged:
        folder = self._next("stage")
        folder.mkdir(mode=0o700)
        owner = self._owner()
        staged: list[str] = []
        for index, item in enumerate(items):
            slot = folder / str(index)
            slot.mkdir(mode=0o700)
            if item.along is None:
                target = slot / Path(item.path).name
                shutil.copy2(item.path, target, follow_symlinks=False)
                if owner is not None:
                    os.chown(target, *owner, follow_symlinks=False)
            else:
                along = Path(item.along)
                files.fresh_copy(along, slot / along.name, owner, check=self._check)
                target = slot / along.name / Path(item.path).relative_to(along)
            if owner is not None:
                os.chown(slot, *owner)
            staged.append(str(target))
        if owner is not None:
            os.chown(folder, *owner)
        return Staged(str(folder), tuple(staged))

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

    def _run(self, effect: RunScript) -> ScriptResult:
        self._restore_support()
        limits = [x for x in (self._left(), self.script_timeout) if x is not None]
        try:
            result = run_script(
                self.runner,
                [effect.script, *effect.args],
                Path(effect.workspace.path),
                home=self._home(),
                limit=min(limits, default=math.inf),
                log_path=self._log_path(effect.label),
                label=effect.label,
                session=self._token,
                spool=self.places.scratch,
                keep=self.places.support,
                env=self._env_policy(),
                memory=self.memory,
            )
        finally:
            self._restore_support()
        return result


ARCHIVE_NAME = "source.tar.gz"


def _archive(source: Path, dest: Path, check: Callable[[], None]) -> Result[None, ArchiveError]:
    """`files.archive`, its stops made failures: the archive is whole or absent."""
    try:
        archived = files.archive(source, dest, check=check)
    except TimeLimitReached:
        return Failure(ArchiveError("not finished within the time limit"))
    if is_successful(archived):
        return Success(None)
    return Failure(ArchiveError(archived.failure()))
