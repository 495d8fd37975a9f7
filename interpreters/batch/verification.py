"""`verify_tasks`: grade each task's controls and judge whether it tells a fix from no fix.

Interpreter layer (SPEC §13). Each task is graded with the empty patch and with its reference
patch, `repeat` times each, on the same engines as `run_batch`; every run is kept in
`RESULTS/<task id>/<control>/<n>/`. As root, a staged copy of each task folder is graded
(`interpreters.batch.staging`): the author's files keep their owners and modes. The decision
is the pure `ssegrade.batch.judge`; each problem is shown with the log of the check that
failed (`interpreters.batch.evidence`). With `adversarial`, the task's canonical cheats
(`interpreters.batch.verify_cheats`) are graded as a third control, each `repeat` times, into
`RESULTS/<task id>/adversarial/<cheat>/<n>/`, and judged by `ssegrade.batch._verify_adversarial`.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from returns.pipeline import is_successful

from interpreters.app.grading import HeldGrade
from interpreters.batch.driving import drive
from interpreters.batch.engines import (
    Done,
    EngineName,
    GradeFunction,
    Landing,
    Work,
    check_engine,
    make_engine,
)
from interpreters.batch.evidence import log_head
from interpreters.batch.jobs import BadJobs, check_runner, task_repo
from interpreters.batch.staging import TaskCopyFailed, staged_tasks
from interpreters.batch.verify_cheats import task_cheats
from interpreters.batch.verify_report import (
    CheatResult,
    ControlResult,
    TaskVerification,
    VerifyReport,
)
from interpreters.real.resultsfolder.holding import Hold
from interpreters.real.resultsfolder.runs import FolderHeld, FolderRefused, RunFolders
from interpreters.real.runner import Runner
from interpreters.real.runner.options import ScriptOptions
from interpreters.real.taskfolder import load_task
from interpreters.real.untrusted import NotReadable, read_regular
from ssegrade import RuntimeResult, Task
from ssegrade.batch import (
    CHEATS,
    CONTROLS,
    Cheat,
    CheatRun,
    Control,
    ControlRun,
    Verification,
    judge,
    judge_cheats,
)
from ssegrade.internal.ssebench import task_problems

__all__ = ["CheatResult", "ControlResult", "TaskVerification", "VerifyReport", "verify_tasks"]

_log = logging.getLogger(__name__)


@dataclass
class _Subject:
    task: Task
    folder: Path
    repo: Path
    reference: bytes | None
    missing_reference: str | None
    runs: list[ControlResult] = field(default_factory=list)
    cheats: tuple[Cheat, ...] | None = None
    """The canonical cheats written for the task (`--adversarial`; None: not asked)."""
    cheat_runs: list[CheatResult] = field(default_factory=list)
    graded: Path | None = None
    """The folder graded: a staged copy of `folder` (as root), or `folder` itself."""


def _load(task_dir: Path, repo: Path | None, runner: Runner) -> _Subject | str:
    task_dir = task_dir.absolute()
    loaded = load_task(task_dir)
    if not is_successful(loaded):
        return loaded.failure().message
    task = loaded.unwrap()
    if repo is None:
        found = task_repo(task, task_dir, runner)
        if isinstance(found, str):
            return f"{task_dir}: {found}"
        repo = found
    elif not repo.is_dir():
        return f"{task_dir}: project not found: {repo}"
    reference: bytes | None = None
    missing: str | None = None
    if task.files.patch is not None:
        try:
            reference = read_regular(task_dir / task.files.patch)
        except NotReadable as exc:
            missing = f"reference patch {task.files.patch} cannot be read ({exc.why})"
    return _Subject(task, task_dir, repo.absolute(), reference, missing)


def verify_tasks(
    tasks: Sequence[Path],
    results: Path | None,
    *,
    repo: Path | None = None,
    repeat: int = 1,
    workers: int | None = None,
    engine: EngineName = "local",
    ray_address: str | None = None,
    timeout: int = 3600,
    script_timeout: int | None = None,
    runner_user: str | None = None,
    checks: bool = False,
    grade: GradeFunction | None = None,
    scripts: ScriptOptions | None = None,
    adversarial: bool = False,
    cheats: Collection[str] | None = None,
) -> VerifyReport:
    """Verify every task (SPEC §13): grade the `empty` and `reference` controls `repeat`
    times each into `results/<task id>/<control>/<n>/` (`results` None: a new scratch
    folder) and judge them; with `adversarial`, also each canonical cheat (those named in
    `cheats`, default all) into `results/<task id>/adversarial/<cheat>/<n>/`. It logs
    (`interpreters.real.logs`) where the results are kept, once the input is good, then one
    line per run; with `checks`, each grading's own log (each check of each run) is shown on
    its worker's stderr.

    The project graded is `repo`, else each task's `source`, read as root only when the
    account the task speaks for could read it (`interpreters.batch.jobs.task_repo`);
    `scripts` are the options of every script. As
    root, a staged copy of each task folder is graded: the author's files are left as they
    are. Raises `BadJobs` (one line per problem) before anything runs, and before any
    results folder is made, when a task cannot be loaded or copied, `results` is not
    private (a link, another user's, writable by group or others) or another live grading
    holds one of its run folders.
    """
    check_engine(engine, ray_address)
    unknown = sorted(set(cheats or ()) - set(CHEATS))
    if unknown:
        raise BadJobs([f"no cheat named {name} (cheats: {', '.join(CHEATS)})" for name in unknown])
    runner = check_runner(runner_user)
    subjects: list[_Subject] = []
    problems: list[str] = []
    for task_dir in tasks:
        loaded = _load(task_dir, repo, runner)
        if isinstance(loaded, str):
            problems.append(loaded)
        elif any(s.task.id == loaded.task.id for s in subjects):
            problems.append(f"{loaded.folder}: task id {loaded.task.id} is given twice")
        else:
            subjects.append(loaded)
    if problems:
        raise BadJobs(problems)
    for subject in subjects if adversarial else ():
        subject.cheats = task_cheats(
            subject.task, subject.folder, subject.repo, subject.reference, cheats
        )
    for subject in subjects:  # graded all the same; SSEBench itself could not run it
        refused = task_problems(subject.task)
        if refused:
            config = subject.folder / "config.yaml"
            _log.warning(
                "warning: %s: SSEBench's task model would refuse it: %s", config, "; ".join(refused)
            )
    options = _Options(workers, engine, ray_address, timeout, script_timeout, runner_user, scripts)
    try:
        with staged_tasks([s.folder for s in subjects], stage=runner.isolated) as copies:
            for subject in subjects:
                subject.graded = copies[subject.folder]
            folders = _results(results)
            _log.info("results kept in %s", folders.root)
            try:
                return _verify(
                    subjects, folders, repeat, grade or HeldGrade(folders.token, checks), options
                )
            finally:
                folders.close()
    except TaskCopyFailed as exc:
        raise BadJobs(exc.problems) from None


def _results(results: Path | None) -> RunFolders:
    """The results folder, private (a new scratch folder when `results` is None)."""
    if results is None:
        results = Path(tempfile.mkdtemp(prefix="ssegrade-verify-"))
    try:
        return RunFolders(results)
    except FolderRefused as exc:
        raise BadJobs([f"results folder {exc}"]) from None


@dataclass(frozen=True, slots=True)
class _Options:
    workers: int | None
    engine: EngineName
    ray_address: str | None
    timeout: int
    script_timeout: int | None
    runner_user: str | None
    scripts: ScriptOptions | None = None


def _verify(
    subjects: list[_Subject],
    folders: RunFolders,
    repeat: int,
    grade: GradeFunction,
    options: _Options,
) -> VerifyReport:
    works: list[Work] = []
    where: list[tuple[_Subject, str, int]] = []
    busy: list[str] = []
    for subject in subjects:
        for control, patch in _patches(subject):
            for n in range(1, repeat + 1):
                parts = (subject.task.id, *control.split("/"), str(n))
                folder = folders.root.joinpath(*parts)
                try:
                    if folders.look(parts).held:
                        busy.append(f"{folder}: being written by another grading")
                except FolderRefused as exc:
                    busy.append(str(exc))
                works.append(
                    Work(
                        key=len(works),
                        task=str(subject.graded or subject.folder),
                        patch=patch,
                        repo=str(subject.repo),
                        results=str(folder),
                        runtime=RuntimeResult(),
                        timeout=options.timeout,
                        script_timeout=options.script_timeout,
                        runner_user=options.runner_user,
                        scripts=options.scripts,
                    )
                )
                where.append((subject, control, n))
    if busy:
        raise BadJobs(busy)
    holds: dict[int, Hold] = {}

    def start(work: Work) -> None:
        subject, control, n = where[work.key]
        try:
            holds[work.key] = folders.prepare((subject.task.id, *control.split("/"), str(n)))
        except (FolderHeld, FolderRefused, OSError) as exc:
            _log.warning("%s %s %s: %s", subject.task.id, control, n, exc)

    def on_done(done: Done) -> list[Work]:
        subject, control, n = where[done.key]
        folder = Path(works[done.key].results)
        held = holds.pop(done.key, None)
        if done.result is None:
            if held is not None:
                folders.remove(held)
            return []
        if held is not None:
            held.unmark()
            held.release()
        if control in CONTROLS:
            run = ControlResult(
                _control(control), n, folder, done.result, done.seconds, done.checks, done.guard
            )
            subject.runs.append(run)
        else:
            cheat = control.removeprefix("adversarial/")
            subject.cheat_runs.append(
                CheatResult(cheat, n, folder, done.result, done.seconds, done.guard)
            )
        finished = sum(len(s.runs) + len(s.cheat_runs) for s in subjects)
        status = done.result.patch_result.status
        run_name = f"{subject.task.id} {control} {n}"
        _log.info("[%d/%d] %s: %s (%.1f s)", finished, len(works), run_name, status, done.seconds)
        return []

    landing = Landing(folders.token, holds)
    running = make_engine(options.engine, grade, options.workers, options.ray_address, landing)
    try:
        try:
            driven = drive(running, works, on_done, on_start=start)
        finally:
            running.close()
        for key in driven.killed:
            held = holds.pop(key, None)
            if held is not None:
                folders.remove(held)
    finally:
        for held in holds.values():
            held.release()
    judged = []
    for s in subjects:
        if driven.interrupted and len(s.runs) + len(s.cheat_runs) < repeat * len(_patches(s)):
            continue
        judged.append(_judge(s))
    return VerifyReport(tuple(judged), driven.interrupted)


def _patches(subject: _Subject) -> list[tuple[str, bytes]]:
    """What is graded for `subject`: each control's patch (the empty patch, the reference
    patch when there is one) and each cheat's as `adversarial/<cheat>`."""
    graded = [("empty", b"")]
    if subject.reference is not None:
        graded.append(("reference", subject.reference))
    graded += [(f"adversarial/{c.name}", c.patch) for c in subject.cheats or () if c.patch]
    return graded


