"""The effect vocabulary is one: each effect is defined once and every union is composed of a
few parts, so that what the grading program and a system interpreter share is named once
(`ResultsEffect`), and the daemon's reads are effects too (`DaemonRead`)."""

from __future__ import annotations

import inspect
from typing import Any, get_args

from ssegrade.internal import effects
from ssegrade.internal.effects import (
    BenchEffect,
    DaemonRead,
    Effect,
    GradingEffect,
    PreviewEffect,
    ResultsEffect,
    SystemEffect,
    WorkEffect,
)


def _members(union: Any) -> set[type[Effect[Any]]]:
    return set(get_args(union))


PARTS = {"bench": BenchEffect, "results": ResultsEffect, "work": WorkEffect}


def test_the_vocabularies_are_composed_of_disjoint_parts() -> None:
    parts = [_members(part) for part in PARTS.values()]
    assert all(not (a & b) for i, a in enumerate(parts) for b in parts[i + 1 :])
    assert _members(GradingEffect) == _members(BenchEffect) | _members(ResultsEffect)
    assert _members(SystemEffect) == _members(WorkEffect) | _members(ResultsEffect)
    assert _members(GradingEffect) & _members(SystemEffect) == _members(ResultsEffect)


def test_every_effect_belongs_to_a_vocabulary() -> None:
    defined = {
        value
        for _name, value in inspect.getmembers(effects, inspect.isclass)
        if issubclass(value, Effect) and value is not Effect
    }
    spoken = set().union(
        *(_members(u) for u in (GradingEffect, SystemEffect, PreviewEffect, DaemonRead))
    )
    assert defined == spoken


def test_the_daemon_reads_what_grading_captures_as_grading_captures_it() -> None:
    assert effects.CaptureTree in _members(DaemonRead) & _members(WorkEffect)
    assert effects.ReadTaskFile in _members(DaemonRead) & _members(WorkEffect)
    assert {effects.ChangedFiles, effects.ReadArtifact, effects.ReadDialog} <= _members(DaemonRead)
