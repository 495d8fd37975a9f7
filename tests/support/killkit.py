"""Gradings killed at a random moment, and what of them is left: a task whose scripts leave
sleepers behind, a token and a temporary folder per grading, its processes, cgroups and
scratch folders found by the marks they carry.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from interpreters.real.files import remove_tree
from interpreters.real.runner import OWNER_VAR
from interpreters.real.runner.guardian import (
    cgroup_folders,
    group_owner,
    owner_tag,
    scratch_owner,
)
from tests.support.processes import live_with, unique
from tests.support.realtask import RealTask, fix_to, git, make_task, write_jobs

MARK = "SSEGRADE_KILL_TEST"
SETTLE = 2.0
"""Seconds after the kill within which nothing of the grading may remain."""

BUILD = """#!/bin/sh
. ./lib.sh
setsid sleep 300 0.{t} >/dev/null 2>&1 &
nohup sh -c 'sleep 300 0.{t}' >/dev/null 2>&1 &
echo "$VALUE" > out.txt
sleep 0.5
"""
RUN = """#!/bin/sh
sh -c 'sleep 300 0.{t} &' &
sleep 0.3
test -f out.txt || exit 3
grep -q fixed out.txt || exit 1
"""


@dataclass
class Grading:
    """What the test knows of one grading: its token, its temporary folder, the owner tags
    of its ssegrade processes (seen while they lived)."""

    token: str
    tmpdir: Path
    tags: set[str] = field(default_factory=set)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "TMPDIR": str(self.tmpdir), MARK: self.token}

    def look(self) -> None:
        """Note the owner tags of the live ssegrade processes of this grading."""
        for pid in carrying(f"{MARK}={self.token}"):
            with contextlib.suppress(OSError, TypeError, ValueError):
                if os.stat(f"/proc/{pid}").st_uid == 0:
                    self.tags.add(owner_tag(pid))

    def left(self, *, everything: bool = True) -> dict[str, list[str]]:
        """What of the grading is still there (`everything`: its unmarked scratch too)."""
        owners = {f"{OWNER_VAR}={tag}" for tag in self.tags}
        processes = [pid for entry in owners for pid in carrying(entry)]
        if everything:
            processes += carrying(f"{MARK}={self.token}") + live_with(self.token)
        groups = [
            str(folder / name)
            for folder in cgroup_folders()
            for name in listing(folder)
            if group_owner(name) in self.tags
        ]
        scratch = [
            name
            for name in listing(self.tmpdir)
            if scratch_owner(name) in self.tags or (everything and name.startswith("ssegrade-"))
        ]
        found = {"processes": sorted(map(described, set(processes))), "cgroups": groups}
        found["scratch"] = scratch
        return {what: items for what, items in found.items() if items}


def described(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return f"{pid} (gone)"
    return f"{pid} (parent {stat[1].decode()}): {command.decode(errors='replace')[:120]}"


def listing(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def carrying(entry: str) -> list[int]:
    """Live processes whose environment holds `entry` (`NAME=value`)."""
    wanted = entry.encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if wanted in environ and state not in (b"Z", b"X"):
            found.append(int(pid))
    return found


def settled(grading: Grading, *, everything: bool = True) -> dict[str, list[str]]:
    """What of `grading` is left once `SETTLE` seconds passed (empty as soon as nothing is)."""
    deadline = time.monotonic() + SETTLE
    while True:
        left = grading.left(everything=everything)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


@pytest.fixture
def grading() -> Iterator[Grading]:
    """A token and a temporary folder for the ssegrade a test starts; whatever of it is left
    at the end is killed and removed."""
    folder = Path(tempfile.mkdtemp(prefix="kill-tmp-"))
    folder.chmod(0o755)
    made = Grading(unique(), folder)
    yield made
    for pid in {*carrying(f"{MARK}={made.token}"), *live_with(made.token)}:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    settled(made)  # a guardian may still be removing what a failed test left
    remove_tree(folder)


def sleeping_task(root: Path, token: str, value: str | None = "fixed") -> RealTask:
    made = make_task(root, pocs=2)
    made.script("build.sh", BUILD.replace("{t}", token))
    made.script("run.sh", RUN.replace("{t}", token))
    if value is not None:
        made.set_value(value)
        git(made.source, "commit", "-qam", "change")
    return made


VALUES = ["bug0", "fixed", "bug2", "fixed3"]
"""The jobs' values: each patch another (no job is a cached copy of another); only `fixed`
passes."""


def batch_of(root: Path, token: str, jobs: int) -> tuple[Path, Path]:
    made = sleeping_task(root / "t", token, value=None)
    patches = {f"j{index}": fix_to(VALUES[index]) for index in range(jobs)}
    return write_jobs(root, made, patches), root / "results"
