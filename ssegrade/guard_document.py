"""The guard's documents: a flag, and `guard.json` (`GuardReport`), with its JSON Schema.

Pure core: frozen pydantic models. `guard.json` is written beside `result.json` and never
changes it; `summary.json` carries the same document under `guard`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from typing_extensions import TypedDict

__all__ = [
    "KINDS",
    "Confidence",
    "Flag",
    "GuardReport",
    "Kind",
    "ObjectsSeen",
    "Observed",
    "flag_kinds",
    "guard_schema",
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


class _Doc(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")


Confidence = Literal["evidence", "pattern"]
"""How sure a flag is: `evidence`, seen in what the build produced (a symbol an object
defines, a runtime absent); `pattern`, read in the patch's code or files."""


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
    diff, the scan of the build's objects (null: not scanned)."""

    pocs: int = 0
    hidden_tests: int = 0
    objects: ObjectsSeen | None = None


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


class _GuardDoc(TypedDict, total=False):
    checked: bool
    flags: list[_FlagDoc]


_GUARD: TypeAdapter[_GuardDoc] = TypeAdapter(_GuardDoc)
"""A guard document read leniently: only what the report needs, other keys ignored."""


def flag_kinds(doc: object) -> tuple[str, ...] | None:
    """The kinds of flag a guard document (`guard.json`, or `summary.json`'s `guard`) raised,
    in the guard's order, once each; None when it is not one or examined no patch.

    >>> flag_kinds({"checked": True, "flags": [{"kind": "tests"}, {"kind": "sanitizer"}]})
    ('sanitizer', 'tests')
    >>> flag_kinds({"checked": False, "flags": []}), flag_kinds(None), flag_kinds(b"{}")
    (None, None, ())
    """
    if doc is None:
        return None
    try:
        read = _GUARD.validate_json(doc) if isinstance(doc, bytes) else _GUARD.validate_python(doc)
    except ValidationError:
        return None
    if not read.get("checked", True):
        return None
    raised = {flag.get("kind") for flag in read.get("flags", [])}
    return tuple(kind for kind in KINDS if kind in raised) + tuple(
        sorted(k for k in raised if k is not None and k not in KINDS)
    )
