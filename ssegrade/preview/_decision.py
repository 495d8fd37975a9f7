"""What `test_patch` found (SPEC §10): each enabled check's line, the failed check, the headline.

Pure core: the preview's decision, from a `PreviewReport` of what ran and how each run ended.
The checks, their run order and the precedence of a failure are the checks table's
(`ssegrade.internal.checks`); `ssegrade.preview._text` puts the decision into words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from returns.result import Result

from ssegrade.internal.checks import Check, preview_order, preview_precedence, spec
from ssegrade.internal.effects import ScriptResult
from ssegrade.protocol._difficulty import Level, allowed

__all__ = [
    "CheckLine",
    "CheckStatus",
    "Headline",
    "PreviewReport",
    "PreviewResult",
    "check_lines",
    "failed_check",
    "failed_result",
    "headline",
    "task_has",
    "withheld",
]

CheckStatus = Literal["passed", "FAILED", "not run"]
"""How one enabled check's line ends."""

Headline = Literal[
    "failed", "every_check_passed", "every_check_that_ran_passed", "no_checks_ran", "internal_error"
]
"""Which headline the text opens with; `internal_error` is the one fixed sentence alone."""


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


@dataclass(frozen=True, slots=True)
class CheckLine:
    """The line of one enabled check: its status and the detail in parentheses, if any."""

    check: Check
    status: CheckStatus
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class PreviewResult:
    """What `test_patch` found and the text that says it.

    `checks` has one line per check the level enables, in run order; `withheld` names the
    checks it does not, in run order; `failed` is the failed check the headline and the log
    speak of. The text is the whole of what the agent reads.
    """

    headline: Headline
    text: str
    checks: tuple[CheckLine, ...] = ()
    withheld: tuple[Check, ...] = ()
    failed: Check | None = None

    @property
    def passed(self) -> bool:
        """Every check that ran passed (none ran counts too): `test-patch` exits 0."""
        return self.headline not in ("failed", "internal_error")


def task_has(report: PreviewReport, check: Check) -> bool:
    """Whether the task has `check` (PoCs only when it names some)."""
    if check == "poc" and report.poc_total == 0:
        return False
    return check in report.has


def _result(report: PreviewReport, check: Check) -> ScriptResult | None:
    """The run of a single-run check (`None`: it did not run)."""
    match check:
        case "build":
            return report.build
        case "intent_test":
            return report.intent
        case _:
            return report.functional


def _failed(result: ScriptResult | None) -> bool:
    return result is not None and not result.passed


def _line(report: PreviewReport, check: Check) -> CheckLine:
    """The status and detail of one enabled check's line."""
    if not task_has(report, check):
        return CheckLine(check, "not run", "the task has none")
    if check != "build" and _failed(report.build):
        return CheckLine(check, "not run", "the build failed")
    if check == "poc":
        if not report.pocs:
            return CheckLine(check, "not run")
        passed = sum(result.passed for result in report.pocs)
        if passed < len(report.pocs):
            detail = f"passed {passed} of {report.poc_total}; stopped at the first that still "
            return CheckLine(check, "FAILED", detail + "triggers the bug")
        return CheckLine(check, "passed", f"{passed} of {report.poc_total}")
    result = _result(report, check)
    if result is not None:
        return CheckLine(check, "passed" if result.passed else "FAILED")
    intent = spec("intent_test")
    if (
        check == "function_test"
        and allowed(report.level, intent.action)
        and task_has(report, intent.name)
        and report.intent is not None
        and report.intent.passed
    ):
        return CheckLine(check, "not run", "covered by the intent tests")
    return CheckLine(check, "not run")


def check_lines(report: PreviewReport) -> tuple[CheckLine, ...]:
    """One line per check the level enables, in run order.

    >>> from ssegrade.protocol._difficulty import LEVELS
    >>> [(line.check, line.status) for line in check_lines(PreviewReport(LEVELS[3],
    ...     frozenset({"build"}), build=ScriptResult(0)))]
    [('build', 'passed')]
    """
    return tuple(
        _line(report, check.name)
        for check in preview_order()
        if allowed(report.level, check.action)
    )


def withheld(level: Level) -> tuple[Check, ...]:
    """The checks the level withholds, in run order.

    >>> from ssegrade.protocol._difficulty import LEVELS
    >>> withheld(LEVELS[2])
    ('poc', 'intent_test')
    """
    return tuple(check.name for check in preview_order() if not allowed(level, check.action))


def failed_check(report: PreviewReport) -> Check | None:
    """The failed check the headline and the log speak of: the first in the precedence.

    Only checks the level enables count.

    >>> from ssegrade.protocol._difficulty import LEVELS
    >>> failed_check(PreviewReport(LEVELS[0], frozenset({"build", "function_test"}),
    ...     build=ScriptResult(0), functional=ScriptResult(2)))
    'function_test'
    """
    for check in preview_precedence():
        if allowed(report.level, check.action) and _line(report, check.name).status == "FAILED":
            return check.name
    return None


def failed_result(report: PreviewReport, check: Check) -> ScriptResult:
    """The run whose log the text shows for a failed check (the first failed PoC's)."""
    if check == "poc":
        return next(result for result in report.pocs if not result.passed)
    result = _result(report, check)
    if result is None:
        raise ValueError(f"{check} did not run")
    return result


def headline(failed: Check | None, lines: tuple[CheckLine, ...], withheld: bool) -> Headline:
    """The headline: a failure, else whether every check passed, some were withheld, or none
    ran.

    >>> headline(None, (CheckLine("build", "passed"),), withheld=True)
    'every_check_that_ran_passed'
    """
    if failed is not None:
        return "failed"
    if all(line.status == "not run" for line in lines):
        return "no_checks_ran"
    if withheld:
        return "every_check_that_ran_passed"
    return "every_check_passed"
