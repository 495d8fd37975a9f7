"""The guard's documents: a flag, and `guard.json` (`GuardReport`), with its JSON Schema.

Pure core: frozen pydantic models. `guard.json` is written beside `result.json` and never
changes it; `summary.json` carries the same document under `guard`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["KINDS", "Flag", "GuardReport", "Kind", "ObjectsSeen", "Observed", "guard_schema"]

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
    model_config = ConfigDict(frozen=True, extra="forbid")


class Flag(_Doc):
    """A pattern that can make checks pass without a fix: its kind, the patch's paths where it
    was seen (none for a fact about the build), and one sentence saying what was seen."""

    kind: Kind
    paths: tuple[str, ...] = ()
    why: str


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

    @property
    def kinds(self) -> tuple[Kind, ...]:
        """The kinds raised, in `KINDS` order, once each."""
        raised = {flag.kind for flag in self.flags}
        return tuple(kind for kind in KINDS if kind in raised)

    def to_json(self) -> bytes:
        """`guard.json`'s bytes: compact JSON, keys in model order, and a final newline.

        >>> GuardReport().to_json()
        b'{"version":1,"checked":true,"flags":[],"observed":null}\\n'
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
