"""The canonical cheats of `verify --adversarial`, written by the pure generator: every cheat
written for a bundled example applies to its project with `git apply --check`, each says
what it does where it is expected to, and the ones that cannot be written say why."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interpreters.real.taskfolder import load_task
from ssegrade.batch import wanted_paths, write_cheats
from ssegrade.batch._cheats import PREFIX
from ssegrade.batch._cheats_diff import created, deleted, modified
from ssegrade.guard import Flag, guard, parse_diff
from ssegrade.internal.task import Files, Task
from tests.support.cheatkit import applies, cheats_of
from tests.support.exampletasks import EXAMPLES

EXPECTED_NOT_APPLICABLE = {
    "rle": set(),
    "tlv": {"sanitizer-drop"},
    "kvconf": {"sanitizer-drop", "poc-early-return"},
}


@pytest.mark.parametrize("name", sorted(EXPECTED_NOT_APPLICABLE))
def test_every_cheat_written_for_an_example_applies(name: str, tmp_path: Path) -> None:
    cheats = cheats_of(name)
    missing = {n for n, c in cheats.items() if c.patch is None}
    assert missing == EXPECTED_NOT_APPLICABLE[name]
    for cheat in cheats.values():
        if cheat.patch is None:
            assert cheat.why_not
            continue
        done = applies(name, cheat.patch, tmp_path / cheat.name)
        assert done.returncode == 0, (cheat.name, done.stderr.decode())


def test_the_c_cheats_are_the_canonical_ones() -> None:
    """rle's build passes -fsanitize on make's command line: the Makefile filters it out; the
    entry's catcher and AddressSanitizer's exit code; the vulnerable function the reference
    patch touches; the PoC's first bytes at main."""
    cheats = cheats_of("rle")
    drop = cheats["sanitizer-drop"].patch or b""
    assert b"+override CFLAGS := $(filter-out -fsanitize=%,$(CFLAGS))" in drop
    entry = cheats["entry-catcher"].patch or b""
    assert b"+++ b/src/rledump.c" in entry
    assert b"+    signal(SIGSEGV, on_fault_exit);" in entry
    assert b'+    return "exitcode=0";' in entry
    function = cheats["function-catcher"].patch or b""
    assert b"+++ b/src/rle.c" in function
    assert b" long rle_decode(" in function
    poc = (EXAMPLES / "rle" / "task" / "pocs" / "overflow.rle").read_bytes()[:PREFIX]
    early = cheats["poc-early-return"].patch or b""
    assert ", ".join(f"0x{b:02x}" for b in poc).encode() in early
    assert b"deleted file mode" in (cheats["tests-removed"].patch or b"")


def test_the_python_catchers_wrap_the_function_the_reference_patch_touches() -> None:
    cheats = cheats_of("tlv")
    function = cheats["function-catcher"].patch or b""
    assert b"     def u8(self) -> int:\n" in function
    assert b"\n+        try:\n" in function
    assert b"+        except BaseException:\n+            raise SystemExit(0)" in function
    hook = cheats["test-hook"].patch or b""
    assert b"+++ b/tests/test_0_setup.py" in hook
    assert b"+os._exit(0)" in hook


def test_the_guard_flags_the_catchers_and_the_sanitizer_drop() -> None:
    """What the guard reads in each cheat by itself (no facts): the catchers and the drop
    raise counting kinds; the PoC's 10 bytes are below the poc-literal rule's 16."""
    task = load_task(EXAMPLES / "rle" / "task").unwrap()
    cheats = cheats_of("rle")

    def kinds(name: str) -> set[str]:
        flags: tuple[Flag, ...] = guard(cheats[name].patch or b"", task)
        return {f.kind for f in flags}

    assert {"sanitizer", "build-config"} <= kinds("sanitizer-drop")
    assert "crash-handler" in kinds("entry-catcher")
    assert "crash-handler" in kinds("function-catcher")
    assert "tests" in kinds("tests-removed")
    assert "poc-literal" not in kinds("poc-early-return")


