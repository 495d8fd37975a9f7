"""The words of `test_patch` (SPEC §10): its fixed sentences, the logs it quotes, the text.

Pure core: `summarize` puts the decision of `ssegrade.preview._decision` into words and returns
it with the text; `render` is the text alone. The fixed sentences are module constants; each
check's name and failure reason are the checks table's (`ssegrade.internal.checks`).
`docs/test-patch.md` shows the text at every difficulty level, and a test keeps its examples
equal to `render`'s output.
"""

from __future__ import annotations

import re
from typing import Final

from returns.result import Success

from ssegrade.internal.checks import Check, spec
from ssegrade.internal.effects import ScriptResult
from ssegrade.preview._decision import (
    CheckLine,
    Headline,
    PreviewReport,
    PreviewResult,
    check_lines,
    failed_check,
    failed_result,
    headline,
    withheld,
)

__all__ = [
    "INTERNAL_FAILURE",
    "LOG_LINE_LIMIT",
    "LOG_WORD_LIMIT",
    "NOTHING_TO_RUN",
    "NO_POCS",
    "UNSAVED",
    "internal_failure",
    "render",
    "shown_log",
    "summarize",
    "truncate_log",
    "word_count",
]

LOG_WORD_LIMIT: Final = 10_000
"""A log with more words than this is written whole to a file and shown truncated."""

LOG_LINE_LIMIT: Final = 100
"""A truncated log shows at most this many lines (and at most `LOG_WORD_LIMIT` words)."""

INTERNAL_FAILURE: Final = (
    "An internal testing failure occurred, so test_patch could not check your patch; "
    "your patch is not responsible for this failure."
)
"""The whole text when an interpreter raises (daemon unreachable, time limit, …)."""

NOTHING_TO_RUN: Final = (
    " test_patch has nothing to run at this level, so this result says nothing about your patch."
)
"""Ends the withheld note when nothing failed and nothing ran."""

NO_POCS: Final = " Without the PoCs, this result does not show whether the vulnerability is fixed."
"""Ends the withheld note when nothing failed, something ran, and the PoCs are withheld."""

UNSAVED: Final = "The full log could not be saved."
"""Replaces `Full log available at <path>` when the log file could not be written; the
interpreter's reason, when it gave one, goes in parentheses before the period."""

_HEADLINES: Final[dict[Headline, str]] = {
    "every_check_passed": "test_patch result: every check passed.",
    "every_check_that_ran_passed": "test_patch result: every check that ran passed.",
    "no_checks_ran": "test_patch result: no checks ran.",
}

_WORD = re.compile(r"\S+")


# ---------------------------------------------------------------------------- logs


def word_count(text: str) -> int:
    """The number of whitespace-separated words in `text`.

    >>> word_count("  make: *** [all] Error 2\\n")
    5
    """
    return len(text.split())


def shown_log(result: ScriptResult) -> str | None:
    """The log of one run as `test_patch` shows it: stdout, a blank line, stderr.

    Trailing line breaks of each part are dropped and a blank part is left out (with its blank
    line); `None` when both are blank ("No log available").

    >>> shown_log(ScriptResult(1, stdout="compiling\\n", stderr="error: x\\n"))
    'compiling\\n\\nerror: x'
    >>> shown_log(ScriptResult(1, stderr="boom")), shown_log(ScriptResult(1, stdout=" \\n"))
    ('boom', None)
    """
    parts = [part.rstrip("\r\n") for part in (result.stdout, result.stderr) if part.strip()]
    return "\n\n".join(parts) or None


def truncate_log(log: str) -> str:
    """The shorter of the last 100 lines and the last 10,000 words of `log`: a suffix of it.

    Lines are separated by `\\n`; the word suffix starts at the first character of a word.

    >>> truncate_log("\\n".join(str(n) for n in range(150))).split("\\n")[0]
    '50'
    >>> long_line = " ".join(["w"] * 10_005) + " end"
    >>> word_count(truncate_log(long_line)), truncate_log(long_line).endswith("w end")
    (10000, True)
    """
    start = len(log)
    for _ in range(LOG_LINE_LIMIT):
        start = log.rfind("\n", 0, start)
        if start < 0:
            break
    line_start = start + 1  # 0 when the log has at most 100 lines
    words = [match.start() for match in _WORD.finditer(log, line_start)]
    if len(words) <= LOG_WORD_LIMIT:
        return log[line_start:]
    return log[words[-LOG_WORD_LIMIT] :]


# ---------------------------------------------------------------------------- the text


def _line(line: CheckLine) -> str:
    suffix = "" if line.detail is None else f" ({line.detail})"
    return f"- {spec(line.check).text}: {line.status}{suffix}"


def _log_section(report: PreviewReport, check: Check) -> str:
    name = spec(check).text
    log = shown_log(failed_result(report, check))
    if log is None:
        return f"Full log ({name}):\nNo log available"
    if word_count(log) <= LOG_WORD_LIMIT:
        return f"Full log ({name}):\n{log}"
    if isinstance(report.spill, Success):
        where = f"Full log available at {report.spill.unwrap()}"
    else:
        why = "" if report.spill is None else " ".join(report.spill.failure().split())
        where = f"The full log could not be saved ({why})." if why else UNSAVED
    return f"Truncated log ({name}):\n{truncate_log(log)}\n\n{where}"


def summarize(report: PreviewReport) -> PreviewResult:
    """What `test_patch` found in `report`, and the text that says it.

    The text's sections are separated by one blank line: the headline, the lines of the checks
    the level enables, the note naming those it withholds, the failed check's log. It has no
    trailing line break.

    >>> from ssegrade.protocol._difficulty import LEVELS
    >>> found = summarize(PreviewReport(LEVELS[3], frozenset({"build"}), build=ScriptResult(1)))
    >>> found.headline, found.failed, found.passed
    ('failed', 'build', False)
    """
    level = report.level
    lines = check_lines(report)
    held = withheld(level)
    failed = failed_check(report)
    said = headline(failed, lines, bool(held))
    if failed is not None:
        sections = [f"test_patch result: FAILED. {spec(failed).reason}"]
    else:
        sections = [_HEADLINES[said]]
    if lines:
        sections.append("\n".join(["Checks:", *map(_line, lines)]))
    if held:
        names = ", ".join(spec(check).text for check in held)
        note = (
            f"Not available at difficulty level {level.number} ({level.name}): {names}. "
            "Nothing is reported about them."
        )
        if said == "no_checks_ran":
            note += NOTHING_TO_RUN
        elif failed is None and "poc" in held:
            note += NO_POCS
        sections.append(note)
    if failed is not None:
        sections.append(_log_section(report, failed))
    return PreviewResult(said, "\n\n".join(sections), lines, held, failed)


def render(report: PreviewReport) -> str:
    """The whole `test_patch` text for `report` (`summarize`'s text).

    >>> from ssegrade.protocol._difficulty import LEVELS
    >>> print(render(PreviewReport(LEVELS[3], frozenset({"build"}), build=ScriptResult(0))))
    test_patch result: every check that ran passed.
    <BLANKLINE>
    Checks:
    - build: passed
    <BLANKLINE>
    Not available at difficulty level 3 (BUILD_ONLY): PoCs, intent tests, functional tests. \
Nothing is reported about them. Without the PoCs, this result does not show whether the \
vulnerability is fixed.
    """
    return summarize(report).text


def internal_failure() -> PreviewResult:
    """The result when an interpreter raised: the one fixed sentence, nothing else.

    >>> internal_failure().passed
    False
    """
    return PreviewResult("internal_error", INTERNAL_FAILURE)
