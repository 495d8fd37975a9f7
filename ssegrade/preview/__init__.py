"""The agent's `test_patch` preview (SPEC §10): which checks run, in what order, and the text.

Pure core, one concept per module:

- `ssegrade.preview._program`: `preview`, the program; it awaits `Bench` effects (answered
  over the agent-facing daemon socket, on the agent's live tree) and, for a log over 10,000
  words, `SpillLog`, and returns a `PreviewResult`;
- `ssegrade.preview._decision`: what a `PreviewReport` (what ran and how each run ended)
  shows: each enabled check's line, the failed check, the headline (`PreviewResult`);
- `ssegrade.preview._text`: the words, `summarize` (the result with its text) and `render`
  (the text alone), so that the wording can be read and tested without running anything.

The checks, their order and their names are the checks table's (`ssegrade.internal.checks`); the
preview's effects are in `ssegrade.internal.effects` like every other.
"""

from ssegrade.internal.effects import PreviewEffect, SpillLog
from ssegrade.preview._decision import (
    CheckLine,
    CheckStatus,
    Headline,
    PreviewReport,
    PreviewResult,
    check_lines,
    failed_check,
    headline,
    withheld,
)
from ssegrade.preview._program import preview
from ssegrade.preview._text import (
    INTERNAL_FAILURE,
    LOG_LINE_LIMIT,
    LOG_WORD_LIMIT,
    NO_POCS,
    NOTHING_TO_RUN,
    UNSAVED,
    internal_failure,
    render,
    shown_log,
    summarize,
    truncate_log,
    word_count,
)

__all__ = [
    "INTERNAL_FAILURE",
    "LOG_LINE_LIMIT",
    "LOG_WORD_LIMIT",
    "NOTHING_TO_RUN",
    "NO_POCS",
    "UNSAVED",
    "CheckLine",
    "CheckStatus",
    "Headline",
    "PreviewEffect",
    "PreviewReport",
    "PreviewResult",
    "SpillLog",
    "check_lines",
    "failed_check",
    "headline",
    "internal_failure",
    "preview",
    "render",
    "shown_log",
    "summarize",
    "truncate_log",
    "withheld",
    "word_count",
]
