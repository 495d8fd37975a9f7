"""What `ssegrade evaluate` and `ssegrade daemon` both do before and around grading: shared
options, loading the task, the grading repo, and writing a result whatever happens.

Interpreter layer. Bad input raises `BadInput`: one line on stderr, exit status 2.
"""

from __future__ import annotations

import os
import signal
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import click
from returns.pipeline import is_successful

from interpreters.real import files, git, holding, resultsfolder
from interpreters.real.holding import Hold
from interpreters.real.resultsfolder import DEFAULT_RESULTS
from interpreters.real.runner import Runner, resolve_runner
from interpreters.script_options import ScriptOptions, containment_options, script_env_options
from interpreters.taskfolder import load_task, lock_hidden, resolve_source
from interpreters.unraisable import signal_again, unraisable_here
from ssegrade import EvaluationResult, RuntimeResult, Task, verdict
from ssegrade.program import GradingInterrupted

__all__ = [
    "DEFAULT_RESULTS",
    "RESULTS_ENTRIES",
    "BadInput",
    "Inputs",
    "Interrupted",
    "ScriptOptions",
    "containment_options",
    "discard_made",
    "graded",
    "grading_repo",
    "hold_results",
    "load_inputs",
    "lock_task",
    "make_results",
    "repo_option",
    "results_option",
    "runner_option",
    "script_env_options",
    "source_option",
    "task_option",
    "verdict_line",
]

F = TypeVar("F", bound=Callable[..., Any])


class BadInput(click.ClickException):
    """Input a command cannot work with: printed as one line, exit 2."""

    exit_code = 2


class Interrupted(Exception):
    """SIGTERM or SIGINT arrived while grading; `result.json` is written. The command exits
    with `exit_code` (128 + the signal's number)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}; result.json written")
        self.exit_code = 128 + signum


# ---------------------------------------------------------------------------- shared options


def task_option(command: F) -> F:
    """`--task DIR` [env SSE_BENCH_PATH, default /ssebench]."""
    return click.option(
        "--task",
        "task_dir",
        envvar="SSE_BENCH_PATH",
        default="/ssebench",
        show_default=True,
        type=click.Path(path_type=Path),
        help="Task folder holding config.yaml [env SSE_BENCH_PATH].",
    )(command)


def source_option(command: F) -> F:
    """`--source DIR` (default: `source` of config.yaml)."""
    return click.option(
        "--source",
        type=click.Path(path_type=Path),
        help="The agent's source tree (default: `source` of config.yaml).",
    )(command)


def repo_option(command: F) -> F:
    """`--repo DIR` [env SSE_REPO_PATH]."""
    return click.option(
        "--repo",
        envvar="SSE_REPO_PATH",
        type=click.Path(path_type=Path),
        help="Grading repo to patch [env SSE_REPO_PATH; default /ssebench-repo if it exists, "
        "else a checkout of the baseline].",
    )(command)


def results_option(command: F) -> F:
    """`--results DIR` [env SSE_RESULTS, default /var/lib/ssebench/results]."""
    return click.option(
        "--results",
        envvar="SSE_RESULTS",
        default=str(DEFAULT_RESULTS),
        show_default=True,
        type=click.Path(path_type=Path),
        help="Results folder [env SSE_RESULTS].",
    )(command)


def runner_option(command: F) -> F:
    """`--runner-user NAME`."""
    return click.option(
        "--runner-user", help="User that runs task scripts when root (default sse-runner)."
    )(command)


# ---------------------------------------------------------------------------- inputs


@dataclass(frozen=True, slots=True)
class Inputs:
    """A task checked on disk, its folder, the agent's source tree and who runs scripts."""

    task: Task
    task_dir: Path
    source: Path | None
    runner: Runner


def load_inputs(
    task_dir: Path, source: Path | None, runner_user: str | None, *, need_source: bool = True
) -> Inputs:
    """Load and check the task, find the source tree (unless not needed: then it may be
    `None`), choose the runner; `BadInput` if not."""
    task_dir = task_dir.absolute()
    if not task_dir.is_dir():
        raise BadInput(f"task folder not found: {task_dir} (give --task DIR or set SSE_BENCH_PATH)")
    loaded = load_task(task_dir)
    if not is_successful(loaded):
        raise BadInput(loaded.failure().message)
    task = loaded.unwrap()
    tree: Path | None = None
    if need_source:
        found = resolve_source(task, task_dir, source)
        if not is_successful(found):
            raise BadInput(found.failure().message)
        tree = found.unwrap()
    runner = resolve_runner(runner_user)
    if not is_successful(runner):
        raise BadInput(runner.failure().message)
    return Inputs(task, task_dir, tree, runner.unwrap())


RESULTS_ENTRIES = frozenset(
    {
        "result.json",
        "final.patch",
        "commits.log",
        "source.tar.gz",
        "checks.jsonl",
        "guard.json",
        "logs",
        "agent-phase",
        "summary.json",
    }
)
"""What a grading writes in its results folder; `--force` clears these and nothing else."""


