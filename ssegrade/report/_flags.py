"""A summary's patch guard record as the report reads it: the kinds of flag that count against
the run, and those only listed.

Pure core. The report reads this for each of 100,000 runs, so the common shapes (no record;
checked, with flags of string kinds) are read directly; any other shape goes through the
guard's own model (`ssegrade.guard._model`), which decides. Both give the same answer (a
property test holds them equal).
"""

from __future__ import annotations

from ssegrade.guard._counting import counts
from ssegrade.guard._model import KINDS, flag_kinds, listed_kinds

__all__ = ["guard_flags", "guard_listed"]

_KNOWN = frozenset(KINDS)


def guard_flags(doc: object) -> tuple[str, ...] | None:
    """`ssegrade.guard._model.flag_kinds` of a summary's `guard` as JSON parsing gave it (the
    kinds that count against the run), the common shapes (no record; checked, with flags of
    string kinds) read directly instead of validated again: the same answer, for each of
    100,000 runs.

    >>> guard_flags({"checked": True, "flags": [{"kind": "tests"}, {"kind": "sanitizer"}]})
    ('sanitizer', 'tests')
    >>> guard_flags({"checked": True, "flags": [{"kind": "tests", "counts": False}]})
    ()
    >>> guard_flags(None), guard_flags({"checked": True, "flags": []})
    (None, ())
    """
    read = _direct(doc)
    if read is None:
        return None if doc is None else flag_kinds(doc)
    return read[0]


def guard_listed(doc: object) -> tuple[str, ...]:
    """`ssegrade.guard._model.listed_kinds` of a summary's `guard`, read as `guard_flags` reads
    it: the kinds raised only as touches no check runs.

    >>> guard_listed({"checked": True, "flags": [{"kind": "tests", "counts": False}]})
    ('tests',)
    """
    read = _direct(doc)
    if read is None:
        return () if doc is None else listed_kinds(doc)
    return read[1]


def _ordered(raised: set[str]) -> tuple[str, ...]:
    return tuple(kind for kind in KINDS if kind in raised) + tuple(sorted(raised - _KNOWN))


def _direct(doc: object) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(counted kinds, listed kinds) of a guard document of the common shape; None for any
    other (read by the model instead)."""
    if doc.__class__ is not dict:
        return None
    flags = doc.get("flags")
    if doc.get("checked") is not True or flags.__class__ is not list:
        return None
    counted: set[str] = set()
    raised: set[str] = set()
    for flag in flags:
        kind = flag.get("kind") if flag.__class__ is dict else None
        if kind.__class__ is not str:
            return None
        raised.add(kind)
        if counts(flag):
            counted.add(kind)
    if not raised:
        return (), ()
    return _ordered(counted), _ordered(raised - counted)
