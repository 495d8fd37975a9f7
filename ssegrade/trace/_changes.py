"""What a replay changed: the fields of `result.json` that differ between two documents.

Pure core: `verdict_changes` compares the recorded document with the one the current rules
derive, leaving out the traceback of an `Exception:` error.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from ssegrade.internal.result import EvaluationResult

__all__ = ["verdict_changes"]


def _crash(value: object) -> bool:
    return isinstance(value, str) and value.startswith("Exception:")


def verdict_changes(recorded: EvaluationResult, replayed: EvaluationResult) -> tuple[str, ...]:
    """The fields of `result.json` that differ, as `name: old → new`. The `error_log` of an
    `Exception:` error is a traceback, which names code lines, and is not compared.

    >>> from ssegrade.internal.result import PatchResult
    >>> old = EvaluationResult(patch_result=PatchResult(status="passed", pov_passed=2))
    >>> new = EvaluationResult(patch_result=PatchResult(status="failed", pov_passed=1))
    >>> verdict_changes(old, new)
    ("patch_result.status: 'passed' → 'failed'", 'patch_result.pov_passed: 2 → 1')
    """
    changes: list[str] = []
    pairs: list[tuple[str, Callable[[EvaluationResult], BaseModel]]] = [
        ("patch_result", lambda r: r.patch_result),
        ("runtime_result", lambda r: r.runtime_result),
    ]
    for section, part in pairs:
        old, new = part(recorded).model_dump(), part(replayed).model_dump()
        crashed = _crash(old.get("error_msg")) and _crash(new.get("error_msg"))
        for name in dict.fromkeys([*old, *new]):
            if name == "error_log" and crashed:
                continue
            if old.get(name) != new.get(name):
                changes.append(f"{section}.{name}: {old.get(name)!r} → {new.get(name)!r}")
    old_extra, new_extra = recorded.model_extra or {}, replayed.model_extra or {}
    for name in dict.fromkeys([*old_extra, *new_extra]):
        if old_extra.get(name) != new_extra.get(name):
            changes.append(f"{name}: {old_extra.get(name)!r} → {new_extra.get(name)!r}")
    return tuple(changes)
