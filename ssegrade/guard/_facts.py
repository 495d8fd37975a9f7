"""What the interpreter observes for the guard, the answers of its effects.

Pure core. They live in `ssegrade._guard_facts`, a module of their own outside the guard, so that
the effect vocabulary (`ssegrade.internal.effects`) names them without loading the guard; the
guard and its readers import them from here or from there alike.
"""

from ssegrade._guard_facts import (
    POC_BYTES,
    SOURCE_BYTES,
    SOURCE_FILES,
    GuardFacts,
    ObjectScan,
    PocFile,
    Rerun,
    SanitizerRuntime,
    SourceFile,
)

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
