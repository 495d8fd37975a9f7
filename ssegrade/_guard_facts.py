"""What the interpreter observes for the guard: the answers of its effects.

Pure core, outside the guard: `ssegrade.internal.effects` names them without loading it. Frozen
dataclasses, as every effect answer (`ssegrade.internal.answers`): the PoC files'
bytes, the paths of the hidden test diff, and what a scan of the grading build's objects found
(`ObjectScan`). The guard's rules read them (`ssegrade.guard._check`); the effects that ask for
them are in `ssegrade.internal.effects` (`ObserveGuard`, `ReadTaskFile`, `ScanObjects`).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ConfigDict

__all__ = [
    "POC_BYTES",
    "SOURCE_BYTES",
    "SOURCE_FILES",
    "GuardFacts",
    "ObjectScan",
    "PocFile",
    "Rerun",
    "SanitizerRuntime",
    "SourceFile",
]

POC_BYTES = 256 << 10
"""The most bytes of one PoC file the guard reads (its start)."""

SOURCE_BYTES = 1 << 20
"""The most bytes of one changed file the guard reads from the grading repo (a larger one is
read from the patch alone)."""

SOURCE_FILES = 200
"""The most changed files the guard reads from the grading repo."""

_WIRE = ConfigDict(
    defer_build=True, extra="forbid", ser_json_bytes="base64", val_json_bytes="base64"
)
"""How the facts travel (a trace, the daemon's reply): closed, bytes in base64."""


@dataclass(frozen=True, slots=True)
class SanitizerRuntime:
    """A sanitizer (`address`, …) and the prefixes of the string-table entries (symbols,
    linked libraries) by which an object built with it is known."""

    __pydantic_config__ = _WIRE

    name: str
    markers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ObjectScan:
    """What a scan of the grading build's copy found: how many ELF files it examined that the
    build produced, the first object carrying each sanitizer's runtime (sanitizer name, path
    in the copy), and why it stopped before the end (None: it saw everything or found every
    runtime)."""

    __pydantic_config__ = _WIRE

    examined: int = 0
    carrying: tuple[tuple[str, str], ...] = ()
    stopped: str | None = None
    hooks: tuple[tuple[str, str], ...] = ()
    """Sanitizer hooks (`__asan_default_options`, …) an object the build compiled defines:
    (symbol, path in the copy)."""
    known: tuple[tuple[str, str], ...] = ()
    """Where the project's source before the patch already names one of those hooks:
    (symbol, path in the grading repo). A hook the project defined itself, in a file the
    patch leaves as it was, is not the patch's doing."""

    def carrier(self, sanitizer: str) -> str | None:
        """The path of the first object found carrying `sanitizer`'s runtime, or None."""
        return next((path for name, path in self.carrying if name == sanitizer), None)


@dataclass(frozen=True, slots=True)
class PocFile:
    """A PoC's config path and its bytes (the first `POC_BYTES` of them)."""

    __pydantic_config__ = _WIRE

    path: str
    data: bytes


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file the patch changes, as the grading repo holds it before the patch: its path and
    its bytes (None: absent, or larger than `SOURCE_BYTES`, or not a regular file)."""

    __pydantic_config__ = _WIRE

    path: str
    before: bytes | None = None


@dataclass(frozen=True, slots=True)
class Rerun:
    """A PoC that passed in the grade, run once more with the options pinned
    (`ssegrade.guard._pinning`; the grading program runs it, beside the facts): its config
    path, exit code, output (stdout, a newline, stderr), whether it was killed at its limit,
    its seconds and log, or why it did not run (`skipped`: too little time left, an
    interpreter that refuses it)."""

    __pydantic_config__ = _WIRE

    poc: str
    code: int = 0
    output: str = ""
    killed: bool = False
    seconds: float = 0.0
    log_file: str | None = None
    skipped: str | None = None


@dataclass(frozen=True, slots=True)
class GuardFacts:
    """Everything the guard's rules read besides the patch and the task: the PoC files, the
    paths the hidden test diff touches, the scan of the build's objects (None when it did
    not run: no sanitizer named, no build, or no build copy), and the files the patch changes
    as they were before it (the guard applies the patch to them to read both sides as code)."""

    __pydantic_config__ = _WIRE

    pocs: tuple[PocFile, ...] = ()
    hidden_tests: tuple[str, ...] = ()
    objects: ObjectScan | None = None
    sources: tuple[SourceFile, ...] = ()
