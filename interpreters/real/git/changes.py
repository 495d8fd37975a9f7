"""The files a tree changes against the baseline's base, as git lists them.

Interpreter side (processes, files). The tree is staged exactly as a capture stages it; the
listing is `git diff-tree` raw output for the core's `ssegrade.protocol.changed_files`.
"""

from __future__ import annotations

import os
from pathlib import Path

from returns.result import Failure, Result, Success

from interpreters.real.git.command import GitError, check_apart, scratch, why
from interpreters.real.git.layout import lay_out, reader_of
from interpreters.real.git.repository import Baseline
from interpreters.real.git.staging import stage
from ssegrade.internal.effects import CaptureError


def changed_files(source: Path, baseline: Baseline) -> Result[bytes, CaptureError]:
    """The files `source` changes against the baseline's base, as git lists them: the output
    of `git diff-tree -r -z --raw --numstat --no-renames` between the base and the tree staged
    exactly as `capture` stages it (read it with `ssegrade.protocol.changed_files`)."""
    source = Path(os.path.abspath(source))
    if not source.is_dir():
        return Failure(CaptureError(f"source tree not found: {source}"))
    try:
        check_apart(source)
        with scratch(reader_of(source)) as s:
            repo = s.top / "repo"
            lay_out(repo)
            base = baseline.base_tree
            new, _left_out = stage(
                s,
                source,
                base,
                repo=repo,
                alternates=baseline.objects,
                start=baseline.index,
                links=baseline.gitlinks,
            )
            admin = s.environment(repo, objects=s.work / "objects", alternates=baseline.objects)
            listing = s.git(
                ["diff-tree", "-r", "-z", "--raw", "--numstat", "--no-renames", base, new],
                env=admin,
            ).stdout
    except (GitError, OSError, ValueError) as exc:
        return Failure(CaptureError(f"cannot list the changed files of {source}: {why(exc)}"))
    return Success(listing)
