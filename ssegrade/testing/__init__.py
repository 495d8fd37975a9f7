"""The testing kit: what tests of the grading program and of its interpreters are made of.

Pure core, public API. Hypothesis is imported by `ssegrade.testing.strategies` alone, so the
rest works without it.
"""

from ssegrade.testing.fake import FakeWorld, Script

__all__ = ["FakeWorld", "Script"]