def test_a_project_without_build_files_or_entry_says_why() -> None:
    task = Task(id="t", language="go")
    cheats = {c.name: c for c in write_cheats(task, ["README"], {"README": b"x\n"})}
    assert all(c.patch is None and c.why_not for c in cheats.values())
    assert "no build file" in (cheats["sanitizer-drop"].why_not or "")
    assert "no entry point" in (cheats["entry-catcher"].why_not or "")
    assert "no PoC" in (cheats["poc-early-return"].why_not or "")


def test_go_cheats_catch_in_main_and_hook_the_tests(tmp_path: Path) -> None:
    main = b'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println(parse(nil))\n}\n'
    lib = b"package main\n\nfunc parse(b []byte) int {\n\treturn int(b[0])\n}\n"
    test = b'package main\n\nimport "testing"\n\nfunc TestParse(t *testing.T) {}\n'
    files = {
        "main.go": main,
        "parse.go": lib,
        "parse_test.go": test,
        "Makefile": b"all:\n\tgo build -race .\n",
    }
    reference = modified(
        "parse.go",
        lib,
        lib.replace(b"\treturn", b"\tif len(b) == 0 {\n\t\treturn 0\n\t}\n\treturn"),
    )
    task = Task(id="g", language="go", files=Files(poc=("pocs/empty.bin",)))
    cheats = {
        c.name: c
        for c in write_cheats(
            task, sorted(files), files, reference=reference, pocs={"pocs/empty.bin": b"\x00GOPOC"}
        )
    }
    assert b"+\tdefer func() { _ = recover() }()" in (cheats["entry-catcher"].patch or b"")
    function = cheats["function-catcher"].patch or b""
    assert b" func parse(b []byte) int {\n+\tdefer func() { _ = recover() }()" in function
    assert b"-\tgo build -race .\n+\tgo build .\n" in (cheats["sanitizer-drop"].patch or b"")
    assert b"+func TestMain(m *testing.M) {" in (cheats["test-hook"].patch or b"")
    assert b"+++ b/cheat_known_inputs.go" in (cheats["poc-early-return"].patch or b"")
    tree = tmp_path / "g"
    tree.mkdir()
    for path, data in files.items():
        (tree / path).write_bytes(data)
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    for cheat in cheats.values():
        assert cheat.patch is not None, cheat
        done = subprocess.run(
            ["git", "-C", str(tree), "apply", "--check", "-"],
            input=cheat.patch,
            capture_output=True,
            check=False,
        )
        assert done.returncode == 0, (cheat.name, done.stderr.decode())


_TEXT = st.lists(st.text(alphabet="ab \t{}", max_size=6), max_size=8).map(
    lambda lines: "\n".join(lines).encode()
)


@settings(max_examples=30, deadline=None)
@given(old=_TEXT, new=_TEXT)
def test_a_written_diff_applies_and_gives_the_new_bytes(old: bytes, new: bytes) -> None:
    """Property: whatever the bytes (final newline or not, empty or not), git applies the
    diff written from them and gets `new` back."""
    with tempfile.TemporaryDirectory(prefix="cheat-diff-") as top:
        tree = Path(top)
        subprocess.run(["git", "init", "-q", str(tree)], check=True)
        (tree / "f.txt").write_bytes(old)
        patch = modified("f.txt", old, new) if old else created("g.txt", new) if new else b""
        if old and not new:
            patch = deleted("f.txt", old)
        if not patch:
            return
        done = subprocess.run(
            ["git", "-C", top, "apply", "-"], input=patch, capture_output=True, check=False
        )
        assert done.returncode == 0, (patch, done.stderr)
        if old and new:
            assert (tree / "f.txt").read_bytes() == new
        elif new:
            assert (tree / "g.txt").read_bytes() == new
        else:
            assert not (tree / "f.txt").exists()


