"""Capturing a tree (`CaptureTree`): the patch from the baseline's base, and the agent's log.

Interpreter side (processes, files); performs the capture of SPEC §4: the tree is staged as
`staging.stage` says, the patch written by `git diff-tree` with `DIFF_OPTIONS`, and the agent's
commit messages read from a commits-only copy of its history, fetched as the tree's owner.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from returns.result import Failure, Result, Success

from interpreters.real.git.command import GitError, Scratch, check_apart, scratch, why
from interpreters.real.git.layout import CONFIG, lay_out, reader_of
from interpreters.real.git.repository import Baseline
from interpreters.real.git.staging import split_z, stage
from ssegrade.internal.effects import Capture, CaptureError
from ssegrade.internal.run import Deadline

DIFF_OPTIONS = (
    "-p",
    "--binary",
    "--full-index",
    "--no-renames",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)
"""Options of the `git diff-tree` that writes the patch (SPEC §4), verbatim."""


def capture(
    source: Path, baseline: Baseline, *, until: Deadline | None = None, rehash: bool = False
) -> Result[Capture, CaptureError]:
    """Capture the patch from the baseline's base to `source` as it is now (SPEC §4).

    Answers the patch (`git diff-tree` with fixed options, empty when nothing changed), both tree
    ids, the agent's commit messages since the initial commit, and the paths git left out.
    Only the files whose stat data changed since the baseline are hashed, when it kept its
    index; with `rehash`, every file is (the same capture, at the cost of the whole tree).
    Every git command is killed when `until` (a deadline) has passed, failing the capture.
    """
    source = Path(os.path.abspath(source))
    if not source.is_dir():
        return Failure(CaptureError(f"source tree not found: {source}"))
    try:
        check_apart(source)
        reader = reader_of(source)
        with scratch(reader, until) as s:
            repo = s.top / "repo"
            lay_out(repo)
            base = baseline.base_tree
            start = None if rehash else baseline.index
            # The agent's log needs nothing of the staging: it is read meanwhile, on the CPU
            # the staging's hashing (one thread in git) leaves.
            with ThreadPoolExecutor(max_workers=1) as pool:
                commits = pool.submit(_commits_log, s, source, baseline.commit)
                new, left_out = stage(
                    s,
                    source,
                    base,
                    repo=repo,
                    alternates=baseline.objects,
                    start=start,
                    links=baseline.gitlinks,
                )
                admin = s.environment(repo, objects=s.work / "objects", alternates=baseline.objects)
                patch = s.git(["diff-tree", *DIFF_OPTIONS, base, new], env=admin).stdout
                log = commits.result()
    except (GitError, OSError, ValueError) as exc:
        return Failure(CaptureError(f"cannot capture the patch of {source}: {why(exc)}"))
    return Success(Capture(patch, base, new, log, left_out))


def _commits_log(s: Scratch, source: Path, initial: str) -> bytes:
    """The agent's commits in `initial..HEAD`, read from a fetched copy (commits only).

    Empty when `.git` is gone or broken. The fetch runs as the reader; the agent's repository
    is entered only by `upload-pack`, which runs no hook and no configured command.
    """
    try:
        landing = s.reader_repository("log.git")
        env = s.environment(landing)
        # A named remote: the filtered fetch registers it as the promisor of the commits-only
        # copy (a bare path cannot be one).
        s.git(
            [
                "-c",
                f"remote.agent.url={source / '.git'}",
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-recurse-submodules",
                "--no-write-fetch-head",
                "--no-auto-gc",
                "--upload-pack=git -c uploadpack.allowFilter=true upload-pack",
                "--filter=tree:0",
                "agent",
                "+HEAD:refs/ssegrade/agent",
            ],
            env=env,
            as_reader=True,
        )
        # The filtered fetch marked the agent's repository a promisor: forget it, so that no
        # later command tries to fetch a missing object from there.
        (landing / "config").unlink()
        (landing / "config").write_bytes(CONFIG)
        out = s.git(
            [
                "log",
                "-z",
                "--format=%H%x00%s%x00%b",
                "--ignore-missing",
                "refs/ssegrade/agent",
                "--not",
                initial,
                "--",
            ],
            env=env,
            as_reader=True,
        ).stdout
    except (GitError, OSError):
        return b""
    return _format_log(split_z(out))


def _format_log(fields: list[bytes]) -> bytes:
    if len(fields) % 3:
        return b""
    lines: list[bytes] = []
    for commit, subject, body in zip(fields[::3], fields[1::3], fields[2::3], strict=True):
        lines += [commit, subject]
        if body.strip(b"\n"):
            lines.append(body.strip(b"\n"))
        lines.append(b"---")
    return b"".join(line + b"\n" for line in lines)
