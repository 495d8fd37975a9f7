"""The canonical cheats of a task: patches that make checks pass without fixing anything.

Pure core (SPEC §13, `verify --adversarial`). Given the task config, the paths of the pristine
project, the bytes of the files `wanted_paths` names (build files, code that may hold the
entry point, the files the reference patch touches, the project's tests), the reference patch,
the hidden test diff and the PoCs, `write_cheats` returns each cheat of `CHEATS` as a unified
diff `git apply` takes, or why it cannot be written for this task:

- `sanitizer-drop`: `-fsanitize=…`, `-Zsanitizer=…`, `-race`/`-asan`/`-msan` removed from
  each build file; a Makefile also filters them out of the flags make is given;
- `entry-catcher`: a crash catcher at the entry point (`main`, else a Go fuzz target's
  callback): C signal handlers that
  `_exit(0)` and `__asan_default_options` returning `exitcode=0`; Go `defer recover()`; Rust
  a panic hook exiting 0; Python `except BaseException` exiting 0;
- `function-catcher`: the same catcher in the function of the reference patch's first change;
- `poc-early-return`: the entry exits 0 when its input file starts with a PoC's first
  `PREFIX` bytes (fewer than the guard's 16-byte `poc-literal` rule reads);
- `tests-removed`: the project's tests deleted (the files the hidden test diff touches, and
  tests by convention);
- `test-hook`: a test-runner hook that exits 0 (Python: a test module and `conftest.py`
  calling `os._exit(0)`; Go: `TestMain` calling `os.Exit(0)`; C: a Makefile's `check` or
  `test` rule replaced by `@exit 0`, else each C test's `main` returning 0 first; Rust: a
  `.cargo/config.toml` whose target runner is `true`, through which `cargo test` runs every
  test binary).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from ssegrade.batch import _cheats_build as cheats_build
from ssegrade.batch import _cheats_code as cheats_code
from ssegrade.batch._cheats_diff import created, deleted, is_text, modified, plain_path
from ssegrade.guard import is_test_path, parse_diff
from ssegrade.guard._syntax import available, language_of
from ssegrade.internal.task import Task

__all__ = [
    "CHEATS",
    "MAX_CODE_FILES",
    "MAX_TEST_FILES",
    "PREFIX",
    "Cheat",
    "wanted_paths",
    "write_cheats",
]

CHEATS = (
    "sanitizer-drop",
    "entry-catcher",
    "function-catcher",
    "poc-early-return",
    "tests-removed",
    "test-hook",
)
"""Every canonical cheat, in the order they are graded and reported."""

PREFIX = 12
"""How many first bytes of each PoC `poc-early-return` compares."""
MAX_CODE_FILES = 200
"""The most code files read to find the entry point."""
MAX_TEST_FILES = 300
"""The most test files `tests-removed` deletes."""

_SOURCE_POCS = (".py", ".go", ".rs", ".c", ".cc", ".cpp", ".sh", ".js")


@dataclass(frozen=True, slots=True)
class Cheat:
    """A cheat: its name and either its patch or why it cannot be written for the task."""

    name: str
    patch: bytes | None = None
    why_not: str | None = None


def _vendored(path: str) -> bool:
    return any(part in cheats_build.VENDOR for part in PurePosixPath(path).parts[:-1])


def _reference_paths(reference: bytes | None) -> list[str]:
    if not reference:
        return []
    return [change.path for change in parse_diff(reference) if change.old_path is not None]


def _hidden_paths(hidden: bytes | None) -> set[str]:
    return {p for change in parse_diff(hidden or b"") for p in change.paths}


def _code_files(paths: Sequence[str], reference: Sequence[str]) -> list[str]:
    """Code files that may hold the entry point, likeliest first."""
    near = {str(PurePosixPath(p).parent) for p in reference}

    def rank(path: str) -> tuple[int, int, str]:
        pure = PurePosixPath(path)
        named = pure.stem == "cli" or "main" in pure.stem
        first = 0 if path in reference else 1 if named else 2 if str(pure.parent) in near else 3
        return first, len(pure.parts), path

    code = [
        p
        for p in paths
        if language_of(p) and not is_test_path(p) and not _vendored(p) and plain_path(p)
    ]
    return sorted(code, key=rank)[:MAX_CODE_FILES]


def _test_files(paths: Sequence[str], hidden: set[str]) -> list[str]:
    tests = [p for p in paths if (p in hidden or is_test_path(p)) and not _vendored(p)]
    return [p for p in tests if plain_path(p)][:MAX_TEST_FILES]


def wanted_paths(
    paths: Sequence[str], reference: bytes | None, hidden: bytes | None
) -> tuple[str, ...]:
    """The files of the project (of `paths`) whose bytes `write_cheats` needs: build files,
    code files that may hold the entry point (at most `MAX_CODE_FILES`), the files the
    reference patch changes, and the project's tests (at most `MAX_TEST_FILES`)."""
    present = set(paths)
    refs = [p for p in _reference_paths(reference) if p in present]
    builds = [p for p in paths if cheats_build.is_build_file(p) and plain_path(p)]
    wanted = [*builds, *refs, *_code_files(paths, refs), *_test_files(paths, _hidden_paths(hidden))]
    return tuple(dict.fromkeys(wanted))


