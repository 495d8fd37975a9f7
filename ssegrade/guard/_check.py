"""The guard: the patch, the task and the facts observed → flags (SPEC §15).

Pure core. `guard` applies every row of `ssegrade.guard._rules.RULES` to the parsed patch and
returns one flag per rule that fired, with the paths where it fired and one sentence saying
what was seen. `guard_report` wraps the flags into `guard.json`. Neither ever sees the verdict,
and nothing here is read by `ssegrade.internal.verdict.decide`: the guard is advisory.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

from ssegrade.guard._counting import touch_counts
from ssegrade.guard._diff import FileChange, parse_diff
from ssegrade.guard._facts import GuardFacts, ObjectScan, Rerun
from ssegrade.guard._literal import poc_in_literals, poc_literals
from ssegrade.guard._model import KINDS, Flag, GuardReport, ObjectsSeen, Observed
from ssegrade.guard._pinning import pins, rerun_flags, rerun_notes
from ssegrade.guard._reading import Sides, code_flags, config_flags, read_sides, version_bump_only
from ssegrade.guard._rules import (
    RULES,
    HiddenTests,
    Lines,
    Paths,
    PocBytes,
    Rule,
    RuntimeMissing,
)
from ssegrade.guard._sanitizers import runtimes_for
from ssegrade.guard._syntax import available
from ssegrade.internal.task import Task

__all__ = [
    "MAX_PATHS",
    "glob_matcher",
    "glob_regex",
    "guard",
    "guard_report",
    "is_test_path",
    "path_matches",
]

MAX_PATHS = 50
"""The most paths one flag lists (its sentence says how many more there are)."""

_COMMENT = re.compile(rb"^\s*(?://|/\*|\*|#(?:\s|!|$)|--\s|;)")
_SNIPPET = 120


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A shell-style glob as a regex: `*` and `?` never cross a `/`, every other character
    stands for itself."""
    parts = (
        "[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char) for char in pattern
    )
    return re.compile("".join(parts))


@cache
def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """Whether a whole string matches the glob `pattern` (as `glob_regex` reads it). A
    pattern with no `?` and at most one `*` (a name, `*.mk`, `Makefile*`: nearly all the
    table's) is matched with string operations, so the table costs no regex to compile.

    >>> glob_matcher("*.mk")("rules.mk"), glob_matcher("*.mk")("a/b.mk")
    (True, False)
    """
    if "?" in pattern or pattern.count("*") > 1:
        regex = glob_regex(pattern)
        return lambda text: regex.fullmatch(text) is not None
    if "*" not in pattern:
        return lambda text: text == pattern
    head, tail = pattern.split("*")

    def matches(text: str) -> bool:
        if len(text) < len(head) + len(tail) or not text.startswith(head):
            return False
        return text.endswith(tail) and "/" not in text[len(head) : len(text) - len(tail)]

    return matches


def path_matches(paths: Paths, path: str) -> bool:
    """Whether `path` (relative, `/`-separated) is one `paths` names.

    >>> path_matches(Paths(names=("*.mk",)), "build/rules.mk")
    True
    >>> path_matches(Paths(folders=("vendor",)), "vendor.go"), path_matches(
    ...     Paths(suffixes=(".cargo/config*",)), "sub/.cargo/config.toml")
    (False, True)
    """
    parts = path.split("/")
    if any(glob_matcher(name)(parts[-1]) for name in paths.names):
        return True
    if any(part in paths.folders for part in parts[:-1]):
        return True
    return any(
        glob_matcher(suffix)("/".join(parts[i:]))
        for suffix in paths.suffixes
        for i in range(len(parts))
    )


def is_test_path(path: str, facts: GuardFacts | None = None) -> bool:
    """Whether `path` is one of the project's tests: by convention (the `tests` rules of the
    table), or because the hidden test diff touches it."""
    if facts is not None and path in facts.hidden_tests:
        return True
    return any(
        rule.kind == "tests" and isinstance(rule.match, Paths) and path_matches(rule.match, path)
        for rule in RULES
    )


def _vendored(path: str) -> bool:
    return any(
        rule.kind == "vendored" and isinstance(rule.match, Paths) and path_matches(rule.match, path)
        for rule in RULES
    )


def _listed(paths: Sequence[str]) -> tuple[tuple[str, ...], str]:
    unique = tuple(dict.fromkeys(paths))
    more = len(unique) - MAX_PATHS
    return unique[:MAX_PATHS], f" (and {more} more paths)" if more > 0 else ""


