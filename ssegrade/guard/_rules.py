"""The guard's rules: one table, data only (SPEC §15).

Pure core. Each `Rule` names the kind of flag it raises, what it matches, the sentence a flag
starts with, and an example that raises it (the tests read every example, so a new rule comes
with one). What a rule can match:

- `Paths`: the patch touches a path whose file name matches a glob of `names`, or that lies
  in a folder named in `folders`, or that ends with a glob of `suffixes` (`.cargo/config*`);
- `Lines`: an added line (`side="added"`) or an added or removed line (`side="changed"`)
  matches `pattern`; with `code_only`, comment lines are not read;
- `HiddenTests`: the patch touches a path the task's hidden test diff touches;
- `RuntimeMissing`: the task names a sanitizer and no object the grading build produced
  carries its runtime;
- `PocBytes`: an added line (or an added binary file) holds `least` consecutive bytes of a
  PoC file (`ssegrade.guard._literal`).

`ssegrade.guard._check` applies the table; to extend the guard, add a row here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ssegrade.guard._model import Kind

__all__ = [
    "RULES",
    "VENDOR_FOLDERS",
    "HiddenTests",
    "Lines",
    "Matcher",
    "Paths",
    "PocBytes",
    "Rule",
    "RuntimeMissing",
]


@dataclass(frozen=True, slots=True)
class Paths:
    """A path the patch touches: by file name glob, by folder name, or by path-suffix glob."""

    names: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Lines:
    """A line of the patch that matches `pattern` (bytes): added ones, or added and removed.
    `hints`: a line can match only if it holds one of them (a quick test before the pattern:
    a patch can have millions of lines)."""

    pattern: re.Pattern[bytes]
    hints: tuple[bytes, ...]
    side: Literal["added", "changed"] = "added"
    code_only: bool = False

    def matches(self, line: bytes) -> bool:
        """Whether `line` matches (comments left to the caller)."""
        return any(hint in line for hint in self.hints) and self.pattern.search(line) is not None


@dataclass(frozen=True, slots=True)
class HiddenTests:
    """A path the task's hidden test diff (`files.future_test`) touches."""


@dataclass(frozen=True, slots=True)
class RuntimeMissing:
    """The task's `sanitizer` runtime is absent from every object the grading build made."""


@dataclass(frozen=True, slots=True)
class PocBytes:
    """`least` consecutive bytes of a PoC file in an added line or an added binary file."""

    least: int = 16


