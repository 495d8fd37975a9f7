"""The report page's chart: one inline SVG panel per share, a bar per row with its interval.

Interpreter layer, output side: the geometry only (positions, widths, tick marks, the words of
each bar's tooltip), handed to the page's template (`html.py`), which draws it; the page
fetches nothing. The patch guard's unflagged share is charted beside the pass share when a run
carries a guard record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from interpreters.report.guard import UNFLAGGED
from interpreters.report.render import SHARES
from interpreters.report.text import percent
from ssegrade.report import Report, Row, Share

__all__ = ["charts"]

_COLOURS = {
    "passed": "#3b4cc0",
    "build": "#4e79a7",
    "poc": "#d1495b",
    "func": "#2a9d8f",
    "intent": "#e9a23b",
    "unflagged": "#6a4c93",
}
_BAR_H = 16
_GAP = 10
_LABEL_W = 270
_PLOT_W = 250
_TEXT_W = 110


def _chart(title: str, key: str, rows: Sequence[Row]) -> dict[str, Any]:
    """The geometry of one SVG panel: a bar per row for share `key`, with its interval."""
    height = 30 + len(rows) * (_BAR_H + _GAP) + 18
    bars = []
    for i, row in enumerate(rows):
        share: Share = getattr(row, key) or Share.of_counts(0, 0)
        y = 30 + i * (_BAR_H + _GAP)
        mid = y + _BAR_H / 2
        bar: dict[str, Any] = {
            "label": row.label,
            "short": row.label if len(row.label) <= 42 else "…" + row.label[-41:],
            "y": y,
            "mid": mid,
            "text_y": f"{mid + 4:.1f}",
            "share": share.share,
        }
        if share.share is not None and share.low is not None and share.high is not None:
            bar["w"] = f"{_PLOT_W * share.share:.1f}"
            bar["lo"] = f"{_LABEL_W + _PLOT_W * share.low:.1f}"
            bar["hi"] = f"{_LABEL_W + _PLOT_W * share.high:.1f}"
            bar["counts"] = f"{share.passed}/{share.of}"
            bar["tip"] = (
                f"{row.label}: {share.passed}/{share.of} = {percent(share.share)}, "
                f"95% interval {percent(share.low)}–{percent(share.high)}"
            )
        bars.append(bar)
    return {
        "title": title,
        "width": _LABEL_W + _PLOT_W + _TEXT_W,
        "height": height,
        "top": 30,
        "bottom": height - 18,
        "label_w": _LABEL_W,
        "plot_w": _PLOT_W,
        "bar_h": _BAR_H,
        "colour": _COLOURS[key],
        "ticks": [
            {"x": f"{_LABEL_W + _PLOT_W * t / 100:.1f}", "label": t} for t in range(0, 101, 25)
        ],
        "bars": bars,
    }


def charts(report: Report) -> list[dict[str, Any]]:
    """A panel per share, the patch guard's unflagged share beside the pass share when a run
    carries a guard record."""
    shown = list(SHARES)
    if any(row.unflagged is not None for row in report.rows):
        shown.insert(1, UNFLAGGED)
    return [_chart(name, key, report.rows) for key, name in shown]
