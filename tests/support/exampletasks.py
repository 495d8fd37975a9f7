"""The bundled example tasks laid out as in a task container: the task, the project as a git
tree, its baseline, and a fix."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from tests.support.realtask import git, ssegrade

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@dataclass(frozen=True)
class Example:
    """An example laid out as in a task container."""

    name: str
    task: Path
    source: Path
    baseline: Path
    fix: Path


def lay_out(work: Path, name: str, fix: str, *, baseline: bool = True) -> Example:
    root = work / name
    task, source = root / "task", root / "project"
    shutil.copytree(EXAMPLES / name / "task", task)
    shutil.copytree(EXAMPLES / name / "project", source, ignore=shutil.ignore_patterns("build"))
    git(source, "init", "-q", "-b", "main")
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "Initial commit")
    made = Example(name, task, source, root / "baseline", task / fix)
    if baseline:
        done = ssegrade("baseline", "--source", str(source), "--into", str(made.baseline))
        assert done.returncode == 0, done.stderr
    return made
