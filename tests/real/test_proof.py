"""The fidelity proof made along the patch's paths (`interpreters.real.git.proof`) gives what
the proof made the whole way gives (the base read whole into an index): the same tree id for
any small tree changed into any other (folders becoming files and back, links, exec bits,
deletions that empty a folder), on a base git would not write itself, and the same refusal for
a patch that does not apply."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from returns.result import Failure, Success

from interpreters.real import git
from tests.support.gittrees import (
    Entry,
    agent_env,
    capture_ok,
    edited,
    make_repo,
    record,
    run,
    trees,
)

pytestmark = pytest.mark.slow


def mktree(repo: Path, listing: str, env: dict[str, str]) -> str:
    """`git mktree` of an `ls-tree` listing: the tree's id."""
    done = subprocess.run(
        ["git", "mktree"], cwd=repo, env=env, input=listing.encode(), capture_output=True,
        check=True,
    )  # fmt: skip
    return done.stdout.decode().strip()


def both(baseline: git.Baseline, patch: bytes, base: str) -> tuple[object, object]:
    return (
        git.prove(baseline, patch, base),
        git.prove(baseline, patch, base, whole=True),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=trees, after=trees)
def test_the_proof_along_the_paths_equals_the_whole_proof(
    before: dict[str, Entry], after: dict[str, Entry]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        _source, baseline, captured = edited(Path(folder), before, after)

        along, whole = both(baseline, captured.patch, captured.base_tree)

        assert whole == Success(captured.new_tree)
        assert along == whole


def test_a_base_git_would_not_write_is_proved_alike(tmp_path: Path) -> None:
    files: dict[str, Entry] = {
        "src/a.c": ("file", b"a\n", False),
        "src/b.c": ("file", b"b\n", False),
        "src/deep/c.c": ("file", b"c\n", False),
        "other/d.c": ("file", b"d\n", False),
        "keep/e.c": ("file", b"e\n", False),
    }
    source = make_repo(tmp_path / "src", files)
    baseline = record(source, tmp_path / "baseline")
    (source / "src" / "a.c").write_text("changed\n")
    (source / "other" / "d.c").unlink()
    captured = capture_ok(source, baseline)
    # The same base with group-writable modes (`100664`), as old repositories hold, written
    # into the baseline's objects.
    env = {**agent_env(tmp_path), "GIT_OBJECT_DIRECTORY": str(baseline.objects)}
    top = run(source, "ls-tree", captured.base_tree)
    for folder in ("src", "keep"):
        old = run(source, "rev-parse", f"{captured.base_tree}:{folder}").strip()
        listing = run(source, "ls-tree", old).replace("100644", "100664")
        top = top.replace(old, mktree(source, listing, env))
    base = mktree(source, top, env)

    along, whole = both(baseline, captured.patch, base)

    # `src` is written anew, with git's modes; `keep`, off the patch's paths, is kept as it is.
    assert isinstance(whole, Success)
    assert whole != Success(captured.new_tree)
    assert along == whole


def test_a_patch_that_does_not_apply_is_refused_alike(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "src", {"a/x": ("file", b"one\n", False)})
    baseline = record(source, tmp_path / "baseline")
    (source / "a" / "x").write_text("two\n")
    captured = capture_ok(source, baseline)

    along, whole = both(baseline, captured.patch, captured.new_tree)  # applied twice

    assert isinstance(whole, Failure)
    assert along == whole
