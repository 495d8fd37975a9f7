"""A package face that loads each public name from its module on first use (PEP 562).

Pure: it only binds names of modules already on the import path. `lazy_face(__name__,
homes)` at the end of a package's `__init__` serves each name of `homes` from its module when
first asked for, and keeps it; a public name that is also a submodule's (`probe`, a function
in `probe.py`) stays the public name when that submodule is imported, where the import system
would otherwise bind the module in its place.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["lazy_face"]


class _Face(types.ModuleType):
    """A lazy package: the import system's binding of a submodule never hides a public name."""

    _lazy_homes: Mapping[str, str]

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, types.ModuleType) and name in self.__dict__.get("_lazy_homes", {}):
            return  # the import system naming the submodule here: the public name wins
        super().__setattr__(name, value)


def lazy_face(name: str, homes: Mapping[str, str]) -> None:
    """Make the package `name` serve each name of `homes` (name → module) on first use.

    >>> import ssegrade
    >>> ssegrade.decide.__module__
    'ssegrade.internal.verdict'
    """
    module = sys.modules[name]

    def __getattr__(attribute: str) -> Any:
        home = homes.get(attribute)
        if home is None:
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
        value = getattr(importlib.import_module(home), attribute)
        module.__dict__[attribute] = value
        return value

    module.__dict__["__getattr__"] = __getattr__
    module.__dict__["_lazy_homes"] = homes
    module.__class__ = _Face
