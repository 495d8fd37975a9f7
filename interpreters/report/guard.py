"""The patch guard and the containment modes as every report format shows them.

Interpreter layer, output side, no I/O: the numbers come from the pure core (each row's
`unflagged` share, `flagged` counts and `unguarded` runs, each run's `flags`, the report's
`containment` counts: `ssegrade.report._guard`, `ssegrade.report._aggregate`); this module only
names and words them, the same way for the text, the CSV and the page. The guard is advisory
(SPEC §15): its columns stand beside the shares and change none of them.
"""

from __future__ import annotations

from collections.abc import Sequence

from ssegrade.guard import KINDS
from ssegrade.report import Report, Row

__all__ = [
    "GUARD_HEAD",
    "UNFLAGGED",
    "containment_text",
    "flag_counts",
    "flags_text",
    "guard_columns",
    "guard_header",
    "guarded_rows",
    "listed_text",
]

UNFLAGGED = ("unflagged", "Passed, unflagged")
"""The patch guard's share beside the pass share (SPEC §15): passed and no flag raised."""

GUARD_HEAD = "Patch guard, flags among passed runs (advisory: never part of the grade):"
"""The title of the text's guard lines."""


def flags_text(flags: Sequence[str] | None) -> str:
    """A run's flags as the table and the page show them: kinds, `none`, or `—` (no record).

    >>> flags_text(("sanitizer", "build-config")), flags_text(()), flags_text(None)
    ('sanitizer, build-config', 'none', '—')
    """
    if flags is None:
        return "—"
    return ", ".join(flags) if flags else "none"


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def guard_header() -> list[str]:
    """The CSV titles of a row's guard columns: the unflagged share (as every share), the
    passed runs raising each kind (flags that count), the runs without a guard record, then
    the passed runs raising each kind only as a touch no check runs (listed, not counted)."""
    key = UNFLAGGED[0]
    shares = [f"{key}_passed", f"{key}_of", f"{key}_share", f"{key}_low", f"{key}_high"]
    return [
        *shares,
        *(f"flagged_{kind}" for kind in KINDS),
        "unguarded",
        *(f"listed_{kind}" for kind in LISTED_KINDS),
    ]


LISTED_KINDS = ("build-config", "tests", "vendored")
"""The kinds a flag may be listed under without counting (`ssegrade.guard._counting`)."""


def guard_columns(row: Row) -> list[object]:
    """The CSV cells of a row's guard columns (`guard_header` order; None: an empty cell)."""
    share = row.unflagged
    cells: list[object] = (
        [None] * 5
        if share is None
        else [share.passed, share.of, _r(share.share), _r(share.low), _r(share.high)]
    )
    return [
        *cells,
        *(row.flagged.get(kind, 0) for kind in KINDS),
        row.unguarded,
        *(row.listed.get(kind, 0) for kind in LISTED_KINDS),
    ]


def guarded_rows(report: Report) -> list[Row]:
    """The rows with at least one run carrying a guard record."""
    return [row for row in report.rows if row.unguarded < row.runs]


def listed_text(row: Row) -> str:
    """A row's listed touches in words (`tests 1, vendored 2`), or `none`."""
    return ", ".join(f"{kind} {n}" for kind, n in row.listed.items()) or "none"


def flag_counts(row: Row) -> str:
    """A row's guard counts in words: `m/a: sanitizer 1, tests 2; 1 without a guard record`,
    and the touches listed, not counted.

    >>> flag_counts(Row.model_validate({"model": "m", "agent": "a", "runs": 3, "spend": None,
    ...     "minutes": None, **{k: {"passed": 0, "of": 0, "share": None, "low": None,
    ...     "high": None} for k in ("build", "poc", "func", "intent", "passed")},
    ...     "flagged": {"tests": 2}, "unguarded": 1, "listed": {"vendored": 1}}))
    'm/a: tests 2; 1 without a guard record; listed, not counted (no check runs them): vendored 1'
    """
    kinds = ", ".join(f"{kind} {n}" for kind, n in row.flagged.items()) or "none"
    missing = f"; {row.unguarded} without a guard record" if row.unguarded else ""
    listed = f"; {LISTED}: {listed_text(row)}" if row.listed else ""
    return f"{row.label}: {kinds}{missing}{listed}"


LISTED = "listed, not counted (no check runs them)"
"""How the text names the touches that change nothing a check runs."""


def containment_text(report: Report) -> str | None:
    """The containment modes of the runs' scripts in words, None when no run recorded one.

    >>> containment_text(Report(runs="latest", rows=(), excluded=(), tasks=(),
    ...     containment={"full": 3, "unknown": 1, "weak": 2}))
    "Containment of the runs' scripts: 3 full, 1 unknown, 2 weak."
    """
    if not set(report.containment) - {"unknown"}:
        return None
    counts = ", ".join(f"{n} {mode}" for mode, n in report.containment.items())
    return f"Containment of the runs' scripts: {counts}."
