"""Applying a patch or a diff to a tree (`CheckPatch`, `FreshCopy`, `ApplyDiff`).

Interpreter side (processes, files). `git apply` runs in the tree with a neutral `GIT_DIR` of
ours, so neither the tree's attributes nor any `apply.*` setting change bytes, and optionally as
the runner account (no supplementary groups). Every command is killed at its deadline.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from returns.result import Failure, Result, Success

from interpreters.real.git.command import GitError, scratch, why
from interpreters.real.git.layout import Ids, lay_out
from ssegrade.internal.effects import ApplyError
from ssegrade.internal.run import Deadline


def _neutral_apply(
    tree: Path,
    args: Iterable[str],
    *,
    stdin: bytes | None,
    run_as: Ids | None,
    until: Deadline | None,
    enter: Callable[[], None] | None = None,
) -> Result[None, ApplyError]:
    """`git apply` in `tree` with a neutral `GIT_DIR`: an empty repo with our config and
    attributes, so that neither the tree's attributes nor any `apply.*` setting change bytes.
    `enter` is git's first step, as root (the mount of the view `tree` is)."""
    if run_as is not None and os.geteuid() != 0 and run_as != (os.getuid(), os.getgid()):
        return Failure(ApplyError("cannot apply as another user: not running as root"))
    as_reader = run_as is not None and run_as != (os.getuid(), os.getgid())
    try:
        with scratch(run_as if as_reader else None, until) as s:
            neutral = s.top / "neutral.git"
            lay_out(neutral)
            env = s.environment(neutral, index=s.work / "index", work_tree=tree)
            s.git(
                ["apply", *args], env=env, cwd=tree, stdin=stdin, as_reader=as_reader, enter=enter
            )
    except GitError as exc:
        return Failure(ApplyError(exc.stderr.strip() or exc.message))
    except OSError as exc:
        return Failure(ApplyError(f"cannot run git apply in {tree}: {why(exc)}"))
    return Success(None)


_PATCH_OPTIONS = ("--binary", "--whitespace=nowarn", "--allow-empty")


def check_patch(
    repo: Path, patch: bytes, *, until: Deadline | None = None
) -> Result[None, ApplyError]:
    """Check that the patch applies to the grading repo (`git apply --check`, with a neutral
    `GIT_DIR`), without changing it; `ApplyError.log` is git's message. Killed at `until`."""
    return _neutral_apply(
        Path(os.path.abspath(repo)),
        ("--check", *_PATCH_OPTIONS),
        stdin=patch,
        run_as=None,
        until=until,
    )


def apply_patch(
    tree: Path,
    patch: bytes,
    *,
    run_as: tuple[int, int] | None = None,
    until: Deadline | None = None,
    enter: Callable[[], None] | None = None,
) -> Result[None, ApplyError]:
    """Apply the patch in `tree` (a fresh copy of the grading repo, or the mount point of a
    view that `enter` mounts in git's own mount namespace): `git apply --binary
    --whitespace=nowarn --allow-empty`, with a neutral `GIT_DIR`, optionally as the given
    uid/gid; `ApplyError.log` is git's message. Killed at `until`."""
    return _neutral_apply(
        Path(os.path.abspath(tree)),
        _PATCH_OPTIONS,
        stdin=patch,
        run_as=run_as,
        until=until,
        enter=enter,
    )


def apply_diff(
    workspace: Path,
    diff: Path,
    *,
    run_as: tuple[int, int] | None = None,
    until: Deadline | None = None,
    enter: Callable[[], None] | None = None,
) -> Result[None, ApplyError]:
    """`git apply -p1` of the hidden tests diff inside a check's workspace (a view when
    `enter` mounts it), with a neutral `GIT_DIR`, optionally as the given uid/gid (no
    supplementary groups). Killed at `until`."""
    diff = Path(os.path.abspath(diff))
    return _neutral_apply(
        Path(os.path.abspath(workspace)),
        ("-p1", str(diff)),
        stdin=None,
        run_as=run_as,
        until=until,
        enter=enter,
    )


def patch_files(patch: bytes, *, until: Deadline | None = None) -> Result[int, ApplyError]:
    """How many files `patch` changes as git reads it (`git apply --numstat`, which applies
    nothing and reads no tree), in a scratch folder with a neutral `GIT_DIR`; `ApplyError`
    with git's message when git cannot read it."""
    try:
        with scratch(None, until) as s:
            neutral = s.top / "neutral.git"
            lay_out(neutral)
            out = s.git(
                ["apply", "--numstat", "-z", "--allow-empty", *_PATCH_OPTIONS[:2]],
                env=s.environment(neutral),
                stdin=patch,
            )
    except GitError as exc:
        return Failure(ApplyError(exc.message))
    except OSError as exc:
        return Failure(ApplyError(f"cannot run git apply --numstat: {why(exc)}"))
    # Each file is `added<TAB>deleted<TAB>path<NUL>` (a rename: two paths, each NUL-ended).
    return Success(sum(1 for field in out.stdout.split(b"\0") if b"\t" in field))
