"""The patch guard in the report: how many passed runs are flagged, and shares without them.

Pure core, beside the shares (SPEC §15): the guard never changes a run's grade, so the report
only adds, per (model, agent) row, the share of runs that passed **and** raised no flag
(`unflagged`, over the same runs as the pass share), how many passed runs raised each kind
(`flagged`), and how many runs carry no guard record (`unguarded`: graded before the guard, or
read from a folder without `guard.json`; they count as not unflagged). Only flags that count
against a run (`ssegrade.guard._counting`: evidence; sanitizer, crash-handler, poc-literal;
touches of files a check runs) are in a run's `flags`, so every reading here counts alike;
touches that change nothing a check runs are counted apart (`listed`), never against a run.
`exclude_flagged` takes the runs raising given kinds out of a selection, so that every share is
taken without them;
they are listed as excluded, as reference and `error` runs are. `flagged_as_failed` keeps
them and counts them as not passed: the reading that cannot raise a share.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from ssegrade.guard._model import KINDS
from ssegrade.report._model import Share
from ssegrade.report._select import Selection
from ssegrade.report._summary import RunRecord

__all__ = [
    "GuardTally",
    "RowGuard",
    "exclude_flagged",
    "flagged_as_failed",
    "flagged_why",
    "row_guard",
]


@dataclass(frozen=True, slots=True)
class RowGuard:
    """A row's guard columns (see the module's docstring)."""

    unflagged: Share | None
    flagged: dict[str, int]
    unguarded: int
    flagged_as_failed: Share | None = None
    """The pass share where a passed run the guard flagged counts as not passed (a run
    without a guard record counts by its grade), over the same runs; None without records."""
    listed: dict[str, int] = field(default_factory=dict)
    """How many passed runs raised each kind only as a touch no check runs (listed, not
    counted: such a run may still be unflagged)."""


class GuardTally:
    """A row's guard columns counted a few runs at a time (a report folded task by task keeps
    these counts, not the runs): `add` runs, then `result`."""

    __slots__ = ("_clean", "_counts", "_listed", "_plain", "_runs", "_unguarded")

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._listed: dict[str, int] = {}
        self._clean = 0
        self._plain = 0
        self._unguarded = 0
        self._runs = 0

    def add(self, kept: Iterable[RunRecord]) -> GuardTally:
        """Count these kept runs of the row; returns the tally."""
        counts = self._counts
        for rec in kept:
            self._runs += 1
            flags = rec.flags
            if flags is None:
                self._unguarded += 1
                self._plain += rec.patch.status == "passed"
            elif rec.patch.status == "passed":
                for kind in rec.listed:
                    self._listed[kind] = self._listed.get(kind, 0) + 1
                if flags:
                    for kind in flags:
                        counts[kind] = counts.get(kind, 0) + 1
                else:
                    self._clean += 1
        return self

    def result(self) -> RowGuard:
        """The columns of every run added: `unflagged` is None when no run carries a guard
        record."""
        ordered, listed = _ordered(self._counts), _ordered(self._listed)
        if self._unguarded == self._runs:
            return RowGuard(
                unflagged=None, flagged=ordered, unguarded=self._unguarded, listed=listed
            )
        return RowGuard(
            unflagged=Share.of_counts(self._clean, self._runs),
            flagged=ordered,
            unguarded=self._unguarded,
            flagged_as_failed=Share.of_counts(self._clean + self._plain, self._runs),
            listed=listed,
        )


def _ordered(counts: dict[str, int]) -> dict[str, int]:
    return {k: counts[k] for k in (*KINDS, *sorted(counts)) if k in counts}


def row_guard(kept: Sequence[RunRecord]) -> RowGuard:
    """The guard columns of the runs of one row (or one task): `unflagged` is None when no
    run carries a guard record.

    >>> from ssegrade.internal.result import PatchResult
    >>> ok = PatchResult(status="passed")
    >>> runs = [RunRecord("t", "m", "a", "1", ok, flags=()),
    ...         RunRecord("t", "m", "a", "2", ok, flags=("sanitizer", "build-config")),
    ...         RunRecord("t", "m", "a", "3", PatchResult(status="failed"), flags=("tests",)),
    ...         RunRecord("t", "m", "a", "4", ok)]
    >>> g = row_guard(runs)
    >>> (g.unflagged.passed, g.unflagged.of), g.flagged, g.unguarded
    ((1, 4), {'build-config': 1, 'sanitizer': 1}, 1)
    >>> g.flagged_as_failed.passed, g.flagged_as_failed.of
    (2, 4)
    """
    return GuardTally().add(kept).result()


def flagged_why(kinds: Iterable[str]) -> str:
    """Why a run is left out by `exclude_flagged`.

    >>> flagged_why(("sanitizer", "tests"))
    'flagged: sanitizer, tests'
    """
    return "flagged: " + ", ".join(kinds)


def exclude_flagged(selection: Selection, kinds: Iterable[str]) -> Selection:
    """`selection` without the kept runs that raised any of `kinds`: they join the excluded
    runs (the report says why: `flagged_why`). The selection rules stand: under `latest`, a
    group whose latest run is taken out has no run in the shares (an older one is never
    promoted)."""
    out = frozenset(kinds)
    kept: list[tuple[int, RunRecord]] = []
    excluded = list(selection.excluded)
    for trial, rec in selection.kept:
        if rec.flags is not None and out.intersection(rec.flags):
            excluded.append(rec)
        else:
            kept.append((trial, rec))
    return replace(selection, kept=tuple(kept), excluded=tuple(excluded))


def flagged_as_failed(selection: Selection, kinds: Iterable[str]) -> Selection:
    """`selection` where each kept run that passed and raised any of `kinds` counts as not
    passed: it stays in every denominator (unlike `exclude_flagged`, which takes it out and so
    can raise a row's share), graded `failed` with why (`flagged_why`). Its checks are left
    as observed."""
    out = frozenset(kinds)
    kept: list[tuple[int, RunRecord]] = []
    for trial, rec in selection.kept:
        raised = out.intersection(rec.flags or ())
        if raised and rec.patch.status == "passed":
            why = flagged_why(k for k in rec.flags or () if k in raised)
            patch = rec.patch.model_copy(update={"status": "failed", "error_msg": why})
            kept.append((trial, rec._replace(patch=patch)))
        else:
            kept.append((trial, rec))
    return replace(selection, kept=tuple(kept))