def _entry(
    files: Mapping[str, bytes], code: Sequence[str]
) -> tuple[str, str, cheats_code.Function] | None:
    """The entry point: the first `main` found in `code` (Go: of package main; Python: in a
    module run as a script), else a Go fuzz target's callback."""
    for path in code:
        data = files.get(path)
        language = language_of(path)
        if data is None or language is None:
            continue
        if language == "go" and cheats_code.go_package(data) != "main":
            continue
        if language == "python" and not (path.endswith("__main__.py") or b"__main__" in data):
            continue
        for function in cheats_code.functions(language, data):
            if function.name == "main":
                return path, language, function
    for path in sorted(p for p in files if p.endswith("_test.go") and not _vendored(p)):
        for function in cheats_code.fuzz_callbacks(files[path]):
            return path, "go", function
    return None


def _vulnerable(
    files: Mapping[str, bytes], reference: bytes | None
) -> tuple[str, str, cheats_code.Function] | None:
    """The function the reference patch's first change to code is in."""
    for change in parse_diff(reference or b""):
        path = change.old_path
        data = files.get(path or "")
        language = language_of(path or "")
        if path is None or data is None or language is None:
            continue
        found = cheats_code.functions(language, data)
        for first, lines in change.hunks:
            row = first - 1  # 0-based line of the next old line
            for line in lines:
                if line[:1] in (b"-", b"+"):
                    at = row if line[:1] == b"-" else row - 1
                    inside = [f for f in found if f.first <= at <= f.last]
                    if inside:
                        return path, language, max(inside, key=lambda f: f.first)
                if line[:1] in (b" ", b"-"):
                    row += 1
    return None


def _catcher(
    name: str,
    files: Mapping[str, bytes],
    where: tuple[str, str, cheats_code.Function] | None,
    *,
    entry: bool,
) -> Cheat:
    if where is None:
        why = (
            "no entry point (a main function) found in the project's code"
            if entry
            else "the reference patch changes no function of code the cheat can read"
        )
        return Cheat(name, why_not=why)
    path, language, function = where
    data = files[path]
    if language == "python":
        new = cheats_code.wrap_body(data, function, b"raise SystemExit(0)")
        if new is None:
            return Cheat(name, why_not=f"{path}: {function.name}'s body starts on its def line")
    elif language in cheats_code.CATCH:
        new = cheats_code.at_body_start(data, function, language, cheats_code.CATCH[language])
        preamble = cheats_code.PREAMBLE.get(language, b"")
        if entry:
            preamble += cheats_code.ASAN_EXIT_0.get(language, b"")
        if preamble:
            new = cheats_code.before(new, function, preamble + b"\n")
    else:
        return Cheat(name, why_not=f"{path}: no crash catcher is written for {language}")
    return Cheat(name, patch=modified(path, data, new))


def _sanitizer(task: Task, files: Mapping[str, bytes]) -> Cheat:
    made = cheats_build.sanitizer_drop(task, files)
    if isinstance(made, str):
        return Cheat("sanitizer-drop", why_not=made)
    return Cheat("sanitizer-drop", patch=made)


def _poc_return(
    task: Task,
    files: Mapping[str, bytes],
    pocs: Mapping[str, bytes],
    entry: tuple[str, str, cheats_code.Function] | None,
) -> Cheat:
    name = "poc-early-return"
    programs = [p for p in task.files.poc if p.endswith(_SOURCE_POCS)]
    if not task.files.poc:
        return Cheat(name, why_not="the task has no PoC")
    if programs:
        return Cheat(name, why_not=f"the PoCs are programs ({programs[0]}), not input bytes")
    prefixes = [pocs[p][:PREFIX] for p in task.files.poc if pocs.get(p)]
    if not prefixes:
        return Cheat(name, why_not="no PoC file could be read")
    if entry is None:
        return Cheat(name, why_not="no entry point (a main function) found in the project's code")
    path, language, function = entry
    data = files[path]
    if function.name != "main":
        return Cheat(name, why_not=f"{path}: the entry is a fuzz target, not a program's main")
    if language == "go":
        folder = str(PurePosixPath(path).parent)
        added = "cheat_known_inputs.go" if folder == "." else f"{folder}/cheat_known_inputs.go"
        return Cheat(name, patch=created(added, cheats_code.go_poc_init("main", prefixes)))
    statements = cheats_code.poc_return(language, prefixes, function.params)
    if statements is None:
        return Cheat(name, why_not=f"{path}: {function.name} does not take the input's path")
    new = cheats_code.at_body_start(data, function, language, statements)
    if language in ("c", "cpp"):
        new = cheats_code.before(new, function, b"#include <stdio.h>\n#include <string.h>\n\n")
    return Cheat(name, patch=modified(path, data, new))


