"""`verify_tasks`: grade each task's controls and judge whether it tells a fix from no fix.

Interpreter layer (SPEC §13). Each task is graded with the empty patch and with its reference
patch, `repeat` times each, on the same engines as `run_batch`; every run is kept in
`RESULTS/<task id>/<control>/<n>/`. The decision is the pure `ssegrade.verify.judge`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError
from returns.pipeline import is_successful

from interpreters.batch.driving import drive
from interpreters.batch.engines import (
    Done,
    EngineName,
    GradeFunction,
    Work,
    check_engine,
    make_engine,
)
from interpreters.batch.jobs import BadJobs, check_runner
from interpreters.grading import grade_patch
from interpreters.real import files
from interpreters.script_options import ScriptOptions
from interpreters.taskfolder import load_task
from ssegrade import CheckRecord, EvaluationResult, RuntimeResult, Task
from ssegrade.verify import CONTROLS, Control, ControlRun, Verification, judge

__all__ = ["ControlResult", "TaskVerification", "VerifyReport", "verify_tasks"]

_RECORD = TypeAdapter(CheckRecord)
"""A line of `checks.jsonl`, read with the model that writes it."""


@dataclass(frozen=True, slots=True)
class ControlResult:
    """One graded control run: where it was written, its grade, how long it took."""

    control: Control
    n: int
    folder: Path
    result: EvaluationResult
    seconds: float
    checks: tuple[CheckRecord, ...] = ()


@dataclass(frozen=True, slots=True)
class TaskVerification:
    """A task's verdict, problems, flaky checks and control runs."""

    task: str
    folder: Path
    verification: Verification
    runs: tuple[ControlResult, ...]

    def to_json(self) -> dict[str, Any]:
        """The task's entry in `verify --format json`."""
        v = self.verification
        return {
            "task": self.task,
            "folder": str(self.folder),
            "verdict": v.verdict,
            "problems": list(v.problems),
            "flaky": list(v.flaky),
            "runs": [
                {
                    "control": r.control,
                    "n": r.n,
                    "status": r.result.patch_result.status,
                    "result": r.result.patch_result.model_dump(mode="json"),
                    "seconds": round(r.seconds, 3),
                    "results": str(r.folder),
                }
                for r in self.runs
            ],
        }


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """Every task verified (all of them unless interrupted) and whether it was interrupted."""

    tasks: tuple[TaskVerification, ...]
    interrupted: bool

    @property
    def exit_code(self) -> int:
        """130 when interrupted, 1 when a task is not `ok`, else 0."""
        if self.interrupted:
            return 130
        return 0 if all(t.verification.verdict == "ok" for t in self.tasks) else 1


@dataclass
class _Subject:
    task: Task
    folder: Path
    repo: Path
    reference: bytes | None
    missing_reference: str | None
    runs: list[ControlResult] = field(default_factory=list)


def _default_grade() -> GradeFunction:
    return grade_patch


def _load(task_dir: Path, repo: Path | None) -> _Subject | str:
    task_dir = task_dir.absolute()
    loaded = load_task(task_dir)
    if not is_successful(loaded):
        return loaded.failure().message
    task = loaded.unwrap()
    if repo is None:
        if task.source is None:
            return f"{task_dir}: no project: give --repo or set `source` in config.yaml"
        repo = task_dir / task.source
    if not repo.is_dir():
        return f"{task_dir}: project not found: {repo}"
    reference: bytes | None = None
    missing: str | None = None
    if task.files.patch is not None:
        try:
            reference = (task_dir / task.files.patch).read_bytes()
        except OSError as exc:
            missing = f"reference patch {task.files.patch} cannot be read ({exc.strerror})"
    return _Subject(task, task_dir, repo.absolute(), reference, missing)