Matcher = Paths | Lines | HiddenTests | RuntimeMissing | PocBytes


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of the table. `example` is a path (`Paths`), a line (`Lines`) or a word on
    the facts it needs (the other matchers) that raises the rule."""

    kind: Kind
    match: Matcher
    why: str
    example: str


_SANITIZER_WORDS = re.compile(
    rb"-f(?:no-)?sanitize|no_sanitize|-Zsanitizer|#!?\[sanitize\s*\("
    rb"|\bsanitize\s*=\s*\"(?:address|memory|thread|leak|hwaddress|cfi|kcfi|memtag|safestack)"
    rb"|\b(?:A|M|T|L|UB|HWA)SAN_OPTIONS\b|__(?:asan|msan|tsan|lsan|ubsan|hwasan)_default_options"
    rb"|__sanitizer_set_death_callback|__SANITIZE_(?:ADDRESS|THREAD|HWADDRESS)__"
    rb"|\b(?:address|memory|thread|undefined_behavior|leak|hwaddress)_sanitizer\b"
    rb"|(?:^|[\s\"'=])-(?:asan|msan|race)\b|go:build.*\b(?:asan|msan|race)\b"
    rb"|\bASAN_(?:UN)?POISON|__asan_(?:un)?poison|__lsan_(?:disable|ignore_object)"
    rb"|\b(?:halt_on_error|detect_leaks|abort_on_error|allocator_may_return_null)\s*="
)

_CRASH_CATCHERS = re.compile(
    rb"\brecover\s*\(\s*\)|\bcatch_unwind\b|\bpanic::(?:set_hook|take_hook)\b"
    rb"|\bsignal\s*\(\s*SIG(?:SEGV|BUS|ABRT|FPE|ILL|TRAP|SYS)\b|\bsigaction\b|\bsigaltstack\b"
    rb"|\b(?:_|sig)?setjmp\b|\b(?:_|sig)?longjmp\b|__sanitizer_set_death_callback"
    rb"|\bset_terminate\b|\bSetUnhandledExceptionFilter\b|\b__try\b"
    rb"|\bsetDefaultUncaughtExceptionHandler\b|\bsys\.excepthook\s*="
    rb"|\bsignal\.signal\s*\(\s*signal\.SIG(?:SEGV|BUS|ABRT|FPE|ILL)\b"
    rb"|\bsignal\.(?:Notify|Ignore)\s*\([^)]*\bSIG(?:SEGV|BUS|ABRT|FPE|ILL)\b"
    rb"|\bdebug\.SetPanicOnFault\b|\bcatch\s*\(\s*\.\.\.\s*\)|\bexcept\s*(?:BaseException\b|:)"
)

_SANITIZER_HINTS = (
    b"sanitiz",
    b"SANITIZ",
    b"SAN_OPTIONS",
    b"_default_options",
    b"asan",
    b"msan",
    b"lsan",
    b"ASAN",
    b"race",
    b"halt_on_error",
    b"detect_leaks",
    b"abort_on_error",
    b"allocator_may_return_null",
)

_CRASH_HINTS = (
    b"recover",
    b"catch",
    b"hook",
    b"signal",
    b"sigaction",
    b"sigaltstack",
    b"jmp",
    b"sanitizer_set_death_callback",
    b"terminate",
    b"UnhandledExceptionFilter",
    b"__try",
    b"UncaughtExceptionHandler",
    b"excepthook",
    b"SetPanicOnFault",
    b"except",
)

_BUILD_FILES = (
    "Makefile",
    "Makefile.*",
    "makefile",
    "GNUmakefile",
    "*.mk",
    "*.mak",
    "*.make",
    "CMakeLists.txt",
    "*.cmake",
    "CMakePresets.json",
    "configure",
    "configure.ac",
    "configure.in",
    "*.m4",
    "*.am",
    "meson.build",
    "meson_options.txt",
    "meson.options",
    "build.rs",
    "Cargo.toml",
    "Cargo.lock",
    "rust-toolchain",
    "rust-toolchain.toml",
    "go.mod",
    "go.sum",
    "go.work",
    "go.work.sum",
    "BUILD",
    "BUILD.bazel",
    "WORKSPACE",
    "WORKSPACE.bazel",
    "MODULE.bazel",
    "*.bzl",
    ".bazelrc",
    "SConstruct",
    "SConscript",
    "*.gyp",
    "*.gypi",
    "*.gn",
    "*.gni",
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "pom.xml",
    "setup.py",
    "setup.cfg",
    "pyproject.toml",
    "Kbuild",
    "build.zig",
    "xmake.lua",
    "premake*.lua",
    "Jamfile",
    "Jamroot",
    "*.vcxproj",
    "build.sh",
    "autogen.sh",
)

_TEST_FILES = (
    "*_test.go",
    "*_test.rs",
    "*_tests.rs",
    "test_*.c",
    "test-*.c",
    "*_test.c",
    "*-test.c",
    "test_*.cc",
    "*_test.cc",
    "*_test.cpp",
    "*_unittest.cc",
    "*_unittest.cpp",
    "*_fuzzer.c",
    "*_fuzzer.cc",
    "*_fuzzer.cpp",
    "fuzz_*.c",
    "test_*.py",
    "*_test.py",
    "conftest.py",
    "*.test.js",
    "*.spec.js",
    "*.test.ts",
    "*.spec.ts",
    "*Test.java",
    "*Tests.java",
    "*_spec.rb",
    "*_test.rb",
)

_TEST_FOLDERS = (
    "test",
    "tests",
    "testdata",
    "testsuite",
    "testing",
    "__tests__",
    "unittest",
    "unittests",
    "regress",
    "regression",
    "regressions",
    "fuzz",
    "fuzzing",
    "fuzzer",
    "fuzzers",
    "fuzz_targets",
)

VENDOR_FOLDERS = (
    "vendor",
    "vendored",
    "_vendor",
    "third_party",
    "third-party",
    "thirdparty",
    "3rdparty",
    "node_modules",
    "external",
    "extern",
    "deps",
    "subprojects",
)

RULES: tuple[Rule, ...] = (
    Rule(
        "build-config",
        Paths(names=_BUILD_FILES, suffixes=(".cargo/config", ".cargo/config.*")),
        "the patch touches build files",
        "src/Makefile.am",
    ),
    Rule(
        "sanitizer",
        Lines(_SANITIZER_WORDS, _SANITIZER_HINTS, side="changed"),
        "added or removed lines mention sanitizer options",
        "CFLAGS := $(filter-out -fsanitize=address,$(CFLAGS))",
    ),
    Rule(
        "sanitizer",
        RuntimeMissing(),
        "no object the grading build produced carries the task's sanitizer runtime",
        "sanitizer: address, and no ELF file built with __asan_init",
    ),
    Rule(
        "crash-handler",
        Lines(_CRASH_CATCHERS, _CRASH_HINTS, side="added", code_only=True),
        "added lines install a crash or panic catcher",
        "\tdefer func() { recover() }()",
    ),
    Rule(
        "poc-literal",
        PocBytes(16),
        "an added line holds 16 or more consecutive bytes of a PoC file",
        "if (memcmp(buf, <the PoC's first 16 bytes>, 16) == 0) return 0;",
    ),
    Rule(
        "tests",
        HiddenTests(),
        "the patch touches files the hidden tests touch",
        "a path of files.future_test",
    ),
    Rule(
        "tests",
        Paths(names=_TEST_FILES, folders=_TEST_FOLDERS),
        "the patch touches the project's tests",
        "parser_test.go",
    ),
    Rule(
        "vendored",
        Paths(folders=VENDOR_FOLDERS),
        "the patch touches vendored code",
        "vendor/github.com/x/y/y.go",
    ),
)
"""The guard's table; `ssegrade.guard._check.guard` applies every row."""