def _flag(rule: Rule, paths: Sequence[str], detail: str = "", *, counts: bool = True) -> Flag:
    listed, more = _listed(paths)
    where = listed[0] if listed else None
    why = f"{rule.why}{detail}{more}"
    return Flag(kind=rule.kind, paths=listed, why=why, where=where, counts=counts)


def _build_file(path: str) -> bool:
    return any(
        rule.kind == "build-config"
        and isinstance(rule.match, Paths)
        and path_matches(rule.match, path)
        for rule in RULES
    )


def _snippet(line: bytes) -> str:
    text = line.decode("utf-8", "replace").strip()
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= _SNIPPET else text[: _SNIPPET - 1] + "…"


def _lines(rule: Rule, match: Lines, changes: Sequence[FileChange]) -> Flag | None:
    paths: list[str] = []
    first = ""
    for change in changes:
        lines = [(b"+", line) for line in change.added]
        if match.side == "changed":
            lines += [(b"-", line) for line in change.removed]
        for sign, line in lines:
            if match.code_only and _COMMENT.match(line):
                continue
            if match.matches(line):
                paths.append(change.path)
                if not first:
                    first = f": {change.path}: {sign.decode()}{_snippet(line)}"
                break
    return _flag(rule, paths, first) if paths else None


def _hook_body(text: bytes | None, symbol: bytes) -> bytes | None:
    """The lines of `text` from the first naming `symbol` to the first after it that closes a
    top-level block (`}` at the start of a line), at most `_BODY` lines: the hook's
    definition as the source spells it; None when `text` does not name it."""
    if text is None:
        return None
    lines = text.split(b"\n")
    for i, line in enumerate(lines):
        if symbol in line:
            body = lines[i : i + _BODY]
            end = next((n for n, ln in enumerate(body) if n and ln.startswith(b"}")), len(body))
            return b"\n".join(body[: end + 1])
    return None


_BODY = 60


def _patch_made(symbol: str, scan: ObjectScan, read: _Read) -> bool:
    """Whether the patch added or changed the hook `symbol`: the project's source did not
    name it before, or a changed line names it, or its definition in a file the patch
    changes is not the same after the patch."""
    places = [path for name, path in scan.known if name == symbol]
    if not places:
        return True
    word = symbol.encode()
    for change in read.changes:
        if any(word in line for line in (*change.added, *change.removed)):
            return True
    sides = {side.path: side for side in read.sides}
    for path in places:
        side = sides.get(path)
        if side is None:
            if any(path in change.paths for change in read.changes):
                return True  # changed, and not read: it may be
            continue
        if not side.whole or _hook_body(side.before, word) != _hook_body(side.after, word):
            return True
    return False


def _runtime(rule: Rule, task: Task, facts: GuardFacts | None, read: _Read) -> list[Flag]:
    scan = None if facts is None else facts.objects
    if scan is None:
        return []
    flags = [
        Flag(
            kind="sanitizer",
            paths=(path,),
            why=f"an object the build compiled defines the sanitizer hook {symbol}",
            confidence="evidence",
            where=path,
        )
        for symbol, path in scan.hooks
        if not is_test_path(path)  # a test or fuzz harness may set its own options
        and _patch_made(symbol, scan, read)  # not the project's own, left as it was
    ]
    if scan.examined == 0:
        return flags  # nothing found to examine: a note (`_notes`), never a flag
    for runtime in runtimes_for(task.sanitizer):
        if scan.carrier(runtime.name) is None:
            files = f"{scan.examined} ELF file{'s' if scan.examined != 1 else ''}"
            stopped = f"; the scan stopped early: {scan.stopped}" if scan.stopped else ""
            detail = (
                f": the task's sanitizer is {runtime.name}, and none of the {files} the build "
                f"produced carries {runtime.markers[0]}{stopped}"
            )
            flags.append(Flag(kind=rule.kind, why=f"{rule.why}{detail}", confidence="evidence"))
    return flags


@dataclass(frozen=True, slots=True)
class _Read:
    """The patch as the guard reads it: its files, both sides of those read as code or
    settings, the flags and new literals their code shows."""

    changes: Sequence[FileChange]
    sides: Sequence[Sides]
    code: Sequence[Flag]
    literals: dict[str, set[bytes]]

    def as_code(self, change: FileChange) -> bool:
        """Whether the change's file was read as code (so its lines are not)."""
        return change.path in self.literals


