"""The patch guard (SPEC §15): flags patterns that can make checks pass without a fix.

Pure core, advisory: nothing here is read by the verdict. One concept per module:

- `ssegrade.guard._diff`: a patch's bytes → the files it touches and how (`parse_diff`);
- `ssegrade.guard._patching`: a file's patch applied to its bytes (text hunks, binary deltas);
- `ssegrade.guard._rules`: the one table of rules (`RULES`), data only;
- `ssegrade.guard._sanitizers`: sanitizer names and the runtime marks objects carry;
- `ssegrade.guard._literal`: whether added lines or literals spell out a PoC's bytes;
- `ssegrade.guard._syntax`: parsing code (tree-sitter, imported lazily), C's own macros;
- `ssegrade.guard._code`: what a file's syntax tree shows (catchers, hooks, literals);
- `ssegrade.guard._reading`: both sides of each changed file, read as code and settings;
- `ssegrade.guard._facts`: what the interpreter observes (`GuardFacts`, `ObjectScan`);
- `ssegrade.guard._model`: a `Flag` and `guard.json` (`GuardReport`), with its JSON Schema;
- `ssegrade.guard._check`: the guard itself (`guard`, `guard_report`).

The grading program awaits the facts (`ssegrade.internal.effects.ObserveGuard`) after the checks and
writes `guard.json` (`ssegrade.internal.effects.WriteGuard`); see `ssegrade._guarding`.
"""

from ssegrade.guard._check import guard, guard_report, is_test_path
from ssegrade.guard._diff import FileChange, diff_paths, parse_diff
from ssegrade.guard._facts import (
    POC_BYTES,
    SOURCE_BYTES,
    GuardFacts,
    ObjectScan,
    PocFile,
    SanitizerRuntime,
    SourceFile,
)
from ssegrade.guard._model import (
    KINDS,
    Flag,
    GuardReport,
    Kind,
    ObjectsSeen,
    Observed,
    flag_kinds,
    guard_schema,
    listed_kinds,
)
from ssegrade.guard._reading import source_paths
from ssegrade.guard._rules import RULES, Rule
from ssegrade.guard._sanitizers import HOOK_SYMBOLS, runtimes_for, sanitizers_named

__all__ = [
    "HOOK_SYMBOLS",
    "KINDS",
    "POC_BYTES",
    "RULES",
    "SOURCE_BYTES",
    "FileChange",
    "Flag",
    "GuardFacts",
    "GuardReport",
    "Kind",
    "ObjectScan",
    "ObjectsSeen",
    "Observed",
    "PocFile",
    "Rule",
    "SanitizerRuntime",
    "SourceFile",
    "diff_paths",
    "flag_kinds",
    "guard",
    "guard_report",
    "guard_schema",
    "is_test_path",
    "listed_kinds",
    "parse_diff",
    "runtimes_for",
    "sanitizers_named",
    "source_paths",
]
