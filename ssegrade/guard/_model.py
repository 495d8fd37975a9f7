"""The guard's documents: a flag, and `guard.json` (`GuardReport`), with its JSON Schema.

Pure core. They live in `ssegrade.internal.guard_document`, a module of their own outside the
guard, so that the effect vocabulary (`ssegrade.internal.effects`) names them without loading
the guard; the guard and its readers import them from here or from there alike.
"""

from ssegrade.internal.guard_document import (
    KINDS,
    Confidence,
    Flag,
    GuardReport,
    Kind,
    ObjectsSeen,
    Observed,
    flag_kinds,
    guard_schema,
    listed_kinds,
)

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
    "listed_kinds",
]
