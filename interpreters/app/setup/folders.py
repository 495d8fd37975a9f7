"""The results folder a grading writes: made ready, held while it is written, and not left
behind empty when grading is refused.

Application layer, over `interpreters.real.resultsfolder` (which names the entries a grading
writes, `RESULTS_ENTRIES`); a folder that cannot be used raises `InputError`.
"""

from __future__ import annotations

import os
from pathlib import Path

from interpreters.app.setup.errors import InputError
from interpreters.real import resultsfolder
from interpreters.real.resultsfolder import RESULTS_ENTRIES, Hold

__all__ = ["RESULTS_ENTRIES", "discard_made", "hold_results", "make_results"]

_KEPT: list[Hold] = []
"""The results folders `make_results` holds until this process ends."""
_MADE: list[Path] = []
"""Those of them it made."""


def hold_results(
    results: Path,
    *,
    force: bool = False,
    share: bool = False,
    join: bool = False,
    token: str | None = None,
) -> Hold:
    """Make the results folder ready and hold it (`interpreters.real.resultsfolder.hold`);
    `InputError` when it cannot be used."""
    try:
        return resultsfolder.hold(
            results, RESULTS_ENTRIES, force=force, share=share, join=join, token=token
        )
    except resultsfolder.NotReady as exc:
        raise InputError(str(exc)) from None


def make_results(
    results: Path, *, force: bool = False, share: bool = False, join: bool = False
) -> Path:
    """`hold_results` for the rest of this process (`evaluate`; the daemon, which `share`s
    it with `evaluate --daemon`, which `join`s it): its absolute path."""
    made = not os.path.lexists(results.absolute())
    hold = hold_results(results, force=force, share=share, join=join)
    _KEPT.append(hold)
    if made:
        _MADE.append(hold.path)
    return hold.path


def discard_made() -> None:
    """Remove the results folders `make_results` made, when grading never wrote into them
    (it was refused: no baseline, no grading repo…): no empty folder is left behind."""
    for path in _MADE:
        resultsfolder.discard_unused(path)
