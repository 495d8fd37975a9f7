"""The one base of every exception ssegrade raises, the core's and the interpreters'.

Pure core, a leaf: it imports nothing. An embedder that wants to tell ssegrade's own errors
from any other catches `SsegradeError`; each subclass says what went wrong (a result that
cannot be read, a script that could not start, input a grading cannot work with, …).
"""

from __future__ import annotations

__all__ = ["SsegradeError"]


class SsegradeError(Exception):
    """Base of every exception ssegrade defines; its message is one line."""
