"""Grading on this machine: the entry point `ssegrade evaluate` and other tools share.

Interpreter layer. `grade_here` runs the pure grading program over the local real
interpreter in the one set-up (`interpreters.app.setup.grading_setup`), capturing the agent's tree
or grading a recorded patch; `grade_patch` is the Python API for a recorded patch (what
`evaluate --patch`, `verify` and `batch` do); `HeldGrade` is it for a batch worker. Progress
and notes are `logging` records (`interpreters.real.logs`); errors are `InputError`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from interpreters.app.setup import (
    InputError,
    Inputs,
    SetUp,
    Sources,
    graded,
    grading_setup,
    hold_results,
    load_inputs,
)
from interpreters.app.trace import TraceRecorder
from interpreters.real import resultsfolder
from interpreters.real.files import remove_tree
from interpreters.real.local import LocalSystem
from interpreters.real.logs import speaking
from interpreters.real.runner import ContainmentPolicy, EnvPolicy
from interpreters.real.untrusted import NotReadable, read_regular
from ssegrade import (
    BenchSession,
    Deadline,
    EvaluationResult,
    GradeOptions,
    RuntimeResult,
    bencher_interpreter,
    grade,
    run,
)
from ssegrade.bencher import fresh_copies
from ssegrade.checks import scripts_after
from ssegrade.program import Seen
from ssegrade.verdict import Crashed, not_graded

__all__ = [
    "HeldGrade",
    "InputError",
    "ResultsUnavailable",
    "Sources",
    "grade_here",
    "grade_patch",
    "read_patch",
]


class ResultsUnavailable(InputError):
    """The results folder cannot be used: another live grading holds it, it is not private,
    or it holds an earlier grade."""


@dataclass(frozen=True, slots=True)
class _Scripts:
    timeout: float | None = None
    env: EnvPolicy | None = None
    memory: int | None = None
    containment: ContainmentPolicy | None = None


def _empty(folder: Path) -> None:
    """Remove what `folder` holds (a grading's scratch: its copies, its sessions), keeping it."""
    for entry in os.scandir(folder):
        remove_tree(Path(entry.path))


def grade_here(
    inputs: Inputs,
    sources: Sources,
    results: Path,
    *,
    timeout: int = 3600,
    script_timeout: int | None = None,
    runtime: RuntimeResult | None = None,
    env: EnvPolicy | None = None,
    memory: int | None = None,
    record: TraceRecorder | None = None,
    containment: ContainmentPolicy | None = None,
) -> EvaluationResult:
    """Grade on this machine into `results` (made ready by `hold_results`), within `timeout`
    seconds from the moment it is set up: capture the agent's tree, or take the recorded
    patch; the grading repo is never modified. `record` observes the grading's steps;
    scripts are contained as `containment` asks. This process's guardian removes the scratch
    folder, and whatever the grading left running if this process dies (see
    `interpreters.real.runner.guardian`).

    Raises `InputError` for input that cannot be graded; once grading started, every failure
    is an `error` grade in `result.json`.
    """
    runtime = runtime if runtime is not None else RuntimeResult()
    scripts = _Scripts(script_timeout, env, memory, containment)
    seen = Seen()
    with grading_setup(inputs, sources, results) as ready:
        return graded(
            results,
            runtime,
            lambda: _grade(
                ready,
                sources.patch,
                Deadline.starting(timeout, time.monotonic),
                scripts,
                (runtime, seen),
                record,
            ),
            seen,
            free=lambda: _empty(ready.places.scratch),
        )


def _grade(
    ready: SetUp,
    recorded: bytes | None,
    deadline: Deadline,
    scripts: _Scripts,
    facts: tuple[RuntimeResult, Seen],
    record: TraceRecorder | None,
) -> EvaluationResult:
    task, folder = ready.inputs.task, str(ready.inputs.task_dir)
    runtime, seen = facts
    system = LocalSystem(
        ready.places,
        ready.inputs.runner,
        deadline=deadline,
        script_timeout=scripts.timeout,
        ahead=True,
        copies=fresh_copies(task),
        later=lambda label: scripts_after(task.checks, len(task.files.poc), label),
        env=scripts.env,
        memory=scripts.memory,
        containment=scripts.containment,
    )
    try:
        system.log_notes(ready.notes)
        options = GradeOptions(task=task, folder=folder, runtime=runtime)
        interpret = bencher_interpreter(
            BenchSession(task, folder, recorded=recorded), system, deadline
        )
        if record is None:
            return run(grade(options, seen), interpret, deadline)
        record.begin(options)
        try:
            result = run(grade(options, seen), interpret, deadline, record.observe)
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
    `logs/`). The repo is never modified, so any number of patches can be graded from it,
    one after the other or at the same time. `script_env` adds `(NAME, VALUE)` pairs to the
    scripts' environment, `clean_env` starts it from `PATH` and the locale only,
    `script_memory` caps each script's memory (bytes), `containment` says how scripts are
    contained (default: `full` as root). Progress and notes are `logging` records of the
    `interpreters` logger (`interpreters.real.logs`).

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
    inputs = load_inputs(task, None, runner_user, need_source=False)
    if not repo.is_dir():
        raise InputError(f"grading repo not found: {repo}")
    made = not os.path.lexists(results.absolute())
    try:
        held = hold_results(results, force=force, token=holder)
    except InputError as exc:
        raise ResultsUnavailable(str(exc)) from None
    try:
        return grade_here(
            inputs,
            Sources(patch=patch, repo=repo),
            held.path,
            timeout=timeout,
            script_timeout=script_timeout,
            runtime=runtime,
            env=EnvPolicy(extra=tuple(script_env), clean=clean_env),
            memory=script_memory,
            containment=containment,
        )
    except InputError:
        if made:  # refused: no empty results folder is left behind
            resultsfolder.discard_unused(held.path)
        raise
    finally:
        held.release()


