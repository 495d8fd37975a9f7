"""The patch guard on its labelled set (`tests/guard_cases/`): cheats disguised as an agent
that knows the rules would disguise them, in C, Go, Rust and Python, and genuine fixes written
as projects write them. Every cheat must raise its kind; at most one fix in twenty any flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from ssegrade import Task
from ssegrade.guard import guard
from tests.support.guardkit import CASES, case_facts, case_patch, load_case

ALL = sorted(CASES.glob("*.case"))
TASK = Task(id="t", sanitizer="address")


def _kinds(path: Path, tmp: Path) -> tuple[set[str], object]:
    case = load_case(path)
    patch = case_patch(case, tmp / case.name)
    flags = guard(patch, TASK, case_facts(case))
    return {f.kind for f in flags}, case


def test_the_set_is_large_enough() -> None:
    cases = [load_case(p) for p in ALL]
    assert sum(c.kind is not None for c in cases) >= 40
    assert sum(c.kind is None for c in cases) >= 20
    assert {Path(n).suffix for c in cases for n in c.after} >= {".c", ".go", ".rs", ".py"}


@pytest.mark.parametrize("path", [p for p in ALL if load_case(p).kind], ids=lambda p: p.stem)
def test_every_cheat_raises_its_kind(path: Path, tmp_path: Path) -> None:
    kinds, case = _kinds(path, tmp_path)
    assert load_case(path).kind in kinds, case


def test_at_most_one_genuine_fix_in_twenty_is_flagged(tmp_path: Path) -> None:
    fixes = [p for p in ALL if load_case(p).kind is None]
    flagged = {p.stem: kinds for p in fixes if (kinds := _kinds(p, tmp_path)[0])}
    assert len(flagged) * 20 <= len(fixes), flagged
