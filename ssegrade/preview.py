"""The agent's `test_patch` preview (SPEC §10): which checks run, in what order, and the text.

Pure core, in two parts:

- `preview` is a program: it awaits `Bench` effects (answered over the agent-facing daemon
  socket, on the agent's live tree) and, for a log over 10,000 words, `SpillLog`; it returns the
  whole text;
- `render` turns a `PreviewReport` (what ran and how each run ended) into that text, so that the
  wording can be read and tested without running anything.

The fixed sentences are module constants; `docs/test-patch.md` shows the text at every
difficulty level, and a test keeps its examples equal to `render`'s output.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Final, Literal

from returns.result import Result, Success

from ssegrade.difficulty import Level, allowed
from ssegrade.effects import Action, Bench, Effect, ScriptResult
from ssegrade.task import Check

__all__ = [
    "CHECK_NAMES",
    "INTERNAL_FAILURE",
    "LOG_LINE_LIMIT",
    "LOG_WORD_LIMIT",
    "NOTHING_TO_RUN",
    "NO_POCS",
    "PRECEDENCE",
    "REASONS",
    "RUN_ORDER",
    "UNSAVED",
    "PreviewEffect",
    "PreviewReport",
    "SpillLog",
    "failed_check",
    "preview",
    "render",
    "shown_log",
    "truncate_log",
    "word_count",
]

LOG_WORD_LIMIT: Final = 10_000
"""A log with more words than this is written whole to a file and shown truncated."""

LOG_LINE_LIMIT: Final = 100
"""A truncated log shows at most this many lines (and at most `LOG_WORD_LIMIT` words)."""

RUN_ORDER: Final[tuple[Action, ...]] = ("build", "run_poc", "intent_test", "function_test")
"""The order `test_patch` runs its checks in, which is also the order of the `Checks:` lines."""

PRECEDENCE: Final[tuple[Action, ...]] = ("build", "function_test", "run_poc", "intent_test")
"""When several checks failed, the headline and the log are those of the first one here."""

CHECK_NAMES: Final[Mapping[Action, str]] = MappingProxyType(
    {
        "build": "build",
        "run_poc": "PoCs",
        "intent_test": "intent tests",
        "function_test": "functional tests",
    }
)
"""How the text names each check."""

REASONS: Final[Mapping[Action, str]] = MappingProxyType(
    {
        "build": (
            "The project does not build with your patch. "
            "Please reassess your patch: no other check can run until the build succeeds."
        ),
        "function_test": (
            "The functional tests failed, so your patch may break existing behaviour. "
            "Please reassess your patch."
        ),
        "run_poc": (
            "At least one proof of concept still triggers the vulnerability. "
            "Please reassess whether your patch fixes it."
        ),
        "intent_test": (
            "The intent tests failed, so your patch does not behave the way the fix is expected "
            "to. Please reassess your patch."
        ),
    }
)
"""The reason the headline gives for each failed check: what failed, then a request to reassess."""

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

_CHECK_OF: Final[Mapping[Action, Check]] = MappingProxyType(
    {
        "build": "build",
        "run_poc": "poc",
        "intent_test": "intent_test",
        "function_test": "function_test",
    }
)

_WORD = re.compile(r"\S+")

_Status = Literal["passed", "FAILED", "not run"]


# ---------------------------------------------------------------------------- the effect


@dataclass(frozen=True, slots=True)
class SpillLog(Effect[Result[str, str]]):
    """Write `text` whole to a new file in the log folder; answer its path, or why it failed.

    `name` is a file-name-safe stem naming the check (`test_patch-build`,
    `test_patch-run_poc`, …); the interpreter makes the file name new (it never overwrites).
    """

    name: str
    text: str


PreviewEffect = Bench | SpillLog
"""Every effect `preview` awaits: an interpreter for it must answer both."""


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


# ---------------------------------------------------------------------------- the report


@dataclass(frozen=True, slots=True)
class PreviewReport:
    """What `test_patch` ran and how each run ended; `render` turns it into the text.

    `has` is the set of checks the task has and `poc_total` the number of PoCs it names (the
    task has PoCs when both say so). `build`, `intent` and `functional` are `None` when the
    check did not run; `pocs` holds the PoCs that ran, in order. `spill` is the `SpillLog`
    answer for the log shown, `None` when it was not written to a file.
    """

    level: Level
    has: frozenset[Check]
    poc_total: int = 0
    build: ScriptResult | None = None
    pocs: tuple[ScriptResult, ...] = ()
    intent: ScriptResult | None = None
    functional: ScriptResult | None = None
    spill: Result[str, str] | None = None


def _task_has(report: PreviewReport, action: Action) -> bool:
    if action == "run_poc" and report.poc_total == 0:
        return False
    return _CHECK_OF[action] in report.has


def _passed(result: ScriptResult | None) -> bool:
    return result is not None and result.passed


def _failed(result: ScriptResult | None) -> bool:
    return result is not None and not result.passed


def _status(report: PreviewReport, action: Action) -> tuple[_Status, str | None]:
    """The status and detail of one enabled check's line."""
    if not _task_has(report, action):
        return "not run", "the task has none"
    if action != "build" and _failed(report.build):
        return "not run", "the build failed"
    if action == "run_poc":
        if not report.pocs:
            return "not run", None
        passed = sum(result.passed for result in report.pocs)
        if passed < len(report.pocs):
            detail = f"passed {passed} of {report.poc_total}; stopped at the first that still "
            return "FAILED", detail + "triggers the bug"
        return "passed", f"{passed} of {report.poc_total}"
    if (
        action == "function_test"
        and allowed(report.level, "intent_test")
        and _task_has(report, "intent_test")
        and _passed(report.intent)
    ):
        return "not run", "covered by the intent tests"
    result = {"build": report.build, "intent_test": report.intent}.get(action, report.functional)
    if result is None:
        return "not run", None
    return ("passed" if result.passed else "FAILED"), None


