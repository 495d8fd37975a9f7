"""The `test_patch` program (SPEC §10): run the checks the level enables, in the preview's order.

Pure core: a program that awaits the preview's effects (`Bench` on the agent's live tree, and
`SpillLog` for a log over 10,000 words) and returns a `PreviewResult`.
"""

from __future__ import annotations

from dataclasses import replace

from ssegrade.internal.checks import Check, preview_order, spec
from ssegrade.internal.effects import Bench, ScriptResult, SpillLog
from ssegrade.preview._decision import (
    PreviewReport,
    PreviewResult,
    failed_check,
    failed_result,
    task_has,
)
from ssegrade.preview._text import (
    LOG_WORD_LIMIT,
    internal_failure,
    shown_log,
    summarize,
    word_count,
)
from ssegrade.protocol._difficulty import Level, allowed

__all__ = ["preview"]


async def _run_checks(level: Level, has: frozenset[Check], pocs: tuple[str, ...]) -> PreviewReport:
    report = PreviewReport(level, has, len(pocs))
    for check in preview_order():
        if not allowed(level, check.action) or not task_has(report, check.name):
            continue
        match check.name:
            case "build":
                build = await Bench(check.action)
                report = replace(report, build=build)
                if not build.passed:
                    return report  # nothing runs after a failed build
            case "poc":
                ran: list[ScriptResult] = []
                for poc in pocs:
                    ran.append(await Bench(check.action, poc))
                    if not ran[-1].passed:
                        break  # stop at the first that still triggers
                report = replace(report, pocs=tuple(ran))
            case "intent_test":
                report = replace(report, intent=await Bench(check.action))
            case "function_test":
                if report.intent is None or not report.intent.passed:
                    report = replace(report, functional=await Bench(check.action))
    return report


async def preview(level: Level, has: frozenset[Check], pocs: tuple[str, ...]) -> PreviewResult:
    """Run the checks `level` enables on the agent's live tree; return what they found, with
    the `test_patch` text.

    Order (SPEC §10, the checks table's): build (a failure stops everything), then each PoC in
    order (stopping at the first that still triggers, i.e. exits non-zero), then the intent
    tests, then the functional tests unless the intent tests passed. `has` and `pocs` describe
    the task (its checks and its PoC paths, in config order). A failed log over 10,000 words
    is written whole with `SpillLog`. Any exception an interpreter raises gives the internal
    failure (`INTERNAL_FAILURE` alone).

    >>> from ssegrade.protocol._difficulty import LEVELS
    >>> from ssegrade.internal.run import run
    >>> asked = []
    >>> def interpret(effect):
    ...     asked.append(effect)
    ...     return ScriptResult(1 if effect.poc == "pocs/b" else 0, stderr="overflow")
    >>> found = run(preview(LEVELS[0], frozenset({"build", "poc"}), ("pocs/a", "pocs/b", "pocs/c")),
    ...             interpret)
    >>> [(effect.action, effect.poc) for effect in asked]
    [('build', None), ('run_poc', 'pocs/a'), ('run_poc', 'pocs/b')]
    >>> found.passed, found.failed
    (False, 'poc')
    >>> found.text.splitlines()[4]
    '- PoCs: FAILED (passed 1 of 3; stopped at the first that still triggers the bug)'
    """
    try:
        report = await _run_checks(level, has, pocs)
        failed = failed_check(report)
        if failed is not None:
            log = shown_log(failed_result(report, failed))
            if log is not None and word_count(log) > LOG_WORD_LIMIT:
                name = f"test_patch-{spec(failed).action}"
                report = replace(report, spill=await SpillLog(name, log))
        return summarize(report)
    except Exception:  # noqa: BLE001 - whatever broke, the agent gets the one fixed sentence
        return internal_failure()