@dataclass(frozen=True, slots=True)
class HeldGrade:
    """`grade_patch` for a batch worker: the run folder is the one its driver made ready and
    holds with `token`; the worker holds it beside the driver while it grades. When the
    folder is not held so (another grading took it), nothing is written: the answer is an
    `error` grade the driver leaves aside. With `checks`, the grading's log (each check, its
    notes, its set-up) is shown on this worker's stderr, each line after its run folder."""

    token: str
    checks: bool = False

    def __call__(
        self,
        task: Path,
        patch: Path | bytes,
        repo: Path,
        results: Path,
        *,
        timeout: int = 3600,
        script_timeout: int | None = None,
        runner_user: str | None = None,
        runtime: RuntimeResult | None = None,
        force: bool = False,
        script_env: Sequence[tuple[str, str]] = (),
        clean_env: bool = False,
        script_memory: int | None = None,
        containment: ContainmentPolicy | None = None,
    ) -> EvaluationResult:
        """Grade `patch` into the held folder `results` (`force` has no use here), its
        scripts as the script options say."""
        del force
        shown = (
            speaking(logging.DEBUG, prefix=f"{results}: ")
            if self.checks
            else contextlib.nullcontext()
        )
        try:
            with shown:
                return grade_patch(
                    task,
                    patch,
                    repo,
                    results,
                    timeout=timeout,
                    script_timeout=script_timeout,
                    runner_user=runner_user,
                    script_env=script_env,
                    clean_env=clean_env,
                    script_memory=script_memory,
                    runtime=runtime,
                    holder=self.token,
                    containment=containment,
                )
        except ResultsUnavailable as exc:
            return not_graded(Crashed(str(exc), kind="infrastructure"), runtime or RuntimeResult())


def read_patch(path: Path) -> bytes:
    """The bytes of a recorded patch file; `InputError` when it is not a regular file (a link
    is not followed, a FIFO or a device is refused, never waited on; `/dev/null` is the
    empty patch), checked on the open descriptor before reading."""
    try:
        return read_regular(path)
    except NotReadable as exc:
        raise InputError(f"--patch {exc.path}: {exc.why}") from None
