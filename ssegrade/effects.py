"""The effect vocabulary, public: what a grading program awaits and what each effect answers.

An interpreter of ssegrade's programs is a function over these effects (`docs/architecture.md`
has the table, `docs/testing.md` an interpreter written against them). They live in
`ssegrade.internal.effects`; this face names every one of them and nothing else.
"""

from ssegrade.internal import effects as _vocabulary
from ssegrade.internal.effects import *  # noqa: F403 - the face is the vocabulary's whole list

__all__ = _vocabulary.__all__