def verify_tasks(
    tasks: Sequence[Path],
    results: Path,
    *,
    repo: Path | None = None,
    repeat: int = 1,
    workers: int | None = None,
    engine: EngineName = "local",
    ray_address: str | None = None,
    timeout: int = 3600,
    script_timeout: int | None = None,
    runner_user: str | None = None,
    say: Callable[[str], None] = lambda _line: None,
    grade: GradeFunction | None = None,
    scripts: ScriptOptions | None = None,
) -> VerifyReport:
    """Verify every task (SPEC §13): grade the `empty` and `reference` controls `repeat`
    times each into `results/<task id>/<control>/<n>/` and judge them.

    The project graded is `repo`, else each task's `source`; `scripts` are the options of
    every script. Raises `BadJobs` (one line per problem) before anything runs when a task
    cannot be loaded.
    """
    check_engine(engine)
    subjects: list[_Subject] = []
    problems: list[str] = []
    for task_dir in tasks:
        loaded = _load(task_dir, repo)
        if isinstance(loaded, str):
            problems.append(loaded)
        elif any(s.task.id == loaded.task.id for s in subjects):
            problems.append(f"{loaded.folder}: task id {loaded.task.id} is given twice")
        else:
            subjects.append(loaded)
    if problems:
        raise BadJobs(problems)
    check_runner(runner_user)
    works: list[Work] = []
    where: list[tuple[_Subject, Control, int]] = []
    for subject in subjects:
        for control in CONTROLS:
            patch = b"" if control == "empty" else subject.reference
            if patch is None:
                continue
            for n in range(1, repeat + 1):
                folder = results.absolute() / subject.task.id / control / str(n)
                if folder.exists() or folder.is_symlink():
                    files.remove_tree(folder)
                folder.mkdir(parents=True)
                works.append(
                    Work(
                        key=len(works),
                        task=str(subject.folder),
                        patch=patch,
                        repo=str(subject.repo),
                        results=str(folder),
                        runtime=RuntimeResult(),
                        timeout=timeout,
                        script_timeout=script_timeout,
                        runner_user=runner_user,
                        scripts=scripts,
                    )
                )
                where.append((subject, control, n))

    def on_done(done: Done) -> list[Work]:
        subject, control, n = where[done.key]
        folder = Path(works[done.key].results)
        if done.result is None:
            files.remove_tree(folder)
            return []
        run = ControlResult(control, n, folder, done.result, done.seconds, _check_records(folder))
        subject.runs.append(run)
        finished = sum(len(s.runs) for s in subjects)
        say(
            f"[{finished}/{len(works)}] {subject.task.id} {control} {n}: "
            f"{done.result.patch_result.status} ({done.seconds:.1f} s)"
        )
        return []

    running = make_engine(engine, grade or _default_grade(), workers, ray_address)
    try:
        driven = drive(running, works, on_done, say=say)
    finally:
        running.close()
    for key in driven.killed:
        files.remove_tree(Path(works[key].results))
    expected = 2 * repeat
    judged = []
    for s in subjects:
        if driven.interrupted and len(s.runs) < (expected if s.reference is not None else repeat):
            continue
        judged.append(_judge(s))
    return VerifyReport(tuple(judged), driven.interrupted)


def _judge(subject: _Subject) -> TaskVerification:
    runs = sorted(subject.runs, key=lambda r: (CONTROLS.index(r.control), r.n))
    control_runs = [ControlRun(r.control, r.n, r.result.patch_result, r.checks) for r in runs]
    verdict = judge(
        subject.task,
        str(subject.folder),
        control_runs,
        has_reference=subject.task.files.patch is not None,
    )
    if subject.missing_reference is not None:
        verdict = Verification(
            "broken", (subject.missing_reference, *verdict.problems), verdict.flaky
        )
    return TaskVerification(subject.task.id, subject.folder, verdict, tuple(runs))


def _check_records(folder: Path) -> tuple[CheckRecord, ...]:
    """The run's `checks.jsonl`, lines that cannot be read left out."""
    try:
        lines = (folder / "checks.jsonl").read_bytes().splitlines()
    except OSError:
        return ()
    records: list[CheckRecord] = []
    for line in lines:
        try:
            records.append(_RECORD.validate_json(line))
        except ValidationError:
            continue
    return tuple(records)