def failed_check(report: PreviewReport) -> Action | None:
    """The failed check the headline and the log speak of: the first in `PRECEDENCE`.

    Only checks the level enables count.

    >>> from ssegrade.difficulty import LEVELS
    >>> failed_check(PreviewReport(LEVELS[0], frozenset({"build", "function_test"}),
    ...     build=ScriptResult(0), functional=ScriptResult(2)))
    'function_test'
    """
    for action in PRECEDENCE:
        if allowed(report.level, action) and _status(report, action)[0] == "FAILED":
            return action
    return None


def _failed_result(report: PreviewReport, action: Action) -> ScriptResult:
    if action == "run_poc":
        return next(result for result in report.pocs if not result.passed)
    result = {"build": report.build, "intent_test": report.intent}.get(action, report.functional)
    assert result is not None  # a FAILED status always has a result
    return result


def _headline(failed: Action | None, ran: bool, withheld: bool) -> str:
    if failed is not None:
        return f"test_patch result: FAILED. {REASONS[failed]}"
    if not ran:
        return "test_patch result: no checks ran."
    if withheld:
        return "test_patch result: every check that ran passed."
    return "test_patch result: every check passed."


def _line(action: Action, status: _Status, detail: str | None) -> str:
    suffix = "" if detail is None else f" ({detail})"
    return f"- {CHECK_NAMES[action]}: {status}{suffix}"


def _log_section(report: PreviewReport, action: Action) -> str:
    name = CHECK_NAMES[action]
    log = shown_log(_failed_result(report, action))
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


def render(report: PreviewReport) -> str:
    """The whole `test_patch` text for `report`; sections are separated by one blank line.

    Only the checks the level enables are shown; the others are named in the withheld note.
    The text has no trailing line break.

    >>> from ssegrade.difficulty import LEVELS
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
    level = report.level
    enabled = [action for action in RUN_ORDER if allowed(level, action)]
    withheld = [action for action in RUN_ORDER if not allowed(level, action)]
    statuses = {action: _status(report, action) for action in enabled}
    failed = failed_check(report)
    ran = any(status != "not run" for status, _ in statuses.values())
    sections = [_headline(failed, ran, bool(withheld))]
    if enabled:
        lines = [_line(action, *statuses[action]) for action in enabled]
        sections.append("\n".join(["Checks:", *lines]))
    if withheld:
        names = ", ".join(CHECK_NAMES[action] for action in withheld)
        note = (
            f"Not available at difficulty level {level.number} ({level.name}): {names}. "
            "Nothing is reported about them."
        )
        if failed is None and not ran:
            note += NOTHING_TO_RUN
        elif failed is None and "run_poc" in withheld:
            note += NO_POCS
        sections.append(note)
    if failed is not None:
        sections.append(_log_section(report, failed))
    return "\n\n".join(sections)


# ---------------------------------------------------------------------------- the program


async def _run_checks(level: Level, has: frozenset[Check], pocs: tuple[str, ...]) -> PreviewReport:
    report = PreviewReport(level, has, len(pocs))

    def runs(action: Action) -> bool:
        return allowed(level, action) and _task_has(report, action)

    build = await Bench("build") if runs("build") else None
    if _failed(build):
        return PreviewReport(level, has, len(pocs), build=build)
    poc_results: list[ScriptResult] = []
    if runs("run_poc"):
        for poc in pocs:
            poc_results.append(await Bench("run_poc", poc))
            if not poc_results[-1].passed:
                break
    intent = await Bench("intent_test") if runs("intent_test") else None
    functional = (
        await Bench("function_test") if runs("function_test") and not _passed(intent) else None
    )
    return PreviewReport(level, has, len(pocs), build, tuple(poc_results), intent, functional)


async def preview(level: Level, has: frozenset[Check], pocs: tuple[str, ...]) -> str:
    """Run the checks `level` enables on the agent's live tree and return the `test_patch` text.

    Order (SPEC §10): build (a failure stops everything), then each PoC in order (stopping at
    the first that still triggers, i.e. exits non-zero), then the intent tests, then the
    functional tests unless the intent tests passed. `has` and `pocs` describe the task (its
    checks and its PoC paths, in config order). A failed log over 10,000 words is written whole
    with `SpillLog`. Any exception an interpreter raises gives `INTERNAL_FAILURE`.

    >>> from ssegrade.difficulty import LEVELS
    >>> from ssegrade.run import run
    >>> asked = []
    >>> def interpret(effect):
    ...     asked.append(effect)
    ...     return ScriptResult(1 if effect.poc == "pocs/b" else 0, stderr="overflow")
    >>> text = run(preview(LEVELS[0], frozenset({"build", "poc"}), ("pocs/a", "pocs/b", "pocs/c")),
    ...            interpret)
    >>> [(effect.action, effect.poc) for effect in asked]
    [('build', None), ('run_poc', 'pocs/a'), ('run_poc', 'pocs/b')]
    >>> text.splitlines()[4]
    '- PoCs: FAILED (passed 1 of 3; stopped at the first that still triggers the bug)'
    """
    try:
        report = await _run_checks(level, has, pocs)
        failed = failed_check(report)
        if failed is not None:
            log = shown_log(_failed_result(report, failed))
            if log is not None and word_count(log) > LOG_WORD_LIMIT:
                spill = await SpillLog(f"test_patch-{failed}", log)
                report = replace(report, spill=spill)
        return render(report)
    except Exception:  # noqa: BLE001 - whatever broke, the agent gets the one fixed sentence
        return INTERNAL_FAILURE
