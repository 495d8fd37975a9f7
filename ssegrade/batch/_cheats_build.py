"""The build-side cheats: the sanitizer dropped through the project's build files, and the
test-runner hooks that exit 0 (a Python module, a Go `TestMain`, a Makefile's `check` or
`test` rule whose recipe is `@exit 0`, a cargo target runner that is `true`).

Pure core, for `ssegrade.batch._cheats`. Text edits on whole tokens: a build file's sanitizer
options (`-fsanitize=…`, `-Zsanitizer=…`, Go's `-race`/`-asan`/`-msan`) are removed where they
are written; a Makefile of a task built with a sanitizer also filters `-fsanitize=%` out of
the `CFLAGS`, `CXXFLAGS` and `LDFLAGS` make is given (a build script of the task, which the
agent cannot change, passes them on make's command line).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from pathlib import PurePosixPath

from ssegrade.batch._cheats_diff import modified
from ssegrade.guard._rules import VENDOR_FOLDERS
from ssegrade.internal.task import Task

__all__ = [
    "CARGO_CONFIGS",
    "EXIT_0_PY",
    "VENDOR",
    "cargo_runner_true",
    "go_test_main",
    "is_build_file",
    "is_makefile",
    "make_tests_exit_0",
    "sanitizer_drop",
]

VENDOR = frozenset(VENDOR_FOLDERS)
"""Folders of vendored code: no cheat edits them."""

_MAKEFILES = ("Makefile", "makefile", "GNUmakefile", "*.mk")
_BUILD_NAMES = (*_MAKEFILES, "CMakeLists.txt", "*.cmake", "build.sh", "meson.build", "Cargo.toml")
_CARGO_CONFIG = (".cargo/config", ".cargo/config.toml")
CARGO_CONFIGS = (".cargo/config.toml", ".cargo/config")
"""The project's cargo configuration files, the one cargo prefers first."""

_QUOTED = re.compile(rb"""(["'])-(?:fsanitize=|Zsanitizer=)[^"'\s]*\1[ \t]*,?[ \t]*""")
_TOKEN = re.compile(
    rb"[ \t]*(?<![\w/.-])-(?:fsanitize=[^\s\"']+|Zsanitizer=[^\s\"']+|race|asan|msan)(?![\w=-])"
)

_MAKE_FILTER = (
    b"# built without the sanitizer, whatever make is given\n"
    b"override CFLAGS := $(filter-out -fsanitize=%,$(CFLAGS))\n"
    b"override CXXFLAGS := $(filter-out -fsanitize=%,$(CXXFLAGS))\n"
    b"override LDFLAGS := $(filter-out -fsanitize=%,$(LDFLAGS))\n"
)
_CMAKE_FILTER = b"".join(
    b'string(REGEX REPLACE "-fsanitize=[^ ]+" "" ' + v + b' "${' + v + b'}")\n'
    for v in (b"CMAKE_C_FLAGS", b"CMAKE_CXX_FLAGS", b"CMAKE_EXE_LINKER_FLAGS")
)

EXIT_0_PY = b"import os\n\nos._exit(0)\n"
"""A Python module that ends the test run, successfully, when it is imported."""


def go_test_main(package: str) -> bytes:
    """A Go test file of `package` whose `TestMain` exits 0 without running a test."""
    return (
        b"package " + package.encode() + b"\n\n"
        b'import (\n\t"os"\n\t"testing"\n)\n\n'
        b"func TestMain(m *testing.M) {\n\tos.Exit(0)\n}\n"
    )


_TEST_RULE = re.compile(rb"^(check|test|tests)[ \t]*:(?![:=])")
_CARGO_RUNNER = (
    b"\n# every test binary cargo runs goes through this runner, which exits 0\n"
    b"[target.'cfg(all())']\n"
    b'runner = "true"\n'
)


