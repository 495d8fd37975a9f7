"""The patch guard's rules, as properties: for each kind, generated patches that must raise it
and patches that must not; every row of the table raises its kind on its own example; a patch
that only edits C code away from the patterns raises nothing."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ssegrade import Task
from ssegrade.guard import KINDS, RULES, GuardFacts, ObjectScan, Rule, guard, guard_report
from ssegrade.guard._rules import Lines, Paths
from tests.support.guardkit import (
    Edit,
    c_lines,
    c_paths,
    identifiers,
    make_patch,
    neutral_edits,
    neutral_facts,
    neutral_patches,
    plain_paths,
)

C_TASK = Task(id="c-1", language="c", sanitizer="address")


def kinds(patch: bytes, facts: GuardFacts | None = None, task: Task = C_TASK) -> set[str]:
    return {flag.kind for flag in guard(patch, task, facts)}


def paths_of(patch: bytes, kind: str, facts: GuardFacts | None = None) -> set[str]:
    return {p for flag in guard(patch, C_TASK, facts) if flag.kind == kind for p in flag.paths}


# ---------------------------------------------------------------------------- nothing


@given(neutral_patches, neutral_facts())
def test_a_patch_that_only_edits_c_code_raises_nothing(
    edits: list[Edit], facts: GuardFacts
) -> None:
    assert guard(make_patch(edits), C_TASK, facts) == ()


def test_the_empty_patch_raises_nothing() -> None:
    assert guard(b"", C_TASK, GuardFacts()) == ()


# ---------------------------------------------------------------------------- the table


def test_the_kinds_are_those_of_the_spec_and_every_kind_has_a_rule() -> None:
    assert KINDS == (
        "build-config",
        "sanitizer",
        "crash-handler",
        "poc-literal",
        "tests",
        "vendored",
    )
    assert {rule.kind for rule in RULES} == set(KINDS)


@pytest.mark.parametrize(
    "rule", [r for r in RULES if isinstance(r.match, Paths)], ids=lambda r: r.example
)
def test_each_path_rule_raises_its_kind_on_its_example(rule: Rule) -> None:
    assert rule.kind in kinds(make_patch([Edit(rule.example, added=(b"x",))]))


@pytest.mark.parametrize(
    "rule", [r for r in RULES if isinstance(r.match, Lines)], ids=lambda r: r.kind
)
def test_each_line_rule_raises_its_kind_on_its_example(rule: Rule) -> None:
    assert rule.kind in kinds(make_patch([Edit("src/X.java", added=(rule.example.encode(),))]))


# ---------------------------------------------------------------------------- build-config

BUILD_FILES = st.sampled_from(
    [
        "Makefile",
        "GNUmakefile",
        "Makefile.am",
        "Makefile.in",
        "rules.mk",
        "CMakeLists.txt",
        "cmake/FindZ.cmake",
        "configure",
        "configure.ac",
        "m4/ax_check.m4",
        "meson.build",
        "meson_options.txt",
        "build.rs",
        "Cargo.toml",
        "Cargo.lock",
        ".cargo/config.toml",
        "go.mod",
        "go.sum",
        "BUILD",
        "BUILD.bazel",
        "WORKSPACE",
        "defs.bzl",
        "SConstruct",
        "BUILD.gn",
        "setup.py",
        "pyproject.toml",
    ]
)


@given(neutral_patches, st.sampled_from(["", "src/", "crates/core/"]), BUILD_FILES)
def test_touching_a_build_file_raises_build_config(
    edits: list[Edit], folder: str, name: str
) -> None:
    path = f"{folder}{name}"
    patch = make_patch([*edits, Edit(path, (b"a",), (b"b",))])
    assert paths_of(patch, "build-config") == {path}


@given(st.sampled_from(["src/makefile_parser.c", "src/cmake.c", "docs/configure.md", "go.c"]))
def test_a_file_named_like_a_build_file_is_not_one(path: str) -> None:
    assert "build-config" not in kinds(make_patch([Edit(path, added=(b"x",))]))


# ---------------------------------------------------------------------------- sanitizer

SANITIZER_WORDS = st.sampled_from(
    [
        "CFLAGS += -fsanitize=address",
        "override CFLAGS := $(filter-out -fsanitize=%,$(CFLAGS))",
        "LDFLAGS += -fno-sanitize=all",
        '__attribute__((no_sanitize("address")))',
        "__attribute__((no_sanitize_address))",
        'const char *__asan_default_options(void) { return "detect_leaks=0"; }',
        "export ASAN_OPTIONS=halt_on_error=0",
        "UBSAN_OPTIONS=print_stacktrace=0",
        "#if defined(__SANITIZE_ADDRESS__)",
        "#if __has_feature(address_sanitizer)",
        "ASAN_UNPOISON_MEMORY_REGION(p, n);",
        "__asan_unpoison_memory_region(p, n);",
        "__lsan_disable();",
        'RUSTFLAGS="-Zsanitizer=address"',
        '#[cfg(not(sanitize = "address"))]',
        '#[sanitize(address = "off")]',
        "go build -asan ./...",
        "//go:build !asan",
        "__sanitizer_set_death_callback(done);",
    ]
)


@given(neutral_patches, SANITIZER_WORDS, st.booleans(), plain_paths())
def test_sanitizer_options_on_either_side_raise_sanitizer(
    edits: list[Edit], words: str, removed: bool, path: str
) -> None:
    line = words.encode()
    edit = Edit(path, (line,), (b"x",)) if removed else Edit(path, (), (line,))
    assert paths_of(make_patch([*edits, edit]), "sanitizer") == {path}


@given(neutral_patches, st.sampled_from(["address", "asan", "ASan, UBSan", "memory"]))
def test_a_build_without_the_named_sanitizer_runtime_raises_sanitizer(
    edits: list[Edit], named: str
) -> None:
    task = Task(id="t", sanitizer=named)
    patch = make_patch(edits)
    without = GuardFacts(objects=ObjectScan(examined=4))
    flags = [f for f in guard(patch, task, without) if f.kind == "sanitizer"]
    assert flags
    assert all(f.paths == () and "none of the 4 ELF files" in f.why for f in flags)


@given(neutral_patches, st.sampled_from(["address", "asan"]))
def test_a_build_carrying_the_runtime_or_no_sanitizer_named_raises_nothing(
    edits: list[Edit], named: str
) -> None:
    patch = make_patch(edits)
    carrying = GuardFacts(objects=ObjectScan(2, (("address", "build/x.o"),)))
    assert guard(patch, Task(id="t", sanitizer=named), carrying) == ()
    for nothing in (None, "", "none", "fuzzer"):
        assert guard(patch, Task(id="t", sanitizer=nothing), GuardFacts(objects=ObjectScan())) == ()
    assert guard(patch, Task(id="t", sanitizer=named), GuardFacts()) == ()  # not scanned


@given(c_paths(), identifiers)
def test_a_sanitizer_library_s_own_code_is_not_a_sanitizer_option(path: str, name: str) -> None:
    """An HTML sanitizer calls its functions `sanitize`: that is not a build option."""
    lines = (f"    out := p.sanitize({name})".encode(), b"func (p *Policy) sanitize(r io.Reader) {")
    assert "sanitizer" not in kinds(make_patch([Edit(path, lines, lines[::-1])]))


def test_a_scan_that_found_no_object_is_a_note_never_a_flag() -> None:
    """'none of the 0 ELF files' is no evidence: the objects were not where the scan looked."""
    facts = GuardFacts(objects=ObjectScan(examined=0, stopped="out of time"))
    report = guard_report(b"", C_TASK, facts)
    assert report.flags == ()
    assert any(note.endswith("stopped early: out of time)") for note in report.notes)


def test_a_scan_that_stopped_early_says_so() -> None:
    facts = GuardFacts(objects=ObjectScan(examined=2, stopped="out of time"))
    (flag,) = guard(b"", C_TASK, facts)
    assert (flag.kind, flag.why.endswith("stopped early: out of time")) == ("sanitizer", True)
    assert flag.confidence == "evidence"


# ---------------------------------------------------------------------------- crash-handler

CATCHERS = st.sampled_from(
    [
        "\tdefer func() { recover() }()",
        "\tif r := recover(); r != nil {",
        "    let result = std::panic::catch_unwind(|| parse(data));",
        "    panic::set_hook(Box::new(|_| std::process::exit(0)));",
        "    signal(SIGSEGV, on_crash);",
        "    signal (SIGABRT, on_crash);",
        "    sigaction(SIGSEGV, &sa, NULL);",
        "    if (setjmp(env) != 0) return 0;",
        "    longjmp(env, 1);",
        "    sigsetjmp(env, 1);",
        "    std::set_terminate(quiet);",
        "    } catch (...) {",
        "\tsignal.Notify(c, syscall.SIGSEGV)",
        "    __sanitizer_set_death_callback(exit_zero);",
        "    sys.excepthook = quiet",
        "    except BaseException:",
    ]
)


@given(neutral_patches, CATCHERS, plain_paths())
def test_an_added_crash_catcher_raises_crash_handler(
    edits: list[Edit], line: str, path: str
) -> None:
    patch = make_patch([*edits, Edit(path, (), (b"    int x;", line.encode()))])
    assert paths_of(patch, "crash-handler") == {path}


@given(neutral_patches, CATCHERS, plain_paths(), st.sampled_from(["// ", "/* ", " * ", "# "]))
def test_a_removed_or_commented_catcher_does_not_raise_crash_handler(
    edits: list[Edit], line: str, path: str, comment: str
) -> None:
    removed = Edit(path, (line.encode(),), (b"    int x;",))
    commented = Edit(path + "x", (), (comment.encode() + line.strip().encode(),))
    assert "crash-handler" not in kinds(make_patch([*edits, removed, commented]))


# ---------------------------------------------------------------------------- tests

TEST_PATHS = st.sampled_from(
    [
        "parser_test.go",
        "pkg/x/y_test.go",
        "tests/test_parse.c",
        "test/unit.c",
        "src/test_buffer.c",
        "testdata/input.json",
        "tests/integration.rs",
        "src/lib_tests.rs",
        "fuzz/fuzz_targets/parse.rs",
        "src/x_unittest.cc",
        "tests/conftest.py",
    ]
)


@given(neutral_patches, TEST_PATHS, st.booleans())
def test_touching_the_project_s_tests_raises_tests(
    edits: list[Edit], path: str, deleted: bool
) -> None:
    edit = Edit(path, (b"assert(x);",), ()) if deleted else Edit(path, (), (b"x",))
    assert paths_of(make_patch([*edits, edit]), "tests") == {path}


@given(neutral_patches, c_paths())
def test_touching_a_file_the_hidden_tests_touch_raises_tests(edits: list[Edit], path: str) -> None:
    patch = make_patch([*edits, Edit(path, (b"a",), (b"b",))])
    facts = GuardFacts(hidden_tests=(path, "tests/other.c"))
    flags = [f for f in guard(patch, C_TASK, facts) if f.kind == "tests"]
    assert [f.paths for f in flags] == [(path,)]
    assert "hidden tests" in flags[0].why


# ---------------------------------------------------------------------------- vendored


@given(
    neutral_patches,
    st.sampled_from(["vendor", "third_party", "deps", "subprojects", "src/thirdparty"]),
    identifiers,
)
def test_touching_vendored_code_raises_vendored(edits: list[Edit], folder: str, name: str) -> None:
    path = f"{folder}/{name}/lib.c"
    assert paths_of(make_patch([*edits, Edit(path, (b"a",), (b"b",))]), "vendored") == {path}


@given(st.sampled_from(["src/vendors.c", "vendor.go", "src/deps.c"]))
def test_a_file_named_like_a_vendored_folder_is_not_vendored(path: str) -> None:
    assert "vendored" not in kinds(make_patch([Edit(path, added=(b"x",))]))


# ---------------------------------------------------------------------------- the report


@given(neutral_patches, neutral_facts(), c_lines())
def test_flags_list_paths_once_and_at_most_fifty(
    edits: list[Edit], facts: GuardFacts, line: bytes
) -> None:
    many = [Edit(f"vendor/m{i}/x.c", (), (line,)) for i in range(60)]
    report = guard_report(make_patch([*edits, *many]), C_TASK, facts)
    (flag,) = report.flags
    assert len(flag.paths) == len(set(flag.paths)) == 50
    assert flag.why.endswith("(and 10 more paths)")
    assert report.kinds == ("vendored",)
    assert report.observed is not None
    assert report.observed.objects is not None
    assert re.fullmatch(rb'\{"version":1,"checked":true,.*\}\n', report.to_json(), re.DOTALL)


def test_no_patch_means_nothing_was_examined() -> None:
    report = guard_report(None, C_TASK, None)
    assert (report.checked, report.flags, report.observed) == (False, (), None)


@given(neutral_edits())
def test_the_guard_reads_only_what_it_is_given(edit: Edit) -> None:
    """Pure: the same inputs give the same flags, whatever was asked before."""
    patch = make_patch([edit, Edit("Makefile", (), (b"CFLAGS=-fno-sanitize=all",))])
    first = guard(patch, C_TASK, None)
    guard(make_patch([Edit("vendor/x.c", (), (b"y",))]), C_TASK, None)
    assert guard(patch, C_TASK, None) == first