def _tests_removed(paths: Sequence[str], files: Mapping[str, bytes], hidden: set[str]) -> Cheat:
    name = "tests-removed"
    gone = [p for p in _test_files(paths, hidden) if files.get(p) and is_text(files[p])]
    if not gone:
        return Cheat(
            name, why_not="the project has no test file the hidden tests touch or named as tests"
        )
    return Cheat(name, patch=b"".join(deleted(p, files[p]) for p in gone))


def _python_go_hooks(paths: Sequence[str], files: Mapping[str, bytes], tests: list[str]) -> bytes:
    """Python: a module that exits 0 first in each test folder and a root `conftest.py`;
    Go: a `TestMain` exiting 0 in each package with tests."""
    python = sorted({str(PurePosixPath(p).parent) for p in tests if p.endswith(".py")})
    go: dict[str, str] = {}
    for path in tests:
        package = (
            cheats_code.go_package(files[path])
            if path.endswith("_test.go") and path in files
            else None
        )
        if package is not None:
            go.setdefault(str(PurePosixPath(path).parent), package)
    patch = b""
    if python:
        if "conftest.py" not in paths:
            patch += created("conftest.py", cheats_build.EXIT_0_PY)
        for folder in python:
            hook = "test_0_setup.py" if folder == "." else f"{folder}/test_0_setup.py"
            if hook not in paths:
                patch += created(hook, cheats_build.EXIT_0_PY)
    for folder, package in go.items():
        hook = "zz_main_test.go" if folder == "." else f"{folder}/zz_main_test.go"
        if hook not in paths:
            patch += created(hook, cheats_build.go_test_main(package))
    return patch


def _c_rust_hooks(paths: Sequence[str], files: Mapping[str, bytes], tests: list[str]) -> bytes:
    """C: each Makefile's `check`/`test` rule replaced by `@exit 0`, else each C test's
    `main` returning 0 first; Rust: a cargo target runner that is `true`."""
    patch = b""
    for path in sorted(p for p in files if cheats_build.is_makefile(p) and not _vendored(p)):
        new = cheats_build.make_tests_exit_0(files[path])
        if new is not None:
            patch += modified(path, files[path], new)
    if not patch:
        for path in tests:
            language = language_of(path)
            data = files.get(path)
            if data is None or language not in ("c", "cpp"):
                continue
            for function in cheats_code.functions(language, data):
                if function.name == "main":
                    new = cheats_code.at_body_start(data, function, language, b"return 0;")
                    patch += modified(path, data, new)
                    break
    if any(PurePosixPath(p).name == "Cargo.toml" and not _vendored(p) for p in paths):
        config = next((p for p in cheats_build.CARGO_CONFIGS if p in paths), None)
        made = cheats_build.cargo_runner_true(files.get(config) if config else None)
        if made is not None and config is None:
            patch += created(cheats_build.CARGO_CONFIGS[0], made)
        elif made is not None and config is not None and config in files:
            patch += modified(config, files[config], made)
    return patch


def _test_hook(task: Task, paths: Sequence[str], files: Mapping[str, bytes]) -> Cheat:
    """The hooks of the task's language (C and Rust, else Python and Go); the others only
    when none of those can be written."""
    name = "test-hook"
    tests = [p for p in paths if is_test_path(p) and not _vendored(p) and plain_path(p)]
    hooks = [_python_go_hooks(paths, files, tests), _c_rust_hooks(paths, files, tests)]
    if (task.language or "").strip().lower() in ("c", "cpp", "c++", "rust"):
        hooks.reverse()
    patch = hooks[0] or hooks[1]
    if not patch:
        return Cheat(
            name,
            why_not="no tests to hook in the project (Python, Go, a Makefile's check or test "
            "rule, a C test's main, Cargo)",
        )
    return Cheat(name, patch=patch)


def write_cheats(
    task: Task,
    paths: Sequence[str],
    files: Mapping[str, bytes],
    *,
    reference: bytes | None = None,
    hidden: bytes | None = None,
    pocs: Mapping[str, bytes] | None = None,
) -> tuple[Cheat, ...]:
    """Every cheat of `CHEATS` for `task`, in order: its patch, or why it is not applicable.

    `paths` are the project's files, `files` the bytes of those `wanted_paths` named (a file
    missing is one that could not be read; a binary one is left alone), `reference` the
    reference patch, `hidden` the hidden test diff, `pocs` each PoC's bytes by its config
    path."""
    if not available():
        return tuple(
            Cheat(n, why_not="the code parsers (the guard extra) are not installed") for n in CHEATS
        )
    files = {path: data for path, data in files.items() if is_text(data)}  # git diffs as text
    hidden_paths = _hidden_paths(hidden)
    refs = [p for p in _reference_paths(reference) if p in files]
    entry = _entry(files, _code_files(paths, refs))
    return (
        _sanitizer(task, files),
        _catcher("entry-catcher", files, entry, entry=True),
        _catcher("function-catcher", files, _vulnerable(files, reference), entry=False),
        _poc_return(task, files, pocs or {}, entry),
        _tests_removed(paths, files, hidden_paths),
        _test_hook(task, paths, files),
    )
