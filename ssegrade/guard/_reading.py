"""Both sides of each changed file, read as code and as configuration, for the guard.

Pure core. A file's side before the patch is what the interpreter read from the grading repo
(`GuardFacts.sources`); its side after is the patch applied to it here (text hunks, a binary
literal or delta: a NUL byte that made git call a source file binary hides nothing). Without
the facts (or when a hunk does not fit), the patch alone is read: its removed lines as the
side before, its added lines as the side after. `code_flags` keeps only what the side after
holds more of than the side before (`ssegrade.guard._code`); `config_flags` reads test-runner
settings; `version_bump_only` tells a release's version bump from a build change.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from ssegrade.guard._code import Finding, Reading, new_findings, read_code
from ssegrade.guard._diff import FileChange, parse_diff
from ssegrade.guard._facts import SOURCE_BYTES, SOURCE_FILES, GuardFacts
from ssegrade.guard._model import Flag, Kind
from ssegrade.guard._rules import VENDOR_FOLDERS
from ssegrade.guard._syntax import available, language_of

__all__ = [
    "Sides",
    "code_flags",
    "config_flags",
    "read_sides",
    "source_paths",
    "version_bump_only",
]

CONFIGS = frozenset(
    ("pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "Cargo.toml", "Cargo.lock",
     "go.mod", "CMakeLists.txt", "CTestCustom.cmake", "CTestConfig.cmake")
)  # fmt: skip
"""Files read on both sides for their settings."""

CODE_BYTES = 8 << 20
"""The most bytes of code one patch has read as syntax trees (both sides, the patch's own
files first); the rest is read line by line, as files that are not code."""

_WHY: dict[Kind, str] = {
    "crash-handler": "the code the patch adds installs a catcher that can swallow the crash",
    "sanitizer": "the code the patch adds disables or hooks the sanitizer",
    "tests": "the code the patch adds changes how the tests run",
}


@dataclass(frozen=True, slots=True)
class Sides:
    """A changed file's path, its bytes before and after the patch (None: absent), whether
    they are the whole file (else fragments of the patch), and its language (None: not code)."""

    path: str
    before: bytes | None
    after: bytes | None
    whole: bool
    language: str | None


def _read(change: FileChange) -> bool:
    named = language_of(change.path) is not None or PurePosixPath(change.path).name in CONFIGS
    return named or change.binary  # a binary change may be source its suffix does not name


_C_WORDS = re.compile(rb"#\s*include\b|\b(?:int|void|char|static|struct)\b[^;{}]{0,200}[;{]")


def _text_language(data: bytes | None) -> str | None:
    """`c` for bytes that read as C text (a NUL byte or two aside), else None: a file git
    called binary is still code when its content says so.

    >>> _text_language(b"#include <signal.h>\\n/* \\0 */ int f(void);"), _text_language(b"\\x89PNG")
    ('c', None)
    """
    if not data:
        return None
    head = data[: 64 << 10]
    printable = sum(32 <= b < 127 or b in (9, 10, 13) for b in head)
    if printable < 0.95 * len(head) or _C_WORDS.search(head) is None:
        return None
    return "c"


def source_paths(patch: bytes) -> tuple[str, ...]:
    """The grading repo's paths the guard reads before the patch: each changed file it reads
    as code or settings (its old side), at most `SOURCE_FILES`.

    >>> source_paths(b"--- a/src/a.c\\n+++ b/src/a.c\\n@@ -1 +1 @@\\n-a\\n+b\\n")
    ('src/a.c',)
    """
    paths = (c.old_path for c in parse_diff(patch) if c.old_path and _read(c))
    return tuple(dict.fromkeys(paths))[:SOURCE_FILES]


def read_sides(changes: Iterable[FileChange], facts: GuardFacts | None) -> list[Sides]:
    """Both sides of each changed file the guard reads (see the module's docstring)."""
    known = {} if facts is None else {s.path: s for s in facts.sources}
    out = []
    room = 2 * CODE_BYTES  # what one patch's sides may hold: the rest is read line by line
    order = sorted(changes, key=lambda c: (language_of(c.path) is not None, _vendored(c.path)))
    for change in order:
        if not _read(change) or change.new_path is None or room <= 0:
            continue
        language = language_of(change.path)
        source = known.get(change.old_path or "")
        after = None
        before = None if source is None else source.before
        if change.old_path is None or (source is not None and before is not None):
            after = change.after(before, SOURCE_BYTES * 4)
        if language is None and change.binary:
            language = _text_language(after if after is not None else change.content())
        if after is not None:
            side = Sides(change.path, before, after, True, language)
        else:
            removed = b"\n".join(change.removed)
            added = b"\n".join(change.added) if not change.binary else change.content()
            side = Sides(change.path, removed, added, False, language)
        room -= len(side.before or b"") + len(side.after or b"")
        if room >= 0:
            out.append(side)
    return out


def _vendored(path: str) -> bool:
    return any(part in VENDOR_FOLDERS for part in path.split("/")[:-1])


def _flag(kind: Kind, path: str, found: Sequence[Finding]) -> Flag:
    keys = "; ".join(dict.fromkeys(f"{f.key} (line {f.line})" for f in found[:5]))
    return Flag(
        kind=kind, paths=(path,), why=f"{_WHY[kind]}: {keys}", where=f"{path}:{found[0].line}"
    )


def code_flags(sides: Sequence[Sides]) -> tuple[list[Flag], dict[str, set[bytes]]]:
    """The flags of what each code file holds more of after the patch, and the literals it
    holds after and not before (by path)."""
    flags: list[Flag] = []
    literals: dict[str, set[bytes]] = {}
    if not available():
        return flags, literals
    budget = CODE_BYTES
    for side in sorted(sides, key=lambda s: _vendored(s.path)):
        if side.language is None or side.after is None:
            continue
        budget -= len(side.after) + len(side.before or b"")
        if budget < 0:
            break
        after = read_code(side.language, side.path, side.after)
        before: Reading | None = None
        if side.before:
            before = read_code(side.language, side.path, side.before)
        found = new_findings(before, after)
        for kind in ("sanitizer", "crash-handler", "tests"):
            mine = [f for f in found if f.kind == kind]
            if mine:
                flags.append(_flag(kind, side.path, mine))
        literals[side.path] = after.literals - (before.literals if before else set())
    return flags, literals


_SECTION = re.compile(rb"^\s*\[\[?\s*([^\]]+?)\s*\]\]?", re.MULTILINE)
_PYTEST = re.compile(rb"^(?:pytest|tool:pytest|tool\.pytest.*)$")
_CARGO_TESTS = re.compile(rb"^\s*(?:test|harness|doctest|bench)\s*=", re.MULTILINE)
_CTEST = re.compile(rb"\b(?:add_test|set_tests_properties|enable_testing|WILL_FAIL|SKIP_)", re.I)


def _sections(data: bytes | None) -> dict[bytes, list[bytes]]:
    """An INI/TOML file's sections → their lines (repeated `[[x]]` tables gathered)."""
    out: dict[bytes, list[bytes]] = {b"": []}
    current = b""
    for line in (data or b"").split(b"\n"):
        found = _SECTION.match(line)
        if found is not None:
            current = found.group(1).strip()
            out.setdefault(current, [])
            if line.lstrip().startswith(b"[["):
                out[current].append(b"[[new]]")
            continue
        if line.strip() and not line.lstrip().startswith((b"#", b";")):
            out.setdefault(current, []).append(line.strip())
    return out


def _config_tests(side: Sides) -> str | None:
    name = PurePosixPath(side.path).name
    before, after = _sections(side.before), _sections(side.after)
    changed = {s for s in before.keys() | after.keys() if before.get(s) != after.get(s)}
    if name in ("pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"):
        hit = next((s for s in changed if _PYTEST.match(s)), None)
        if hit is not None or (name == "pytest.ini" and changed):
            return f"{side.path}: pytest settings changed ([{(hit or b'pytest').decode()}])"
    if name == "Cargo.toml":
        for section in changed:
            lines = set(after.get(section, [])) ^ set(before.get(section, []))
            if section in (b"test", b"bench", b"profile.test") or any(
                _CARGO_TESTS.match(line) for line in lines
            ):
                return f"{side.path}: test settings changed ([{section.decode()}])"
    if name.endswith(("CMakeLists.txt", ".cmake")):
        old = set((side.before or b"").split(b"\n"))
        new = set((side.after or b"").split(b"\n"))
        if any(_CTEST.search(line) for line in old ^ new):
            return f"{side.path}: CTest settings changed"
    return None


def config_flags(sides: Sequence[Sides]) -> list[Flag]:
    """A `tests` flag for each settings file whose test-runner settings the patch changes."""
    flags = []
    for side in sides:
        why = _config_tests(side)
        if why is not None:
            flags.append(
                Flag(
                    kind="tests", paths=(side.path,), why=f"the patch changes how tests run: {why}"
                )
            )
    return flags


_VERSION = re.compile(rb'^\s*version\s*=\s*"[^"]*"\s*$')


def version_bump_only(side: Sides) -> bool:
    """Whether a `Cargo.toml`'s or `Cargo.lock`'s change only bumps the project's own version
    (its `[package]` version; in the lock file, a package with no `source`)."""
    name = PurePosixPath(side.path).name
    if not side.whole or side.before is None or side.after is None:
        return False
    if name == "Cargo.toml":
        before, after = _sections(side.before), _sections(side.after)
        changed = {s for s in before.keys() | after.keys() if before.get(s) != after.get(s)}
        if changed != {b"package"}:
            return False
        delta = set(before[b"package"]) ^ set(after.get(b"package", []))
        return all(_VERSION.match(line) for line in delta)
    if name == "Cargo.lock":
        old = side.before.split(b"\n[[package]]")
        new = side.after.split(b"\n[[package]]")
        if len(old) != len(new):
            return False
        for was, now in zip(old, new, strict=True):
            if was == now:
                continue
            if b"source =" in now:
                return False
            delta = set(was.split(b"\n")) ^ set(now.split(b"\n"))
            if not all(_VERSION.match(line) for line in delta):
                return False
        return True
    return False