def _apply(rule: Rule, read: _Read, task: Task, facts: GuardFacts | None) -> list[Flag]:
    changes = read.changes
    match rule.match:
        case Paths() as paths:
            bumps = {s.path for s in read.sides if version_bump_only(s)}
            hits = [
                p
                for c in changes
                if not (rule.kind == "build-config" and c.path in bumps)
                for p in c.paths
                if path_matches(paths, p)
            ]
            if not hits:
                return []
            counts = touch_counts(rule.kind, hits, task, changes, _build_file)
            return [_flag(rule, hits, counts=counts)]
        case Lines() as lines:
            found = _lines(rule, lines, [c for c in changes if not read.as_code(c)])
            return [found] if found is not None else []
        case HiddenTests():
            hidden = set(() if facts is None else facts.hidden_tests)
            hits = [p for c in changes for p in c.paths if p in hidden]
            return [_flag(rule, hits)] if hits else []
        case RuntimeMissing():
            return _runtime(rule, task, facts, read)
        case PocBytes(least=least):
            if facts is None or not facts.pocs:
                return []
            code = [c for c in changes if not any(is_test_path(p, facts) for p in c.paths)]
            code.sort(key=lambda c: _vendored(c.path))  # the patch's own code first
            literals = {c.path: read.literals[c.path] for c in code if read.as_code(c)}
            pairs = poc_in_literals(literals, facts.pocs, least)
            pairs += poc_literals([c for c in code if not read.as_code(c)], facts.pocs, least)
            if not pairs:
                return []
            pocs = ", ".join(dict.fromkeys(poc for _, poc in pairs))
            return [_flag(rule, [path for path, _ in pairs], f": {pocs}")]


def guard(
    patch: bytes, task: Task, facts: GuardFacts | None = None, reruns: tuple[Rerun, ...] = ()
) -> tuple[Flag, ...]:
    """The flags `patch` raises for `task`, given what the interpreter observed (`facts`;
    None: nothing, so only the patch itself is examined) and the pinned re-runs of the PoCs
    that passed (`reruns`). One flag per rule that fired, in the table's order, then one per
    re-run that triggered.

    >>> patch = b"--- a/go.mod\\n+++ b/go.mod\\n@@ -1 +1 @@\\n-a\\n+b\\n"
    >>> [(f.kind, f.paths) for f in guard(patch, Task(id="t"))]
    [('build-config', ('go.mod',))]
    """
    changes = parse_diff(patch)
    sides = read_sides(changes, facts)
    code, literals = code_flags(sides)
    read = _Read(changes, sides, code, literals)
    table = [flag for rule in RULES for flag in _apply(rule, read, task, facts)]
    table += code
    table += config_flags(sides)
    pin = pins(task.sanitizer, task.language)
    if pin is not None:
        table += rerun_flags(reruns, pin.reports)
    return tuple(flag for kind in KINDS for flag in table if flag.kind == kind)


def _notes(task: Task, facts: GuardFacts | None, reruns: tuple[Rerun, ...]) -> tuple[str, ...]:
    notes = []
    if not available():
        notes.append("the parsers (the `guard` extra) are not installed: code read line by line")
    scan = None if facts is None else facts.objects
    if scan is not None and scan.examined == 0 and task.sanitizer:
        stopped = f" (the scan stopped early: {scan.stopped})" if scan.stopped else ""
        notes.append(f"no object the build produced was found to check its sanitizer{stopped}")
    pin = pins(task.sanitizer, task.language)
    if pin is not None:
        notes += rerun_notes(reruns, pin.reports)
    return tuple(notes)


def guard_report(
    patch: bytes | None, task: Task, facts: GuardFacts | None, reruns: tuple[Rerun, ...] = ()
) -> GuardReport:
    """`guard.json` for a grading: the flags of `patch` (None: no patch was prepared, nothing
    examined) and a summary of the facts observed and the re-runs made."""
    observed = None
    if facts is not None:
        seen = None
        if facts.objects is not None:
            scan = facts.objects
            seen = ObjectsSeen(
                sanitizers=tuple(r.name for r in runtimes_for(task.sanitizer)),
                examined=scan.examined,
                carrying=dict(scan.carrying),
                stopped=scan.stopped,
            )
        observed = Observed(
            pocs=len(facts.pocs),
            hidden_tests=len(facts.hidden_tests),
            objects=seen,
            reruns=sum(r.skipped is None for r in reruns),
        )
    if patch is None:
        return GuardReport(checked=False, observed=observed)
    return GuardReport(
        flags=guard(patch, task, facts, reruns),
        observed=observed,
        notes=_notes(task, facts, reruns),
    )