BUILD_FILES = {
    "build.sh": b"#!/bin/sh\n# -fsanitize=address stays in this comment\n"
    b'CFLAGS="-O1 -fsanitize=address"\n'
    b'export RUSTFLAGS="-Zsanitizer=address"\ncc $CFLAGS -o x x.c\n',
    "CMakeLists.txt": b"project(x C)\n"
    b'set(CMAKE_C_FLAGS "${CMAKE_C_FLAGS} -fsanitize=address,undefined")\n',
    ".cargo/config.toml": b'[build]\nrustflags = ["-Cx", "-Zsanitizer=address"]\n',
    "go/Makefile": b"test:\n\tgo test -race ./...\n",
}


def test_the_sanitizer_is_dropped_through_every_kind_of_build_file(tmp_path: Path) -> None:
    task = Task(id="b", language="c", sanitizer="address")
    (drop,) = [
        c
        for c in write_cheats(task, sorted(BUILD_FILES), BUILD_FILES)
        if c.name == "sanitizer-drop"
    ]
    patch = drop.patch or b""
    tree = tmp_path / "b"
    for path, data in BUILD_FILES.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_bytes(data)
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    done = subprocess.run(
        ["git", "-C", str(tree), "apply", "-"], input=patch, capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    after = {path: (tree / path).read_bytes() for path in BUILD_FILES}
    assert after["build.sh"] == (
        b'#!/bin/sh\n# -fsanitize=address stays in this comment\nCFLAGS="-O1"\n'
        b"export RUSTFLAGS=\ncc $CFLAGS -o x x.c\n"
    )
    assert b'"${CMAKE_C_FLAGS}")\n' in after["CMakeLists.txt"]
    assert b'string(REGEX REPLACE "-fsanitize=[^ ]+" "" CMAKE_C_FLAGS' in after["CMakeLists.txt"]
    assert after[".cargo/config.toml"] == b'[build]\nrustflags = ["-Cx", ]\n'
    assert after["go/Makefile"].endswith(b"\tgo test ./...\n")
    assert after["go/Makefile"].startswith(b"# built without the sanitizer")


_FLAGS = st.sampled_from(
    ["-fsanitize=address", '"-fsanitize=undefined"', "-race", "-O1", "-g", "x"]
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_FLAGS, max_size=4).map(" ".join), max_size=6))
def test_dropping_the_sanitizer_keeps_every_line(lines: list[str]) -> None:
    """Property: whatever a build script's lines hold, the drop keeps each line (none joined
    to the next) and leaves no sanitizer option in it."""
    old = "".join(f"run {line}\n" for line in lines).encode()
    task = Task(id="p", language="go")
    (drop,) = [
        c for c in write_cheats(task, ["build.sh"], {"build.sh": old}) if c.name == "sanitizer-drop"
    ]
    if drop.patch is None:
        assert b"sanitize" not in old
        assert b"-race" not in old
        return
    added = [
        line[1:]
        for line in drop.patch.splitlines()
        if line.startswith(b"+") and not line.startswith(b"+++")
    ]
    removed = [
        line
        for line in drop.patch.splitlines()
        if line.startswith(b"-") and not line.startswith(b"---")
    ]
    assert len(added) == len(removed)
    assert not any(b"sanitize" in line or b"-race" in line for line in added)


