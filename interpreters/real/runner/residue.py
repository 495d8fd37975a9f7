"""What `container` containment removes after each script: every process of the runner
account in the container, and what the runner left in `/tmp`, `/var/tmp` and `/dev/shm`.

Interpreter layer (signals processes, removes files; root only). Safe only where one grading
at a time runs (the container's lock, `turns`) and the PID namespace holds only this run: the
container's. The processes go first, so that nothing of the runner's is left to race the
removal; then each entry the runner owns directly in those folders is removed without
following a link (`remove_tree`). Entries deeper down (in a folder of root's there, such as
ssegrade's own scratch folders) are left alone: those are the grading's own.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from interpreters.real.files.removal import remove_tree
from interpreters.real.runner.account import Runner
from interpreters.real.runner.processes import account_processes, kill_account

__all__ = ["SHARED_TMP", "clear_runner", "remove_runner_files"]

SHARED_TMP = ("/tmp", "/var/tmp", "/dev/shm")
"""The folders every account may write in, which a container's scripts share."""


def clear_runner(runner: Runner, folders: tuple[str, ...] = SHARED_TMP) -> list[str]:
    """Kill every process of `runner` (an isolated account: we are root) until none is left,
    reap those that were our children, then remove what it left in `folders`. Answers the
    lines worth a log: what was killed and removed, and what could not be."""
    lines: list[str] = []
    seen = account_processes(runner.uid)
    left = kill_account(runner.uid, runner.gid)
    for pid in seen:  # orphans handed back to us (a subreaper) are our zombies now
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
    if seen:
        lines.append(f"container containment: killed {len(seen)} process(es) of the runner left")
    if left:
        lines.append(f"warning: processes of the runner still alive: {left}")
    removed, problems = remove_runner_files(runner.uid, folders)
    if removed:
        named = ", ".join(removed[:5]) + (
            f" and {len(removed) - 5} more" if len(removed) > 5 else ""
        )
        lines.append(f"container containment: removed what the runner left: {named}")
    lines.extend(f"warning: not removed: {problem}" for problem in problems)
    return lines


def remove_runner_files(uid: int, folders: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """Remove each entry directly in `folders` that `uid` owns (a folder that is a link, or
    missing, is skipped). Answers what was removed and what could not be (with why)."""
    removed: list[str] = []
    problems: list[str] = []
    for folder in folders:
        try:
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                continue
            names = os.listdir(folder)
        except OSError:
            continue
        for name in sorted(names):
            path = Path(folder, name)
            try:
                if os.lstat(path).st_uid != uid:
                    continue
                remove_tree(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                problems.append(f"{path}: {exc.strerror or exc}")
                continue
            removed.append(str(path))
    return removed, problems
