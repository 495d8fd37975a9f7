"""A project's own sanitizer hook is not the patch's: graded for real on the rle task whose
project defines `__asan_default_options` before the patch (outside test and fuzz folders),
the reference fix raises no evidence flag for the hook, while a patch that changes what the
hook returns is flagged `sanitizer`/`evidence`; and the pure rule, both ways."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.real.objects import named_in_sources
from ssegrade import Task
from ssegrade.guard import Flag, GuardFacts, ObjectScan, SourceFile, guard
from tests.support.exampletasks import Example, lay_out
from tests.support.guardkit import Case, Edit, case_patch, make_patch
from tests.support.realtask import git, ssegrade

OWN = b"""
/* The project's own defaults for its sanitizer builds. */
const char *__asan_default_options(void)
{
    return "detect_leaks=0";
}
"""
HOOKED = b"__asan_default_options"


def _flags(report: dict[str, object]) -> list[tuple[str, str, str | None]]:
    return [(f["kind"], f["confidence"], f["where"]) for f in report["flags"]]  # type: ignore[attr-defined]


def _hook_flags(report: dict[str, object]) -> list[object]:
    return [f for f in report["flags"] if "hook" in f["why"]]  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- the rule

SCAN = ObjectScan(
    examined=3,
    carrying=(("address", "build/rledump"),),
    hooks=(("__asan_default_options", "build/rle.o"),),
    known=(("__asan_default_options", "src/rle.c"),),
)
TASK = Task(id="t", sanitizer="address")
BEFORE = b"#include <stddef.h>\n" + OWN + b"\nlong f(long n)\n{\n    return n;\n}\n"


def _hooks_raised(after: bytes, tmp: Path) -> list[Flag]:
    patch = case_patch(Case("own", None, (), {"src/rle.c": BEFORE}, {"src/rle.c": after}), tmp)
    facts = GuardFacts(objects=SCAN, sources=(SourceFile("src/rle.c", BEFORE),))
    return [f for f in guard(patch, TASK, facts) if "hook" in f.why]


def test_a_hook_the_project_had_is_not_flagged_when_the_patch_leaves_it(tmp_path: Path) -> None:
    after = BEFORE.replace(b"    return n;", b"    return n > 8 ? -1 : n;")
    assert after != BEFORE
    assert _hooks_raised(after, tmp_path) == []


def test_a_hook_the_patch_changes_is_flagged(tmp_path: Path) -> None:
    after = BEFORE.replace(b'"detect_leaks=0"', b'"exit" "code=0"')
    (flag,) = _hooks_raised(after, tmp_path)
    assert (flag.kind, flag.confidence) == ("sanitizer", "evidence")


def test_a_hook_the_project_never_named_is_flagged() -> None:
    patch = make_patch([Edit("src/x.c", (b"    return n;",), (b"    return n > 8 ? -1 : n;",))])
    facts = GuardFacts(objects=ObjectScan(3, (("address", "a"),), hooks=SCAN.hooks))
    assert [f.confidence for f in guard(patch, TASK, facts) if "hook" in f.why] == ["evidence"]


# ---------------------------------------------------------------------------- graded for real


@pytest.fixture
def hooked() -> Iterator[Example]:
    """The rle example whose project defines its own hook in src/rle.c."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-own-hook-"))
    folder.chmod(0o755)
    try:
        example = lay_out(folder, "rle", "diffs/patch.diff", baseline=False)
        lib = example.source / "src" / "rle.c"
        lib.write_bytes(lib.read_bytes() + OWN)
        git(example.source, "commit", "-q", "-a", "--amend", "-m", "Initial commit")
        done = ssegrade(
            "baseline", "--source", str(example.source), "--into", str(example.baseline)
        )
        assert done.returncode == 0, done.stderr
        yield example
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _grade(example: Example, name: str) -> dict[str, object]:
    results = example.task.parent / name
    done = ssegrade(
        "evaluate",
        "--task",
        str(example.task),
        "--source",
        str(example.source),
        "--baseline",
        str(example.baseline),
        "--results",
        str(results),
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads((results / "guard.json").read_bytes())
    return report


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_the_reference_fix_of_a_project_with_its_own_hook_is_not_flagged(
    hooked: Example,
) -> None:
    subprocess.run(["git", "-C", str(hooked.source), "apply", str(hooked.fix)], check=True)
    report = _grade(hooked, "fix")
    assert not [f for f in _flags(report) if f[1] == "evidence"], report


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_a_patch_that_turns_the_project_s_hook_quiet_is_flagged(hooked: Example) -> None:
    lib = hooked.source / "src" / "rle.c"
    lib.write_bytes(lib.read_bytes().replace(b'"detect_leaks=0"', b'"exitcode=0:detect_leaks=0"'))
    report = _grade(hooked, "cheat")
    assert [(f["kind"], f["confidence"]) for f in _hook_flags(report)] == [  # type: ignore[index]
        ("sanitizer", "evidence")
    ], report


def test_the_project_s_sources_are_read_without_following_links(tmp_path: Path) -> None:
    """The attack: the grading repo holds a link named like a source file to a file naming the
    hook; the hook must not pass for the project's own through it."""
    repo, outside = tmp_path / "repo", tmp_path / "outside.c"
    (repo / "src").mkdir(parents=True)
    outside.write_bytes(OWN)
    (repo / "src" / "own.c").symlink_to(outside)
    (repo / "src" / "linked").symlink_to(tmp_path)
    (repo / "src" / "real.c").write_bytes(b"int my__asan_default_options_x;\n")
    assert named_in_sources(repo, frozenset({"__asan_default_options"})) == ()
    (repo / "src" / "kept.h").write_bytes(OWN)
    assert named_in_sources(repo, frozenset({"__asan_default_options"})) == (
        ("__asan_default_options", "src/kept.h"),
    )
