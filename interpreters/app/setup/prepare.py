"""The one set-up of every grading: scratch folder, locks, baseline, grading repo, places.

Application layer. `grading_setup` is what `ssegrade evaluate`, the daemon, `verify` and
`batch` (through `grade`) all do before the first effect is answered, and undo after:

0. inside a container, as root, the container's turn (`container_turn`: one grading at a
   time there, the runner's processes and files removed before and after);
1. a private scratch folder, under this process's guardian (removed even after a kill -9);
2. the baseline: the one given, one recorded now (the daemon, before the agent runs), or the
   root commit of the tree's history (the evaluator, with a warning); none for a recorded
   patch;
3. the grading repo: the one named, `/ssebench-repo`, the baseline's copy of the tree, or a
   checkout of the baseline commit (with a warning);
4. the task's hidden material locked away from the runner, before any script can run;
5. the `Places` of the grading, and the notes said meanwhile (for `logs/notes.log`).

Input that cannot be graded raises `InputError` before anything is graded. The results folder
is held by the caller beforehand (`interpreters.app.setup.folders`): each holds it its own way.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from interpreters.app.setup.baselines import (
    SSEBENCH_REPO,
    agents_baseline,
    daemons_baseline,
    grading_repo,
)
from interpreters.app.setup.errors import InputError
from interpreters.app.setup.inputs import Inputs, lock_task
from interpreters.real import files, git
from interpreters.real.places import Places
from interpreters.real.runner import ContainmentRefused, release_scratch, scratch_folder
from interpreters.real.runner.turns import container_turn
from interpreters.real.support import find_support_folders

__all__ = ["SetUp", "Sources", "grading_setup"]

_log = logging.getLogger(__name__)

_LOCKED = (
    "made {} paths of the task's hidden material readable by root only (the runner must not "
    "read the hidden tests, the PoCs or the reference fix)"
)


@dataclass(frozen=True, slots=True)
class Sources:
    """What is graded: the agent's tree against its baseline (`patch` None), or a recorded
    `patch`; `repo` is the grading repo when one is named, `baseline` the baseline folder."""

    patch: bytes | None = None
    repo: Path | None = None
    baseline: Path | None = None


@dataclass(frozen=True, slots=True)
class SetUp:
    """A grading made ready: where it works, and the notes said while it was made ready
    (warnings about its inputs, to keep in `logs/notes.log`)."""

    inputs: Inputs
    places: Places
    notes: tuple[str, ...] = ()


@contextmanager
def grading_setup(
    inputs: Inputs,
    sources: Sources,
    results: Path,
    *,
    before_agent: bool = False,
    kind: str = "",
) -> Iterator[SetUp]:
    """Make a grading ready in `results` (already held) and give its `SetUp`; its scratch
    folder goes when the block ends (in the background by its guardian; at once for the
    daemon, `before_agent`, which records the baseline before the agent runs and keeps
    it in `sources.baseline` when one is named). `kind` names the scratch folder.

    Raises `InputError` for input that cannot be graded, before the block runs.
    """
    with _turn(inputs):
        scratch = scratch_folder(kind)
        try:
            scratch.chmod(0o711)  # the runner reaches its copies inside, and nothing else
            yield _made_ready(inputs, sources, results, scratch, before_agent=before_agent)
        finally:
            if before_agent:
                files.remove_tree(scratch)
            release_scratch(scratch)  # the grade is written: its scratch goes in the background


@contextmanager
def _turn(inputs: Inputs) -> Iterator[None]:
    """The container's turn (see `container_turn`); a lock that cannot be had is bad input."""
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(container_turn(inputs.runner))
    except ContainmentRefused as exc:
        raise InputError(str(exc)) from None
    with stack:
        yield


def _made_ready(
    inputs: Inputs, sources: Sources, results: Path, scratch: Path, *, before_agent: bool
) -> SetUp:
    notes: list[str] = []
    graded_tree = inputs.source if sources.patch is None else None
    base: git.Baseline | None
    if before_agent:
        if graded_tree is None:
            raise InputError("the daemon needs the agent's source tree: give --source")
        keep_copy = sources.repo is None and not SSEBENCH_REPO.is_dir()
        base = daemons_baseline(graded_tree, sources.baseline, scratch, keep_copy=keep_copy)
    else:
        base = agents_baseline(graded_tree, sources.baseline, scratch, notes)
    repo = grading_repo(sources.repo, base, scratch, notes)
    locked = lock_task(inputs)  # the last refusal, and before any script can run
    if locked:
        _log.warning(_LOCKED.format(len(locked)))
        notes.append(_LOCKED.format(len(locked)))
    places = Places(
        task=inputs.task_dir,
        source=graded_tree,
        baseline=base if graded_tree is not None else None,
        repo=repo,
        results=results,
        scratch=scratch / "work",
        support=find_support_folders(inputs.task, inputs.task_dir),
    )
    if inputs.runner.note is not None:
        _log.warning(inputs.runner.note)
        notes.append(inputs.runner.note)
    _log.debug("grading set up in %s: grading repo %s", scratch, places.repo)
    return SetUp(inputs, places, tuple(notes))
