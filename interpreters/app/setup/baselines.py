"""The baseline a grading captures against, and the pristine grading repo its checks copy.

Application layer, for the set-up (`interpreters.app.setup.prepare`). Input they cannot be made
from raises `InputError`; what is worth telling goes to the log.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from returns.pipeline import is_successful

from interpreters.app.setup.errors import InputError
from interpreters.real import archive, files, git

__all__ = ["agents_baseline", "daemons_baseline", "grading_repo", "keep_repo_copy"]

_log = logging.getLogger(__name__)

SSEBENCH_REPO = Path("/ssebench-repo")
"""The grading repo of an SSEBench task container, used when none is named."""

_NO_BASELINE = (
    "warning: no baseline recorded before the agent ran: using the root commit of the source "
    "tree's history, which the agent could have rewritten"
)
_IGNORED = "warning: {} is ignored: a recorded patch needs no baseline, and it names none ({})"
_CHECKOUT = (
    "warning: no grading repo given and the baseline keeps no copy of the tree: grading a "
    "checkout of the baseline commit, without the ignored files of the original tree (e.g. "
    "vendor/); record the baseline with `ssegrade baseline` or give --repo"
)


def agents_baseline(
    source: Path | None, given: Path | None, scratch: Path, notes: list[str]
) -> git.Baseline | None:
    """The evaluator's baseline, once the agent ran: the one recorded in `given`, else (with
    a warning in `notes`) the root commit of the source tree's history; None without a tree
    (a recorded patch), where a `given` that names no baseline is ignored with a warning."""
    if given is not None:
        loaded = git.load_baseline(given)
        if is_successful(loaded):
            return loaded.unwrap()
        if source is not None:
            raise InputError(loaded.failure().message)
        # A recorded patch needs none (`SSE_BASELINE` is set in every task image).
        _warn(_IGNORED.format(given, loaded.failure().message), notes)
        return None
    if source is None:
        return None
    _warn(_NO_BASELINE, notes)
    recorded = git.record_baseline(source, scratch / "baseline", from_root=True)
    if not is_successful(recorded):
        raise InputError(recorded.failure().message)
    return recorded.unwrap()


def daemons_baseline(
    source: Path, given: Path | None, scratch: Path, *, keep_copy: bool
) -> git.Baseline:
    """The daemon's baseline, before the agent runs: the one an earlier start kept in
    `given`, else recorded now (into `given`, or the scratch folder); with `keep_copy`, a
    copy of the whole tree is kept beside it, as the grading repo. The baseline's archive
    cache is written beside it too."""
    if given is not None and given.is_dir() and any(given.iterdir()):
        loaded = git.load_baseline(given)
        if not is_successful(loaded):
            raise InputError(loaded.failure().message)
        _log.info("baseline loaded from %s (recorded by an earlier start)", given)
        return loaded.unwrap()
    recorded = git.record_baseline(source, given if given is not None else scratch / "baseline")
    if not is_successful(recorded):
        raise InputError(recorded.failure().message)
    base = recorded.unwrap()
    if keep_copy:  # no grading repo is named: the whole tree as it is now serves as one
        try:
            keep_repo_copy(source, base.path)
        except OSError as exc:
            raise InputError(f"cannot copy {source} as the grading repo: {exc.strerror}") from exc
    cached = archive.record_archive_cache(source, base.path, level=archive.ARCHIVE_LEVEL)
    if not is_successful(cached):
        _log.warning("%s (each archive will be written whole)", cached.failure())
    _log.info("baseline recorded: commit %s", base.commit)
    return base


def grading_repo(
    given: Path | None, base: git.Baseline | None, scratch: Path, notes: list[str]
) -> Path:
    """The pristine repo every check copies: `given`, else `/ssebench-repo` if it exists,
    else the baseline's copy of the whole tree (`ssegrade baseline` keeps it), else a
    checkout of the baseline commit in `scratch`, which lacks the ignored files of the
    original tree (a warning in `notes` says so)."""
    if given is None and SSEBENCH_REPO.is_dir():
        given = SSEBENCH_REPO
    if given is not None:
        if not given.is_dir():
            raise InputError(f"grading repo not found: {given}")
        return given.absolute()
    if base is None:
        raise InputError("no grading repo: give --repo (or a baseline to check it out from)")
    if base.repo_copy is not None:
        return base.repo_copy
    checkout = scratch / "repo"
    made = git.checkout_baseline(base, checkout)
    if not is_successful(made):
        raise InputError(made.failure().message)
    _warn(_CHECKOUT, notes)
    return checkout


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


def _warn(message: str, notes: list[str]) -> None:
    _log.warning(message)
    notes.append(message)