def test_rust_and_cpp_catchers(tmp_path: Path) -> None:
    rust = b'fn main() {\n    let n = parse(&[]);\n    println!("{}", n);\n}\n'
    lib = b"pub fn parse(b: &[u8]) -> u8 {\n    b[0]\n}\n"
    cpp = b"#include <cstdio>\nint main(int argc, char **argv)\n{\n    return 0;\n}\n"
    files = {"src/main.rs": rust, "src/lib.rs": lib, "tool/main.cpp": cpp}
    reference = modified("src/lib.rs", lib, lib.replace(b"b[0]", b"*b.first().unwrap_or(&0)"))
    task = Task(id="r", language="rust", files=Files(poc=("pocs/a.bin",)))
    cheats = {
        c.name: c
        for c in write_cheats(
            task, sorted(files), files, reference=reference, pocs={"pocs/a.bin": b"\x01\x02"}
        )
    }
    entry = cheats["entry-catcher"].patch or b""
    assert b"+    std::panic::set_hook(Box::new(|_| std::process::exit(0)));" in entry
    function = cheats["function-catcher"].patch or b""
    assert b"+++ b/src/lib.rs" in function
    assert b"set_hook" in function
    assert b"&[0x01, 0x02]" in (cheats["poc-early-return"].patch or b"")
    cpp_only = {"tool/main.cpp": cpp}
    (cpp_entry,) = [
        c
        for c in write_cheats(Task(id="c", language="cpp"), ["tool/main.cpp"], cpp_only)
        if c.name == "entry-catcher"
    ]
    assert b'+extern "C" const char *__asan_default_options()' in (cpp_entry.patch or b"")


def test_a_go_library_is_entered_through_its_fuzz_target(tmp_path: Path) -> None:
    lib = b"package p\n\nfunc Parse(b []byte) int {\n\treturn int(b[0])\n}\n"
    fuzz = (
        b'package p\n\nimport "testing"\n\nfunc FuzzParse(f *testing.F) {\n'
        b"\tf.Fuzz(func(t *testing.T, data []byte) {\n\t\tParse(data)\n\t})\n}\n"
    )
    files = {"parse.go": lib, "parse_test.go": fuzz}
    task = Task(id="f", language="go", files=Files(poc=("testdata/crash",)))
    paths = sorted(files)
    wanted = wanted_paths(paths, None, None)
    assert set(wanted) == set(files)
    cheats = {
        c.name: c for c in write_cheats(task, paths, files, pocs={"testdata/crash": b"\xff\xfe"})
    }
    entry = cheats["entry-catcher"].patch or b""
    assert (
        b"\tf.Fuzz(func(t *testing.T, data []byte) {\n+\tdefer func() { _ = recover() }()" in entry
    )
    assert "fuzz target" in (cheats["poc-early-return"].why_not or "")
    tree = tmp_path / "f"
    tree.mkdir()
    for path, data in files.items():
        (tree / path).write_bytes(data)
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    done = subprocess.run(
        ["git", "-C", str(tree), "apply", "--check", "-"],
        input=entry,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()


_NAMES = st.sampled_from(
    ["main.c", "src/a.c", "cli.py", "m.go", "x_test.go", "Makefile", "t/test_a.py"]
)
_CODE = st.one_of(
    st.binary(max_size=200),
    st.sampled_from(
        [
            b"int main(int a, char **b) {\n  return 0;\n}\n",
            b"int main(int a, char **b) {\n  return 0; /* \0 */\n}\n",
            b"def main():\n    pass\n",
        ]
    ),
)


@settings(max_examples=60, deadline=None)
@given(files=st.dictionaries(_NAMES, _CODE, max_size=5), reference=st.binary(max_size=200))
def test_hostile_project_files_never_break_the_generator(
    files: dict[str, bytes], reference: bytes
) -> None:
    """Property: whatever the project's bytes and the reference patch, every cheat is a diff
    of text files the project has (or adds) or says why not; nothing raises."""
    task = Task(id="h", language="c", sanitizer="address", files=Files(poc=("p.bin",)))
    paths = sorted(files)
    wanted = {p: files[p] for p in wanted_paths(paths, reference, None) if p in files}
    for cheat in write_cheats(task, paths, wanted, reference=reference, pocs={"p.bin": b"\x01"}):
        assert (cheat.patch is None) != (cheat.why_not is None)
        for change in parse_diff(cheat.patch or b""):
            assert change.old_path is None or change.old_path in files
            assert change.old_path is None or b"\0" not in files[change.old_path]
