"""Grading on this machine: the entry point `ssegrade evaluate` and other tools share.

Interpreter layer. `grade_here` runs the pure grading program over the local real
interpreter (capturing the agent's tree, or grading a recorded patch); `grade_patch` is the
Python API for a recorded patch (what `evaluate --patch`, `verify` and `batch` do);
`keep_repo_copy` makes the baseline's pristine copy of the whole tree.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from returns.pipeline import is_successful

from interpreters.real import files, git, resultsfolder
from interpreters.real.local import LocalSystem, Places
from interpreters.real.runner import ContainmentPolicy, EnvPolicy, release_scratch, scratch_folder
from interpreters.real.support import find_support_folders
from interpreters.real.untrusted import NotReadable, read_regular
from interpreters.setup import (
    BadInput,
    Inputs,
    graded,
    grading_repo,
    hold_results,
    load_inputs,
    lock_task,
)
from interpreters.trace import TraceRecorder
from ssegrade import (
    BenchSession,
    Deadline,
    EvaluationResult,
    GradeOptions,
    PatchResult,
    RuntimeResult,
    bencher_interpreter,
    grade,
    run,
)
from ssegrade.bencher import fresh_copies

__all__ = [
    "GradingInputError",
    "HeldGrade",
    "ResultsUnavailable",
    "Sources",
    "grade_here",
    "grade_patch",
    "keep_repo_copy",
    "read_patch",
]


class GradingInputError(ValueError):
    """Input grading cannot work with (a rejected task, a missing repo or patch, a results
    folder holding an earlier grade); the message is one line."""


class ResultsUnavailable(GradingInputError):
    """The results folder cannot be used: another live grading holds it, it is not private,
    or it holds an earlier grade."""


def _silent(_message: str) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Sources:
    """What is graded: the agent's tree against its baseline (`patch` None), or a recorded
    `patch`; `repo` is the grading repo when one is named, `baseline` the baseline folder."""

    patch: bytes | None = None
    repo: Path | None = None
    baseline: Path | None = None


def grade_here(
    inputs: Inputs,
    sources: Sources,
    results: Path,
    *,
    timeout: int = 3600,
    script_timeout: int | None = None,
    runtime: RuntimeResult | None = None,
    say: Callable[[str], None] = _silent,
    started: Callable[[str], None] | None = None,
    env: EnvPolicy | None = None,
    memory: int | None = None,
    record: TraceRecorder | None = None,
    containment: ContainmentPolicy | None = None,
) -> EvaluationResult:
    """Grade on this machine into `results` (made ready by `hold_results`): capture the
    agent's tree, or take the recorded patch; the grading repo is never modified. `record`
    keeps the grading's trace; scripts are contained as `containment` asks. This process's
    guardian removes the scratch folder, and whatever the grading left running if this
    process dies (see `interpreters.real.runner.guardian`).

    Raises `BadInput` for input that cannot be graded; once grading started, every failure
    is an `error` grade in `result.json`.
    """
    runtime = runtime if runtime is not None else RuntimeResult()
    scratch = scratch_folder()
    scratch.chmod(0o711)  # the runner reaches its copies inside, and nothing else
    notes: list[str] = []

    def warn(message: str) -> None:
        say(message)
        notes.append(message)

    try:
        locked = lock_task(inputs)
        if locked:
            warn(
                f"made {len(locked)} paths of the task's hidden material readable by root only "
                "(the runner must not read the hidden tests, the PoCs or the reference fix)"
            )
        base = _baseline(inputs.source, sources, scratch, warn)
        repo = grading_repo(sources.repo, base, scratch, warn)
        places = Places(
            inputs.task_dir,
            inputs.source if sources.patch is None else None,
            base if sources.patch is None else None,
            repo,
            results,
            scratch / "work",
            find_support_folders(inputs.task, inputs.task_dir),
        )
        if inputs.runner.note is not None:
            warn(inputs.runner.note)
        task, folder = inputs.task, str(inputs.task_dir)

        def local() -> EvaluationResult:
            deadline = Deadline.starting(timeout, time.monotonic)
            system = LocalSystem(
                places,
                inputs.runner,
                deadline=deadline,
                script_timeout=script_timeout,
                say=say,
                ahead=True,
                copies=fresh_copies(task),
                started=started,
                env=env,
                memory=memory,
                containment=containment,
            )
            try:
                system.log_notes(notes)
                options = GradeOptions(task=task, folder=folder, timeout=timeout, runtime=runtime)
                session = BenchSession(task, folder, recorded=sources.patch)
                interpret = bencher_interpreter(session, system, deadline)
                if record is not None:
                    return record.grade(options, interpret, deadline)
                return run(grade(options), interpret, deadline)
            finally:
                system.close(remove=False)

        return graded(results, runtime, local)
    finally:
        release_scratch(scratch)  # the grade is written: its scratch goes in the background


def _baseline(
    source: Path | None, sources: Sources, scratch: Path, warn: Callable[[str], None]
) -> git.Baseline | None:
    if sources.baseline is not None:
        loaded = git.load_baseline(sources.baseline)
        if not is_successful(loaded):
            raise BadInput(loaded.failure().message)
        return loaded.unwrap()
    if sources.patch is not None or source is None:
        return None
    warn(
        "warning: no baseline recorded before the agent ran: using the root commit of the "
        "source tree's history, which the agent could have rewritten"
    )
    recorded = git.record_baseline(source, scratch / "baseline", from_root=True)
    if not is_successful(recorded):
        raise BadInput(recorded.failure().message)
    return recorded.unwrap()


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
    say: Callable[[str], None] | None = None,
    holder: str | None = None,
    containment: ContainmentPolicy | None = None,
) -> EvaluationResult:
    """Grade a recorded patch against a pristine grading repo, as `ssegrade evaluate --patch`
    does, and write `results/` (`result.json`, `final.patch`, `commits.log`, `checks.jsonl`,
    `logs/`). The repo is never modified, so any number of patches can be graded from it,
    one after the other or at the same time. `script_env` adds `(NAME, VALUE)` pairs to the
    scripts' environment, `clean_env` starts it from `PATH` and the locale only,
    `script_memory` caps each script's memory (bytes), `containment` says how scripts are
    contained (default: `full` as root).

    `results` is made private and held while grading (`interpreters.setup.hold_results`);
    `holder` is the token of the batch driver that holds it already. Raises
    `GradingInputError` (one line) when the task is rejected, the patch or the repo is
    missing, or `results` cannot be used: another live grading holds it, it is not private,
    or it holds an earlier grade and `force` is not set.

    >>> grade_patch(Path("/nonexistent"), b"", Path("/"), Path("/tmp/r"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    interpreters.grading.GradingInputError: task folder not found: /nonexistent (...)
    """
    try:
        if isinstance(patch, Path):
            patch = read_patch(patch)
        inputs = load_inputs(task, None, runner_user, need_source=False)
        if not repo.is_dir():
            raise BadInput(f"grading repo not found: {repo}")
    except BadInput as exc:
        raise GradingInputError(exc.format_message()) from None
    made = not os.path.lexists(results.absolute())
    try:
        held = hold_results(results, force=force, token=holder)
    except BadInput as exc:
        raise ResultsUnavailable(exc.format_message()) from None
    try:
        return grade_here(
            inputs,
            Sources(patch=patch, repo=repo),
            held.path,
            timeout=timeout,
            script_timeout=script_timeout,
            runtime=runtime,
            say=say if say is not None else _silent,
            env=EnvPolicy(extra=tuple(script_env), clean=clean_env),
            memory=script_memory,
            containment=containment,
        )
    except BadInput as exc:
        if made:  # refused: no empty results folder is left behind
            resultsfolder.discard_unused(held.path)
        raise GradingInputError(exc.format_message()) from None
    finally:
        held.release()


@dataclass(frozen=True, slots=True)
class HeldGrade:
    """`grade_patch` for a batch worker: the run folder is the one its driver made ready and
    holds with `token`; the worker holds it beside the driver while it grades. When the
    folder is not held so (another grading took it), nothing is written: the answer is an
    `error` grade the driver leaves aside. The grading says each check (and its notes)
    through `say` only with `checks`."""

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
        say: Callable[[str], None] | None = None,
        script_env: Sequence[tuple[str, str]] = (),
        clean_env: bool = False,
        script_memory: int | None = None,
        containment: ContainmentPolicy | None = None,
    ) -> EvaluationResult:
        """Grade `patch` into the held folder `results` (`force` has no use here), its
        scripts as the script options say."""
        del force
        try:
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
                say=say if self.checks else None,
                holder=self.token,
                containment=containment,
            )
        except ResultsUnavailable as exc:
            return EvaluationResult(
                patch_result=PatchResult(status="error", error_msg=f"Exception: {exc}"),
                runtime_result=runtime or RuntimeResult(),
            )


def read_patch(path: Path) -> bytes:
    """The bytes of a recorded patch file; `BadInput` when it is not a regular file (a link
    is not followed, a FIFO or a device is refused, never waited on; `/dev/null` is the
    empty patch), checked on the open descriptor before reading."""
    try:
        return read_regular(path)
    except NotReadable as exc:
        raise BadInput(f"--patch {exc.path}: {exc.why}") from None


def keep_repo_copy(source: Path, baseline: Path) -> Path:
    """Copy the whole tree `source` as it is now, ignored files included (vendored modules,
    generated files the build needs), into the baseline folder as its `repo`: the grading
    repo whenever none is named. `.git` and nested repositories are left out."""
    dest = baseline / git.REPO_COPY
    files.fresh_copy(source, dest, None)
    for here, dirs, names in os.walk(dest):
        for name in [*dirs, *names]:
            path = Path(here) / name
            nested = name in dirs and (path / ".git").exists()
            if name == ".git" or nested:
                files.remove_tree(path)
        dirs[:] = [d for d in dirs if d != ".git" and (Path(here) / d).exists()]
    return dest