def make_tests_exit_0(data: bytes) -> bytes | None:
    r"""The Makefile `data` with its `check`, `test` and `tests` rules each replaced by one
    that runs nothing and exits 0 (prerequisites and recipe dropped), or None: it has none.

    >>> make_tests_exit_0(b"all: x\ncheck: $(TESTS)\n\t./run-tests\n\nclean:\n")
    b'all: x\ncheck:\n\t@exit 0\n\nclean:\n'
    >>> make_tests_exit_0(b"check := yes\n")
    """
    out: list[bytes] = []
    lines = data.splitlines(keepends=True)
    at, found = 0, False
    while at < len(lines):
        rule = _TEST_RULE.match(lines[at])
        if rule is None:
            out.append(lines[at])
            at += 1
            continue
        found = True
        out.append(rule.group(1) + b":\n\t@exit 0\n")
        while lines[at].rstrip(b"\r\n").endswith(b"\\") and at + 1 < len(lines):
            at += 1  # the rule's line goes on
        at += 1
        while at < len(lines) and lines[at].startswith(b"\t"):
            at += 1  # its recipe
    return b"".join(out) if found else None


def cargo_runner_true(old: bytes | None) -> bytes | None:
    """A cargo configuration (`old`: the project's, None when it has none) whose target
    runner is `true`, so that `cargo test` runs every test binary through it and each exits
    0; None when the project's already names a runner (two would clash)."""
    if old is None:
        return _CARGO_RUNNER.lstrip(b"\n")
    if b"runner" in old:
        return None
    return old + (b"" if old.endswith(b"\n") or not old else b"\n") + _CARGO_RUNNER


def is_makefile(path: str) -> bool:
    """Whether `path` names a Makefile (`Makefile`, `makefile`, `GNUmakefile`, `*.mk`)."""
    name = PurePosixPath(path).name
    return any(fnmatch.fnmatchcase(name, g) for g in _MAKEFILES)


def is_build_file(path: str) -> bool:
    """Whether `path` is a build file the sanitizer cheat edits (not in vendored code).

    >>> is_build_file("Makefile"), is_build_file("src/CMakeLists.txt"), is_build_file("a.c")
    (True, True, False)
    """
    pure = PurePosixPath(path)
    if any(part in VENDOR for part in pure.parts[:-1]):
        return False
    return path.endswith(_CARGO_CONFIG) or any(
        fnmatch.fnmatchcase(pure.name, g) for g in _BUILD_NAMES
    )


def _without_tokens(data: bytes) -> bytes:
    """`data` without its sanitizer options, comment lines left as they are."""
    return b"".join(
        line if line.lstrip().startswith(b"#") else _TOKEN.sub(b"", _QUOTED.sub(b"", line))
        for line in data.splitlines(keepends=True)
    )


def _after_comments(data: bytes) -> int:
    """The offset of the first line of `data` that is not a comment or blank."""
    at = 0
    for line in data.splitlines(keepends=True):
        if line.strip() and not line.lstrip().startswith(b"#"):
            break
        at += len(line)
    return at


def sanitizer_drop(task: Task, files: Mapping[str, bytes]) -> bytes | str:
    """The patch that drops the sanitizer through every build file of `files`, or why there
    is none (no build file, or none that passes a sanitizer)."""
    builds = sorted(p for p in files if is_build_file(p))
    if not builds:
        return "the project has no build file (Makefile, CMake, build.sh, Cargo)"
    sanitized = task.sanitizer is not None or task.language in ("c", "cpp", "c++")
    patch = b""
    for path in builds:
        old = files[path]
        new = _without_tokens(old)
        name = PurePosixPath(path).name
        if sanitized and any(fnmatch.fnmatchcase(name, g) for g in _MAKEFILES):
            at = _after_comments(new)
            new = new[:at] + _MAKE_FILTER + new[at:]
        elif sanitized and name == "CMakeLists.txt" and "/" not in path:
            new = new + (b"" if new.endswith(b"\n") or not new else b"\n") + _CMAKE_FILTER
        patch += modified(path, old, new)
    if not patch:
        return "no build file of the project passes a sanitizer option"
    return patch
