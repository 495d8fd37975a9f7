"""Whether a grading repo is exactly one commit: the tree of its HEAD, when nothing in its
work tree is changed or untracked.

Interpreter side (processes). `batch` names its jobs' grading repos by it (a digest part). The
repo is the operator's own checkout, read through its own `.git` with the hermetic environment
of every git command (`command.scratch`): no system or global configuration, no fsmonitor.
"""

from __future__ import annotations

from pathlib import Path

from interpreters.real.git.command import GitError, scratch

__all__ = ["clean_tree"]

_SAFE = ("-c", "core.fsmonitor=false", "-c", "safe.directory=*")


def clean_tree(repo: Path) -> str | None:
    """The tree id of `repo`'s HEAD when `repo` is a git work tree with nothing changed or
    untracked (ignored files aside); None otherwise, or when git cannot tell."""
    git_dir = repo / ".git"
    if not git_dir.is_dir():
        return None
    try:
        with scratch() as s:
            env = s.environment(git_dir, index=git_dir / "index", work_tree=repo)
            head = s.git([*_SAFE, "rev-parse", "--verify", "HEAD^{tree}"], env=env, cwd=repo)
            status = s.git(
                [*_SAFE, "status", "--porcelain", "-z", "--untracked-files=all"], env=env, cwd=repo
            )
    except (GitError, OSError):
        return None
    return head.text() if status.stdout == b"" else None
