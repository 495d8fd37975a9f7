"""The guard's documents: a flag, and `guard.json` (`GuardReport`), with its JSON Schema.

Pure core: frozen pydantic models. `guard.json` is written beside `result.json` and never
changes it; `summary.json` carries the same document under `guard`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from typing_extensions import TypedDict

__all__ = [
    "ALWAYS",
    "KINDS",
    "Confidence",
    "Flag",
    "GuardReport",
    "Kind",
    "ObjectsSeen",
    "Observed",
    "counts",
    "flag_kinds",
    "guard_schema",
    "listed_kinds",
]

Kind = Literal["build-config", "sanitizer", "crash-handler", "poc-literal", "tests", "vendored"]
KINDS: tuple[Kind, ...] = (
    "build-config",
    "sanitizer",
    "crash-handler",
    "poc-literal",
    "tests",
    "vendored",
)
"""Every kind of flag, in the order reports show them."""


ALWAYS = frozenset(("sanitizer", "crash-handler", "poc-literal"))
"""The kinds that count whatever their confidence (`ssegrade.guard._counting`)."""


def counts(flag: Mapping[str, object]) -> bool:
    """Whether a flag of `guard.json` (as JSON parsing gave it) counts against its run.

    >>> counts({"kind": "tests", "counts": False}), counts({"kind": "tests"})
    (False, True)
    >>> counts({"kind": "sanitizer", "counts": False}), counts(
    ...     {"kind": "vendored", "confidence": "evidence", "counts": False})
    (True, True)
    """
    if flag.get("kind") in ALWAYS or flag.get("confidence") == "evidence":
        return True
    return flag.get("counts") is not False


class _Doc(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")


Confidence = Literal["evidence", "pattern"]
"""How sure a flag is: `evidence`, seen in what the build produced (a symbol an object
defines, a runtime absent) or in what it did (a PoC that triggers once the grader pins the
options); `pattern`, read in the patch's code or files."""


class Flag(_Doc):
    """A pattern that can make checks pass without a fix: its kind, the patch's paths where it
    was seen (none for a fact about the build), one sentence saying what was seen, how sure
    it is, and where (`path:line` of the first sighting; null when not in a file). A flag of
    an older `guard.json` reads as a `pattern` with no `where`."""

    kind: Kind
    paths: tuple[str, ...] = ()
    why: str
    confidence: Confidence = "pattern"
    where: str | None = None
    counts: bool = True
    """Whether it counts against the run (`ssegrade.guard._counting`): false for a touch of
    build, vendored or test files that changes nothing a check runs (listed, not counted)."""


class ObjectsSeen(_Doc):
    """The scan of the grading build's objects: the sanitizers looked for, the ELF files the
    build produced that were examined, the first object carrying each runtime found, and why
    the scan stopped early (null: it did not)."""

    sanitizers: tuple[str, ...]
    examined: int
    carrying: dict[str, str] = Field(default_factory=dict)
    stopped: str | None = None


class Observed(_Doc):
    """What the interpreter observed for the guard: PoC files read, paths of the hidden test
    diff, the scan of the build's objects (null: not scanned), the PoCs run once more with
    the options pinned."""

    pocs: int = 0
    hidden_tests: int = 0
    objects: ObjectsSeen | None = None
    reruns: int = 0


class GuardReport(_Doc):
    """`guard.json`: the flags the patch raises (empty: none). `checked` is false when there
    was no patch to examine (the capture failed); `observed` is null when the interpreter
    observed nothing (grading stopped at its time limit or was interrupted), so only the
    patch itself was examined."""

    version: Literal[1] = 1
    checked: bool = True
    flags: tuple[Flag, ...] = ()
    observed: Observed | None = None
    notes: tuple[str, ...] = ()
    """What the guard could not examine and why (no parsers, no objects found)."""

    @property
    def kinds(self) -> tuple[Kind, ...]:
        """The kinds raised, in `KINDS` order, once each."""
        raised = {flag.kind for flag in self.flags}
        return tuple(kind for kind in KINDS if kind in raised)

    def to_json(self) -> bytes:
        """`guard.json`'s bytes: compact JSON, keys in model order, and a final newline.

        >>> GuardReport().to_json()
        b'{"version":1,"checked":true,"flags":[],"observed":null,"notes":[]}\\n'
        """
        return (self.model_dump_json() + "\n").encode()


def guard_schema() -> dict[str, Any]:
    """The JSON Schema of `guard.json`, generated from the models.

    >>> guard_schema()["title"], "flags" in guard_schema()["properties"]
    ('ssegrade guard.json', True)
    """
    schema = GuardReport.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "ssegrade guard.json"
    return schema


class _FlagDoc(TypedDict, total=False):
    kind: str
    confidence: str
    counts: bool


class _GuardDoc(TypedDict, total=False):
    checked: bool
    flags: list[_FlagDoc]


_GUARD: TypeAdapter[_GuardDoc] = TypeAdapter(_GuardDoc)
"""A guard document read leniently: only what the report needs, other keys ignored."""


def _ordered(raised: set[str | None]) -> tuple[str, ...]:
    known = tuple(kind for kind in KINDS if kind in raised)
    return known + tuple(sorted(k for k in raised if k is not None and k not in KINDS))


def _read(doc: object) -> _GuardDoc | None:
    if doc is None:
        return None
    try:
        read = _GUARD.validate_json(doc) if isinstance(doc, bytes) else _GUARD.validate_python(doc)
    except ValidationError:
        return None
    return read if read.get("checked", True) else None


def flag_kinds(doc: object) -> tuple[str, ...] | None:
    """The kinds of flag that count against the run (`ssegrade.guard._counting.counts`) a
    guard document (`guard.json`, or `summary.json`'s `guard`) raised, in the guard's order,
    once each; None when it is not one or examined no patch.

    >>> flag_kinds({"checked": True, "flags": [{"kind": "tests"}, {"kind": "sanitizer"}]})
    ('sanitizer', 'tests')
    >>> flag_kinds({"checked": True, "flags": [{"kind": "tests", "counts": False}]})
    ()
    >>> flag_kinds({"checked": False, "flags": []}), flag_kinds(None), flag_kinds(b"{}")
    (None, None, ())
    """
    read = _read(doc)
    if read is None:
        return None
    return _ordered({flag.get("kind") for flag in read.get("flags", []) if counts(flag)})


def listed_kinds(doc: object) -> tuple[str, ...]:
    """The kinds a guard document raised only as touches that change nothing a check runs
    (listed, not counted): raised, and in no flag that counts.

    >>> listed_kinds({"checked": True, "flags": [{"kind": "tests", "counts": False},
    ...     {"kind": "vendored", "counts": False}, {"kind": "vendored"}]})
    ('tests',)
    """
    read = _read(doc)
    if read is None:
        return ()
    flags = read.get("flags", [])
    counted = {flag.get("kind") for flag in flags if counts(flag)}
    return _ordered({flag.get("kind") for flag in flags} - counted)