def _control(name: str) -> Control:
    return "empty" if name == "empty" else "reference"


def _judge(subject: _Subject) -> TaskVerification:
    runs = sorted(subject.runs, key=lambda r: (CONTROLS.index(r.control), r.n))
    control_runs = [ControlRun(r.control, r.n, r.result.patch_result, r.checks) for r in runs]
    verdict = judge(
        subject.task,
        str(subject.graded or subject.folder),
        control_runs,
        has_reference=subject.task.files.patch is not None,
    )
    if subject.missing_reference is not None:
        verdict = Verification(
            "broken",
            (subject.missing_reference, *verdict.problems),
            verdict.flaky,
            verdict.evidence,
        )
    heads = tuple(log_head(e.log) for e in verdict.evidence)
    cheat_runs = tuple(sorted(subject.cheat_runs, key=lambda r: (CHEATS.index(r.cheat), r.n)))
    outcomes = None
    if subject.cheats is not None:
        graded = [
            CheatRun(
                r.cheat,
                r.n,
                r.result.patch_result.status,
                None if r.guard is None else r.guard.flags,
            )
            for r in cheat_runs
        ]
        outcomes = judge_cheats(subject.cheats, graded)
    return TaskVerification(
        subject.task.id, subject.folder, verdict, tuple(runs), heads, outcomes, cheat_runs
    )
