"""Grading on this machine: one entry, `grade(request) -> Graded`, that `ssegrade evaluate`,
verify, batch workers and Ray nodes share.

Application layer. `grade` checks the request's inputs, holds its results folder, and runs
the pure grading program over the local real interpreter in the one set-up
(`interpreters.app.setup.grading_setup`), capturing the agent's tree or grading a recorded
patch; what the grading did (each check's record, the notes, the guard's report) comes back
in the `Graded` record, observed as it ran, never read back from the results folder.
`grade_patch` is the documented convenience for a recorded patch, a thin wrapper building a
`Request`; `HeldGrade` is the entry for a batch worker. Progress and notes are `logging`
records (`interpreters.real.logs`); errors are `InputError`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath
from typing import Any

from interpreters.app.setup import (
    InputError,
    SetUp,
    Sources,
    graded,
    grading_setup,
    hold_results,
    load_inputs,
)
from interpreters.app.trace import TraceRecorder, recording
from interpreters.real import resultsfolder
from interpreters.real.files import remove_tree
from interpreters.real.local import LocalSystem
from interpreters.real.logs import speaking
from interpreters.real.runner import ContainmentPolicy, EnvPolicy
from interpreters.real.runner.options import ScriptOptions
from interpreters.real.untrusted import NotReadable, read_regular
from ssegrade import (
    BenchSession,
    Deadline,
    Effect,
    EvaluationResult,
    GradeOptions,
    RuntimeResult,
    bencher_interpreter,
    run,
)
from ssegrade import grade as grading_program
from ssegrade.internal.checks import scripts_after
from ssegrade.internal.effects import CheckFinished, CheckRecord, Notify, WriteGuard
from ssegrade.internal.guard_document import GuardReport
from ssegrade.internal.program import Seen
from ssegrade.internal.request import Graded, Limits, Request
from ssegrade.internal.verdict import Crashed, not_graded

__all__ = [
    "HeldGrade",
    "InputError",
    "ResultsUnavailable",
    "Sources",
    "grade",
    "grade_patch",
    "read_patch",
]


class ResultsUnavailable(InputError):
    """The results folder cannot be used: another live grading holds it, it is not private,
    or it holds an earlier grade."""


def _empty(folder: Path) -> None:
    """Remove what `folder` holds (a grading's scratch: its copies, its sessions), keeping it."""
    for entry in os.scandir(folder):
        remove_tree(Path(entry.path))


def _path(path: PurePath | None) -> Path | None:
    return None if path is None else Path(path)


@dataclass
class _Observed:
    """What a grading did, as its run loop saw it: each check's record, the notes, the
    guard's report (effects answered without an error only)."""

    notes: list[str]
    checks: list[CheckRecord] = field(default_factory=list)
    guard: GuardReport | None = None

    def observe(self, effect: Effect[Any], answer: object, error: BaseException | None) -> None:
        """Keep the record an effect carried once it was answered."""
        del answer
        if error is not None:
            return
        if isinstance(effect, CheckFinished):
            self.checks.append(effect.record)
        elif isinstance(effect, Notify):
            self.notes.append(effect.message)
        elif isinstance(effect, WriteGuard):
            self.guard = effect.report

    def graded(self, document: EvaluationResult) -> Graded:
        """The record of the grading that wrote `document`."""
        return Graded(document, tuple(self.checks), tuple(self.notes), self.guard)


def grade(request: Request[ScriptOptions]) -> Graded:
    """Grade on this machine as `request` asks, into its results folder (made private and
    held while grading, `interpreters.app.setup.hold_results`), within its time limit from
    the moment it is set up: capture the agent's tree against its baseline, or take the
    recorded patch; the grading repo is never modified, so any number of patches can be
    graded from it, one after the other or at the same time. Its scripts are run and
    contained as `request.scripts` says; with `request.trace`, every step is recorded there.
    This process's guardian removes the scratch folder, and whatever the grading left
    running if this process dies (see `interpreters.real.runner.guardian`).

    Raises `InputError` (one line) when the task is rejected, the tree, the patch or the repo
    is missing, or the results folder cannot be used (`ResultsUnavailable`); a refused
    grading leaves no results folder it made. Once grading started, every failure is an
    `error` grade in `result.json`, and in the answer.
    """
    recorded = request.patch
    inputs = load_inputs(
        Path(request.task),
        _path(request.source),
        request.runner_user,
        need_source=recorded is None,
    )
    repo = _path(request.repo)
    if recorded is not None and repo is not None and not repo.is_dir():
        raise InputError(f"grading repo not found: {repo}")
    results = Path(request.results)
    made = not os.path.lexists(results.absolute())
    try:
        held = hold_results(results, force=request.force, token=request.holder)
    except InputError as exc:
        raise ResultsUnavailable(str(exc)) from None
    try:
        sources = Sources(patch=recorded, repo=repo, baseline=_path(request.baseline))
        with (
            recording(_path(request.trace)) as recorder,
            grading_setup(inputs, sources, held.path) as ready,
        ):
            return _graded(ready, request, recorder)
    except InputError:
        if made:  # refused: no empty results folder is left behind
            resultsfolder.discard_unused(held.path)
        raise
    finally:
        held.release()


def _graded(ready: SetUp, request: Request[ScriptOptions], record: TraceRecorder | None) -> Graded:
    """Run the grading program in the set-up `ready`; its document is written whatever
    happens (`graded`)."""
    seen = Seen()
    observed = _Observed(list(ready.notes))
    deadline = Deadline.starting(request.limits.timeout, time.monotonic)
    document = graded(
        ready.places.results,
        request.runtime,
        lambda: _run(ready, request, deadline, (seen, observed), record),
        seen,
        free=lambda: _empty(ready.places.scratch),
    )
    return observed.graded(document)


def _run(
    ready: SetUp,
    request: Request[ScriptOptions],
    deadline: Deadline,
    watch: tuple[Seen, _Observed],
    record: TraceRecorder | None,
) -> EvaluationResult:
    task, folder = ready.inputs.task, str(ready.inputs.task_dir)
    seen, observed = watch
    scripts = request.scripts
    system = LocalSystem(
        ready.places,
        ready.inputs.runner,
        deadline=deadline,
        script_timeout=request.limits.script_timeout,
        ahead=True,
        later=lambda label: scripts_after(task.checks, len(task.files.poc), label),
        env=scripts.env,
        memory=scripts.memory,
        containment=scripts.containment,
    )
    try:
        system.log_notes(ready.notes)
        options = GradeOptions(task=task, folder=folder, runtime=request.runtime)
        interpret = bencher_interpreter(
            BenchSession(task, folder, recorded=request.patch), system, deadline
        )
        program = grading_program(options, seen)
        if record is None:
            return run(program, interpret, deadline, observed.observe)
        record.begin(options)

        def both(effect: Effect[Any], answer: object, error: BaseException | None) -> None:
            observed.observe(effect, answer, error)
            record.observe(effect, answer, error)

        try:
            result = run(program, interpret, deadline, both)
        except Exception as exc:
            record.end(error=exc)
            raise
        record.end(result)
        return result
    finally:
        system.close(remove=False)


def grade_patch(
    task: Path,
    patch: Path | bytes,
    repo: Path,
    results: Path,
    *,
    timeout: int = 3600,
    script_timeout: int | None = None,
    runner_user: str | None = None,
    script_env: Sequence[tuple[str, str]] = (),
    clean_env: bool = False,
    script_memory: int | None = None,
    runtime: RuntimeResult | None = None,
    force: bool = False,
    holder: str | None = None,
    containment: ContainmentPolicy | None = None,
) -> EvaluationResult:
    """Grade a recorded patch against a pristine grading repo, as `ssegrade evaluate --patch`
    does, and write `results/` (`result.json`, `final.patch`, `commits.log`, `checks.jsonl`,
    `logs/`): `grade` with the `Request` these arguments make, its document. The repo is
    never modified, so any number of patches can be graded from it, one after the other or
    at the same time. `script_env` adds `(NAME, VALUE)` pairs to the scripts' environment,
    `clean_env` starts it from `PATH` and the locale only, `script_memory` caps each
    script's memory (bytes), `containment` says how scripts are contained (default: `full`
    as root). Progress and notes are `logging` records of the `interpreters` logger
    (`interpreters.real.logs`).

    `results` is made private and held while grading (`interpreters.app.setup.hold_results`);
    `holder` is the token of the batch driver that holds it already. Raises `InputError`
    (one line) when the task is rejected, the patch or the repo is missing, or `results`
    cannot be used (`ResultsUnavailable`): another live grading holds it, it is not private,
    or it holds an earlier grade and `force` is not set.

    >>> grade_patch(Path("/nonexistent"), b"", Path("/"), Path("/tmp/r"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    interpreters.app.setup.errors.InputError: task folder not found: /nonexistent (...)
    """
    if isinstance(patch, Path):
        patch = read_patch(patch)
    scripts = ScriptOptions(
        EnvPolicy(extra=tuple(script_env), clean=clean_env),
        script_memory,
        containment if containment is not None else ContainmentPolicy(),
    )
    request = Request(
        task,
        results,
        scripts,
        patch=patch,
        repo=repo,
        limits=Limits(timeout, script_timeout),
        runtime=runtime if runtime is not None else RuntimeResult(),
        runner_user=runner_user,
        force=force,
        holder=holder,
    )
    return grade(request).document


@dataclass(frozen=True, slots=True)
class HeldGrade:
    """`grade` for a batch worker: the run folder is the one its driver made ready and holds
    with `token`; the worker holds it beside the driver while it grades. When the folder is
    not held so (another grading took it), nothing is written: the answer is an `error`
    grade the driver leaves aside. With `checks`, the grading's log (each check, its notes,
    its set-up) is shown on this worker's stderr, each line after its run folder."""

    token: str
    checks: bool = False

    def __call__(self, request: Request[ScriptOptions]) -> Graded:
        """Grade `request` into the held folder it names (`force` has no use here)."""
        shown = (
            speaking(logging.DEBUG, prefix=f"{request.results}: ")
            if self.checks
            else contextlib.nullcontext()
        )
        try:
            with shown:
                return grade(replace(request, holder=self.token, force=False))
        except ResultsUnavailable as exc:
            lost = Crashed(str(exc), kind="infrastructure")
            return Graded(not_graded(lost, request.runtime))


def read_patch(path: Path) -> bytes:
    """The bytes of a recorded patch file; `InputError` when it is not a regular file (a link
    is not followed, a FIFO or a device is refused, never waited on; `/dev/null` is the
    empty patch), checked on the open descriptor before reading."""
    try:
        return read_regular(path)
    except NotReadable as exc:
        raise InputError(f"--patch {exc.path}: {exc.why}") from None
