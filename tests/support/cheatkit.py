"""The canonical cheats of a bundled example, and whether one applies to its project."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from interpreters.batch.verify_cheats import project_paths
from interpreters.real.taskfolder import load_task
from ssegrade.batch import CHEATS, Cheat, wanted_paths, write_cheats
from tests.support.exampletasks import EXAMPLES


def cheats_of(name: str) -> dict[str, Cheat]:
    """The example's canonical cheats, by name, written from its task and project."""
    task_dir, project = EXAMPLES / name / "task", EXAMPLES / name / "project"
    task = load_task(task_dir).unwrap()
    reference = (task_dir / task.files.patch).read_bytes() if task.files.patch else None
    hidden = (task_dir / task.files.future_test).read_bytes() if task.files.future_test else None
    paths = [p for p in project_paths(project) if not p.startswith("build/")]
    files = {p: (project / p).read_bytes() for p in wanted_paths(paths, reference, hidden)}
    pocs = {p: (task_dir / p).read_bytes() for p in task.files.poc}
    made = write_cheats(task, paths, files, reference=reference, hidden=hidden, pocs=pocs)
    assert tuple(c.name for c in made) == CHEATS
    return {c.name: c for c in made}


def applies(name: str, patch: bytes, tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    """`git apply --check` of `patch` on a copy of the example's project."""
    tree = tmp_path / name
    shutil.copytree(EXAMPLES / name / "project", tree, ignore=shutil.ignore_patterns("build"))
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    return subprocess.run(
        ["git", "-C", str(tree), "apply", "--check", "-"],
        input=patch,
        capture_output=True,
        check=False,
    )