def lock_task(inputs: Inputs) -> list[str]:
    """As root with a runner account: lock the task's hidden material away from the runner
    before any script runs (`lock_hidden`); answers the paths changed. `BadInput` when it
    cannot be done: grading would expose the hidden tests and the reference fix."""
    if not inputs.runner.isolated:
        return []
    try:
        return lock_hidden(inputs.task, inputs.task_dir)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise BadInput(
            f"cannot make the task's hidden material unreadable to the runner: "
            f"{exc.strerror or exc}{where}"
        ) from exc


_KEPT: list[Hold] = []
"""The results folders `make_results` holds until this process ends."""
_MADE: list[Path] = []
"""Those of them it made."""


def hold_results(
    results: Path,
    *,
    force: bool = False,
    share: bool = False,
    join: bool = False,
    token: str | None = None,
) -> Hold:
    """Make the results folder ready and hold it (`interpreters.real.resultsfolder.hold`);
    `BadInput` when it cannot be used."""
    try:
        return resultsfolder.hold(
            results, RESULTS_ENTRIES, force=force, share=share, join=join, token=token
        )
    except resultsfolder.NotReady as exc:
        raise BadInput(str(exc)) from None


def make_results(
    results: Path, *, force: bool = False, share: bool = False, join: bool = False
) -> Path:
    """`hold_results` for the rest of this process (`evaluate`; the daemon, which `share`s
    it with `evaluate --daemon`, which `join`s it): its absolute path."""
    made = not os.path.lexists(results.absolute())
    hold = hold_results(results, force=force, share=share, join=join)
    _KEPT.append(hold)
    if made:
        _MADE.append(hold.path)
    return hold.path


def discard_made() -> None:
    """Remove the results folders `make_results` made, when grading never wrote into them
    (it was refused: no baseline, no grading repo…): no empty folder is left behind."""
    for path in _MADE:
        resultsfolder.discard_unused(path)


def grading_repo(
    given: Path | None,
    base: git.Baseline | None,
    scratch: Path,
    warn: Callable[[str], None] | None = None,
) -> Path:
    """The pristine repo every check copies: `given`, else `/ssebench-repo` if it exists,
    else the baseline's copy of the whole tree (`ssegrade baseline` keeps it), else a
    checkout of the baseline commit in `scratch`, which lacks the ignored files of the
    original tree (`warn` says so)."""
    if given is None and Path("/ssebench-repo").is_dir():
        given = Path("/ssebench-repo")
    if given is not None:
        if not given.is_dir():
            raise BadInput(f"grading repo not found: {given}")
        return given.absolute()
    if base is None:
        raise BadInput("no grading repo: give --repo (or a baseline to check it out from)")
    if base.repo_copy is not None:
        return base.repo_copy
    checkout = scratch / "repo"
    made = git.checkout_baseline(base, checkout)
    if not is_successful(made):
        raise BadInput(made.failure().message)
    if warn is not None:
        warn(
            "warning: no grading repo given and the baseline keeps no copy of the tree: "
            "grading a checkout of the baseline commit, without the ignored files of the "
            "original tree (e.g. vendor/); record the baseline with `ssegrade baseline` or "
            "give --repo"
        )
    return checkout


# ---------------------------------------------------------------------------- grading


@dataclass(slots=True)
class _Signals:
    first: int | None = None


@contextmanager
def _interrupts_raise() -> Iterator[_Signals]:
    """The first SIGTERM or SIGINT raises `GradingInterrupted` where grading is; later ones
    are only noted, so that the result (and the clean-up) is written whole."""
    state = _Signals()

    def interrupt(signum: int, frame: FrameType | None) -> None:
        if state.first is not None:
            return
        if unraisable_here(frame):  # raised there, it would be lost: signalled again later
            signal_again(signum)
            return
        state.first = signum
        raise GradingInterrupted(signal.Signals(signum).name)

    previous: dict[signal.Signals, Any] = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, interrupt)
        yield state
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def graded(
    results: Path, runtime: RuntimeResult, grade: Callable[[], EvaluationResult]
) -> EvaluationResult:
    """Run `grade`; SIGTERM/SIGINT become `GradingInterrupted`, which the grading program
    turns into an `error` grade, and whatever escapes it still leaves an `error` result.json
    behind. After an interrupt, raises `Interrupted` (exit 130 or 143) once the result is
    written."""
    with _interrupts_raise() as signals:
        try:
            result = grade()
        except Exception as exc:  # noqa: BLE001 - the grade must still be written
            if isinstance(exc, GradingInterrupted):
                patch = verdict.escaped(verdict.Interrupted(exc.signal))
            else:
                detail = "".join(traceback.format_exception(exc))
                patch = verdict.escaped(verdict.Crashed(str(exc), detail))
            result = EvaluationResult(patch_result=patch, runtime_result=runtime)
            try:
                files.atomic_write(results / "result.json", result.to_json())
            except OSError as write_error:
                raise click.ClickException(f"result.json not written: {write_error}") from exc
        holding.unmark_finished(results)
    if signals.first is not None:
        raise Interrupted(signals.first)
    return result


def verdict_line(result: EvaluationResult) -> str:
    """What `evaluate` prints on stdout: the status, and the first failure if any."""
    patch = result.patch_result
    return patch.status if patch.error_msg is None else f"{patch.status}: {patch.error_msg}"
