"""A grading repo is named by its HEAD's tree only when it is exactly that commit, read with the
one hermetic git runner: nothing the repo's own configuration asks for runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from interpreters.batch.jobs import repo_identity
from interpreters.real.git import clean_tree
from tests.support.realtask import git

pytestmark = pytest.mark.slow


def _repo(path: Path) -> Path:
    path.mkdir()
    (path / "a.txt").write_text("a\n")
    (path / ".gitignore").write_text("build/\n")
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def test_a_clean_checkout_is_its_heads_tree(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert clean_tree(repo) == tree
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("ignored\n")
    assert repo_identity(repo) == f"tree:{tree}"  # an ignored file changes nothing


@pytest.mark.parametrize("change", ["edit", "untracked"])
def test_a_changed_checkout_is_named_by_its_content(tmp_path: Path, change: str) -> None:
    repo = _repo(tmp_path / "repo")
    if change == "edit":
        (repo / "a.txt").write_text("b\n")
    else:
        (repo / "new.txt").write_text("new\n")
    assert clean_tree(repo) is None
    assert repo_identity(repo).startswith("content:")


def test_the_repos_own_configuration_runs_nothing(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    marker = tmp_path / "ran"
    hook = tmp_path / "monitor.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(hook))
    assert clean_tree(repo) is not None
    assert not marker.exists()


def test_no_repository_is_no_tree(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    assert clean_tree(tmp_path / "plain") is None
    assert repo_identity(tmp_path / "plain").startswith("content:")
