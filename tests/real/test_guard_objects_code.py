"""The guard's evidence from a real build: sanitizer hooks an object defines however the source
spelled them, objects inside archives (a static library, a Rust `.rlib`), and the grading repo's
files read for both sides of a patch, never through a link."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from interpreters.real.files.reading import read_repo_file
from interpreters.real.objects import scan_objects
from ssegrade import Task
from ssegrade.guard import GuardFacts, guard, runtimes_for
from tests.support.guardkit import fake_elf

ASAN = runtimes_for("address")
HOOK = """#define J(a, b) a##b
const char *J(__as, an_default_options)(void) { return "exit" "code=0"; }
int main(void) { return 0; }
"""
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def _trees(tmp_path: Path) -> tuple[Path, Path]:
    repo, copy = tmp_path / "repo", tmp_path / "copy"
    for tree in (repo, copy):
        tree.mkdir()
        (tree / "m.c").write_text(HOOK)
    return repo, copy


@needs_gcc
def test_a_token_pasted_hook_is_evidence_in_the_object_built(tmp_path: Path) -> None:
    repo, copy = _trees(tmp_path)
    compile_ = ["gcc", "-fsanitize=address", "-c", "-o", str(copy / "m.o"), str(copy / "m.c")]
    subprocess.run(compile_, check=True)
    scan = scan_objects(copy, repo, ASAN)
    assert scan.hooks == (("__asan_default_options", "m.o"),)
    flags = guard(b"", Task(id="t", sanitizer="address"), GuardFacts(objects=scan))
    assert [(f.kind, f.confidence, f.where) for f in flags] == [("sanitizer", "evidence", "m.o")]


@needs_gcc
def test_objects_inside_a_static_archive_are_examined(tmp_path: Path) -> None:
    """A build that leaves only `.a`/`.rlib` archives is not 'none of 0 ELF files'."""
    repo, copy = _trees(tmp_path)
    (copy / "m.c").write_text("int f(int *p) { return *p; }\n")
    subprocess.run(
        ["gcc", "-fsanitize=address", "-c", "-o", str(copy / "m.o"), str(copy / "m.c")], check=True
    )
    (copy / "target" / "debug" / "deps").mkdir(parents=True)
    lib = copy / "target" / "debug" / "deps" / "libm-0123.rlib"
    subprocess.run(["ar", "rcs", str(lib), str(copy / "m.o")], check=True)
    (copy / "m.o").unlink()
    scan = scan_objects(copy, repo, ASAN)
    assert (scan.examined, scan.carrying) == (1, (("address", "target/debug/deps/libm-0123.rlib"),))


def test_a_repo_file_is_read_whole_never_through_a_link(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "a.c").write_bytes(b"int a;\n")
    (tmp_path / "secret").write_bytes(b"key\n")
    os.symlink(tmp_path / "secret", repo / "src" / "link.c")
    os.symlink(tmp_path, repo / "up")
    assert read_repo_file(repo, "src/a.c", 100) == b"int a;\n"
    for rel in ("src/link.c", "up/secret", "../secret", "src/missing.c", "src"):
        assert read_repo_file(repo, rel, 100) is None
    assert read_repo_file(repo, "src/a.c", 3) is None  # larger than the limit


def test_a_cargo_build_s_objects_are_reached_before_its_caches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cargo leaves thousands of cache files beside its objects: a bounded scan must reach
    `target/<triple>/<profile>/deps` before it stops."""
    repo, copy = tmp_path / "repo", tmp_path / "copy"
    repo.mkdir()
    for folder in ("incremental", ".fingerprint", *(f"cache{n}" for n in range(30))):
        cache = copy / "target" / folder
        cache.mkdir(parents=True)
        for i in range(30):
            (cache / f"f{i}.bin").write_bytes(b"x" * 60)
    deps = copy / "target" / "x86_64-unknown-linux-gnu" / "debug" / "deps"
    deps.mkdir(parents=True)
    (deps / "rle-0123").write_bytes(fake_elf(b"__asan_init"))
    monkeypatch.setattr("interpreters.real.objects.MAX_ENTRIES", 20)
    scan = scan_objects(copy, repo, ASAN)
    assert scan.carrying == (("address", "target/x86_64-unknown-linux-gnu/debug/deps/rle-0123"),)


@needs_gcc
def test_a_hook_is_found_in_an_object_after_the_runtime_was(tmp_path: Path) -> None:
    """The scan does not stop at the first object carrying the runtime: the hook may be in
    another one."""
    repo, copy = _trees(tmp_path)
    (copy / "build").mkdir()
    (copy / "zz").mkdir()
    (copy / "plain.c").write_text("int f(int *p) { return *p; }\n")
    for source, out in (("plain.c", "build/m.o"), ("m.c", "zz/h.o")):
        subprocess.run(
            ["gcc", "-fsanitize=address", "-c", "-o", str(copy / out), str(copy / source)],
            check=True,
        )
    scan = scan_objects(copy, repo, ASAN)
    assert scan.carrying == (("address", "build/m.o"),)
    assert scan.hooks == (("__asan_default_options", "zz/h.o"),)
