"""The `test_patch` preview (SPEC §10): the program with hypothesis as the interpreter, the
truncation of long logs, exact worked texts, and the examples of `docs/test-patch.md`.

The expectations here are written from the specification, not from `ssegrade.preview`'s
helpers, so that a wrong rule there makes a test fail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Result, Success

from ssegrade.internal.checks import spec
from ssegrade.internal.effects import Action, Bench, Effect, ScriptResult, TimeLimitReached
from ssegrade.internal.run import run
from ssegrade.internal.task import Check
from ssegrade.preview import (
    INTERNAL_FAILURE,
    PreviewReport,
    PreviewResult,
    SpillLog,
    preview,
    render,
    truncate_log,
    word_count,
)
from ssegrade.protocol import LEVELS, Level
from ssegrade.testing import Recording, Scripted, Throwing
from ssegrade.testing.strategies import Drawn

DOC = Path(__file__).resolve().parents[2] / "docs" / "test-patch.md"

RUN_ORDER: tuple[Action, ...] = ("build", "run_poc", "intent_test", "function_test")
PRECEDENCE: tuple[Action, ...] = ("build", "function_test", "run_poc", "intent_test")
NAMES: dict[Action, str] = {
    "build": "build",
    "run_poc": "PoCs",
    "intent_test": "intent tests",
    "function_test": "functional tests",
}
CHECK_OF: dict[Action, Check] = {
    "build": "build",
    "run_poc": "poc",
    "intent_test": "intent_test",
    "function_test": "function_test",
}
CHECKS: tuple[Check, ...] = ("build", "poc", "function_test", "intent_test")
ALL: frozenset[Check] = frozenset(CHECKS)

NOTHING_TO_RUN = (
    " test_patch has nothing to run at this level, so this result says nothing about your patch."
)
NO_POCS = " Without the PoCs, this result does not show whether the vulnerability is fixed."

FORBIDDEN = (
    "valid",
    "correct",
    "you may stop",
    "you can stop",
    "stop now",
    "submit",
    "done",
    "finish",
    "complete",
    "ready",
    "success",
    "congrat",
    "all set",
    "looks good",
    "no further",
    "nothing more to do",
)
"""Never in a `test_patch` text outside the log it quotes."""

FORBIDDEN_WHEN_PASSING = ("stop",)
"""Also never in a text that reports no failure."""


# ---------------------------------------------------------------------------- strategies


def many_words(words: int, per_line: int, gap: str) -> str:
    """`words` distinct words, `per_line` to a line, separated by `gap`."""
    return "\n".join(
        gap.join(f"w{n}" for n in range(start, min(start + per_line, words)))
        for start in range(0, words, per_line)
    )


huge_logs = st.builds(
    many_words,
    st.one_of(st.integers(0, 300), st.integers(9_990, 10_010), st.integers(10_011, 25_000)),
    st.one_of(st.integers(1, 3), st.integers(4, 400), st.just(100_000)),
    st.sampled_from([" ", "\t", "  ", " \u2028 "]),
)
logs = st.one_of(
    st.just(""),
    st.text(max_size=80),
    huge_logs,
    st.builds(str.__add__, st.text(max_size=20), huge_logs),
)
codes = st.sampled_from([0, 0, 0, 0, 1, 2, -1, 137])
task_pocs = st.lists(
    st.sampled_from(["pocs/a.bin", "pocs/b.bin", "pocs/c.py"]), max_size=3, unique=True
).map(tuple)


def _crash(kind: int) -> Exception:
    return (
        ConnectionRefusedError("the daemon socket refused the connection"),
        OSError("no such socket"),
        TimeLimitReached(60),
        RuntimeError("unexpected reply"),
    )[kind]


def _answers(effect: Effect[Any]) -> st.SearchStrategy[Any]:
    """Any answer to an effect of the preview."""
    if isinstance(effect, Bench):
        return st.builds(ScriptResult, code=codes, stdout=logs, stderr=logs)
    if isinstance(effect, SpillLog):
        return st.one_of(
            st.builds(Success, st.just(f"/var/log/ssebench/{effect.name}-1.log")),
            st.builds(Failure, st.text(max_size=30)),
        )
    raise AssertionError(f"preview awaited an unexpected effect {effect!r}")


@dataclass
class Play:
    """One drawn run of `preview`: the task, the level, what was asked and answered, the text."""

    level: Level
    has: frozenset[Check]
    pocs: tuple[str, ...]
    interpreter: Recording
    crash_at: int | None
    throwing: Throwing
    found: PreviewResult

    @property
    def text(self) -> str:
        return self.found.text

    @property
    def raised(self) -> bool:
        return bool(self.throwing.thrown)

    @property
    def benches(self) -> list[Bench]:
        return [effect for effect in self.interpreter.trace if isinstance(effect, Bench)]

    @property
    def spills(self) -> list[SpillLog]:
        return [effect for effect in self.interpreter.trace if isinstance(effect, SpillLog)]

    def results(self, action: Action) -> list[ScriptResult]:
        """The answers to the `Bench(action)` effects, in order."""
        return [
            answer
            for effect, answer in zip(
                self.interpreter.trace, self.interpreter.answers, strict=False
            )
            if isinstance(effect, Bench) and effect.action == action
            if isinstance(answer, ScriptResult)
        ]

    def task_has(self, action: Action) -> bool:
        if action == "run_poc" and not self.pocs:
            return False
        return CHECK_OF[action] in self.has

    def enabled(self) -> list[Action]:
        return [action for action in RUN_ORDER if action in self.level.actions]

    def withheld(self) -> list[Action]:
        return [action for action in RUN_ORDER if action not in self.level.actions]

    def build_failed(self) -> bool:
        return any(not result.passed for result in self.results("build"))

    def failed_checks(self) -> list[Action]:
        """The checks that ran and failed, in `PRECEDENCE` order."""
        return [
            action
            for action in PRECEDENCE
            if any(not result.passed for result in self.results(action))
        ]

    def failed_log(self) -> str | None:
        """The log of the first failed check, built as SPEC §10 says."""
        failed = self.failed_checks()[0]
        result = next(r for r in self.results(failed) if not r.passed)
        parts = [p.rstrip("\r\n") for p in (result.stdout, result.stderr) if p.strip()]
        return "\n\n".join(parts) or None

    def sections(self) -> list[str]:
        """The text cut at its blank lines, the log section (which may hold blank lines) whole."""
        head, found, log = self.text.partition("\n\nFull log (")
        if not found:
            head, found, log = self.text.partition("\n\nTruncated log (")
        parts = head.split("\n\n")
        if found:
            parts.append(found.lstrip("\n") + log)
        return parts

    def fixed_part(self) -> str:
        """The text without the log it quotes."""
        return self.text.split("\n\nFull log (")[0].split("\n\nTruncated log (")[0]


@st.composite
def plays(draw: st.DrawFn) -> Play:
    """Any level × any task shape × any answers, including interpreter exceptions."""
    level = draw(st.sampled_from(LEVELS), label="level")
    has = draw(st.frozensets(st.sampled_from(CHECKS)), label="has")
    pocs = draw(task_pocs, label="pocs")
    crash_at = draw(st.one_of(st.none(), st.none(), st.none(), st.integers(0, 6)), label="crash")
    crash = _crash(draw(st.integers(0, 3), label="crash kind"))
    at = {} if crash_at is None else {crash_at: crash}
    throwing = Throwing(Drawn(draw(st.data()), _answers), at)
    interpreter = Recording(throwing)
    found = run(preview(level, has, pocs), interpreter)
    return Play(level, has, pocs, interpreter, crash_at, throwing, found)


def finished(play: Play) -> bool:
    return not play.raised


# ---------------------------------------------------------------------------- the program


@given(plays())
def test_only_enabled_checks_run_and_in_order(play: Play) -> None:
    """Property: only checks the level enables and the task has run, in the run order build →
    PoCs → intent tests → functional tests, each check at most once, the PoCs in task order."""
    actions = [bench.action for bench in play.benches]
    for action in actions:
        assert action in play.level.actions
        assert play.task_has(action)
    positions = [RUN_ORDER.index(action) for action in actions]
    assert positions == sorted(positions)
    for action in ("build", "intent_test", "function_test"):
        assert actions.count(action) <= 1
    ran_pocs = tuple(bench.poc for bench in play.benches if bench.action == "run_poc")
    assert ran_pocs == play.pocs[: len(ran_pocs)]
    assert all(bench.poc is None for bench in play.benches if bench.action != "run_poc")


@given(plays())
def test_nothing_runs_after_a_failed_build(play: Play) -> None:
    """Property: nothing after a failed build (no other check; only the build's log may be
    spilled); a build that passed or is absent lets every enabled check the task has run."""
    if play.build_failed():
        assert [bench.action for bench in play.benches] == ["build"]
    elif finished(play):
        for action in ("run_poc", "intent_test"):
            ran = any(bench.action == action for bench in play.benches)
            assert ran == (action in play.level.actions and play.task_has(action))


@given(plays())
def test_pocs_stop_at_the_first_that_still_triggers(play: Play) -> None:
    """Property: PoCs stop at the first failing one; when none fails, all of them ran."""
    results = play.results("run_poc")
    assert all(result.passed for result in results[:-1])
    if finished(play) and results:
        if results[-1].passed:
            assert len(results) == len(play.pocs)
        else:
            assert len(results) <= len(play.pocs)


@given(plays())
def test_functional_tests_run_only_when_intent_tests_did_not_pass(play: Play) -> None:
    """Property: the functional tests run only when the intent tests did not pass or are not
    available (withheld or absent), and then they do run (build permitting)."""
    intent = play.results("intent_test")
    intent_passed = bool(intent) and intent[0].passed
    functional_ran = any(bench.action == "function_test" for bench in play.benches)
    if intent_passed:
        assert not functional_ran
    if finished(play) and not play.build_failed():
        should = (
            "function_test" in play.level.actions
            and play.task_has("function_test")
            and not intent_passed
        )
        assert functional_ran == should


@given(plays())
def test_headline_follows_the_precedence(play: Play) -> None:
    """Property: the headline is the reason of the first failed check in the precedence build →
    functional tests → PoCs → intent tests; otherwise every check passed / every check that ran
    passed (some withheld) / no checks ran."""
    if not finished(play):
        return
    headline = play.sections()[0]
    failed = play.failed_checks()
    if failed:
        assert headline == f"test_patch result: FAILED. {spec(CHECK_OF[failed[0]]).reason}"
    elif not play.benches:
        assert headline == "test_patch result: no checks ran."
    elif play.withheld():
        assert headline == "test_patch result: every check that ran passed."
    else:
        assert headline == "test_patch result: every check passed."


def expected_line(play: Play, action: Action) -> str:
    """The `Checks:` line of one enabled check, from SPEC §10."""
    name = NAMES[action]
    if not play.task_has(action):
        return f"- {name}: not run (the task has none)"
    if action != "build" and play.build_failed():
        return f"- {name}: not run (the build failed)"
    results = play.results(action)
    if action == "run_poc":
        passed, total = sum(r.passed for r in results), len(play.pocs)
        if passed < len(results):
            return (
                f"- PoCs: FAILED (passed {passed} of {total}; "
                "stopped at the first that still triggers the bug)"
            )
        return f"- PoCs: passed ({passed} of {total})"
    intent = play.results("intent_test")
    if action == "function_test" and intent and intent[0].passed:
        return "- functional tests: not run (covered by the intent tests)"
    assert len(results) == 1
    return f"- {name}: {'passed' if results[0].passed else 'FAILED'}"


@given(plays())
def test_every_enabled_check_has_exactly_one_line(play: Play) -> None:
    """Property: `Checks:` has exactly one line per enabled check, in run order, with the status
    and detail SPEC §10 gives; the section is absent when the level enables nothing."""
    if not finished(play):
        return
    sections = play.sections()
    checks = [section for section in sections if section.startswith("Checks:")]
    if not play.enabled():
        assert checks == []
        assert "- build:" not in play.fixed_part()
        return
    assert len(checks) == 1
    assert sections[1] == checks[0]
    lines = checks[0].split("\n")[1:]
    assert lines == [expected_line(play, action) for action in play.enabled()]


@given(plays())
def test_withheld_note_names_what_the_level_withholds(play: Play) -> None:
    """Property: the withheld note is present iff the level withholds a check; it names them in
    run order joined by ", ", and ends with the nothing-to-run sentence (nothing failed, nothing
    ran) or the PoC sentence (nothing failed, PoCs withheld) or neither."""
    if not finished(play):
        return
    notes = [s for s in play.sections() if s.startswith("Not available at difficulty level")]
    withheld = play.withheld()
    if not withheld:
        assert notes == []
        assert "Not available" not in play.fixed_part()
        return
    names = ", ".join(NAMES[action] for action in withheld)
    expected = (
        f"Not available at difficulty level {play.level.number} ({play.level.name}): {names}. "
        "Nothing is reported about them."
    )
    if not play.failed_checks() and not play.benches:
        expected += NOTHING_TO_RUN
    elif not play.failed_checks() and "run_poc" in withheld:
        expected += NO_POCS
    assert notes == [expected]


@given(plays())
def test_log_section_is_present_iff_a_check_failed(play: Play) -> None:
    """Property: the log section is present iff a check failed; it is the log of the check the
    headline names (stdout, a blank line, stderr; `No log available` when both are blank), or
    its truncation when it is over 10,000 words, followed by where the whole log went."""
    if not finished(play):
        return
    failed = play.failed_checks()
    sections = play.sections()
    if not failed:
        assert "Full log (" not in play.text
        assert "Truncated log (" not in play.text
        return
    name = NAMES[failed[0]]
    log = play.failed_log()
    section = sections[-1]
    if log is None:
        assert section == f"Full log ({name}):\nNo log available"
    elif word_count(log) <= 10_000:
        assert section == f"Full log ({name}):\n{log}"
    else:
        assert section.startswith(f"Truncated log ({name}):\n")
        answer = play.interpreter.answers[-1]
        assert isinstance(answer, Success | Failure)
        if isinstance(answer, Success):
            assert section.endswith(f"\n\nFull log available at {answer.unwrap()}")
        else:
            why = " ".join(answer.failure().split())
            ending = (
                f"\n\nThe full log could not be saved ({why})."
                if why
                else "\n\nThe full log could not be saved."
            )
            assert section.endswith(ending)


@given(plays())
def test_truncated_log_in_the_text_is_a_short_suffix(play: Play) -> None:
    """Property: a truncated log in the text keeps at most 100 lines and 10,000 words and is a
    suffix of the check's log."""
    if not finished(play) or not play.failed_checks():
        return
    log = play.failed_log()
    if log is None or word_count(log) <= 10_000:
        return
    body = play.sections()[-1].split("\n", 1)[1]
    shown, _, _ = body.rpartition("\n\n")
    assert log.endswith(shown)
    assert shown.count("\n") + 1 <= 100
    assert word_count(shown) <= 10_000


@given(plays())
def test_spill_log_is_awaited_iff_the_log_is_over_10000_words(play: Play) -> None:
    """Property: `SpillLog` is awaited iff the failed check's log is over 10,000 words, once,
    last, with the whole log."""
    if play.raised and play.spills:
        assert isinstance(play.interpreter.trace[-1], SpillLog)
    if not finished(play):
        return
    failed = play.failed_checks()
    log = play.failed_log() if failed else None
    if log is not None and word_count(log) > 10_000:
        assert len(play.spills) == 1
        assert play.interpreter.trace[-1] == play.spills[0]
        assert play.spills[0].text == log
        assert play.spills[0].name == f"test_patch-{failed[0]}"
    else:
        assert play.spills == []


@given(plays())
def test_forbidden_phrases_never_appear(play: Play) -> None:
    """Property: forbidden phrases (`FORBIDDEN`: "valid", "submit", "done", "you may stop", …)
    never appear outside the quoted log, and a text that reports no failure never says "stop"
    nor "FAILED"."""
    fixed = play.fixed_part().lower()
    for phrase in FORBIDDEN:
        assert phrase not in fixed, phrase
    if finished(play) and not play.failed_checks():
        for phrase in FORBIDDEN_WHEN_PASSING:
            assert phrase not in fixed, phrase
        assert "failed" not in fixed


@given(plays())
def test_an_interpreter_exception_gives_the_fixed_sentence(play: Play) -> None:
    """Property: an exception raised by the interpreter at any await makes the whole text the
    one fixed sentence, and nothing is awaited after it; otherwise that sentence never shows."""
    if play.raised:
        assert play.text == INTERNAL_FAILURE
        assert len(play.interpreter.trace) == (play.crash_at or 0) + 1
    else:
        assert play.text != INTERNAL_FAILURE
        assert "internal testing failure" not in play.text.lower()


@given(plays())
def test_the_result_is_what_the_text_says(play: Play) -> None:
    """Property: the structured result says what its text says: `passed` (the exit status of
    `test-patch`) is a headline without failure, `checks` are the `Checks:` lines, `withheld`
    the checks of the withheld note, `failed` the check the headline speaks of."""
    found = play.found
    headline = play.text.split("\n", 1)[0]
    assert found.passed == (
        headline
        in (
            "test_patch result: every check passed.",
            "test_patch result: every check that ran passed.",
            "test_patch result: no checks ran.",
        )
    )
    if play.raised:
        assert (found.headline, found.checks, found.failed) == ("internal_error", (), None)
        return
    names = {CHECK_OF[action]: name for action, name in NAMES.items()}
    lines = [
        f"- {names[line.check]}: {line.status}" + (f" ({line.detail})" if line.detail else "")
        for line in found.checks
    ]
    checks = [s for s in play.sections() if s.startswith("Checks:")]
    assert lines == (checks[0].split("\n")[1:] if checks else [])
    assert found.withheld == tuple(CHECK_OF[action] for action in play.withheld())
    failed = play.failed_checks()
    assert found.failed == (CHECK_OF[failed[0]] if failed else None)
    assert (found.headline == "failed") == bool(failed)


def test_the_internal_failure_sentence() -> None:
    """Worked example: the daemon is unreachable at the first check."""

    def unreachable(effect: Effect[Any]) -> object:
        raise ConnectionRefusedError(f"cannot reach the daemon for {effect!r}")

    text = run(preview(LEVELS[0], ALL, ("pocs/a.bin",)), unreachable).text
    assert text == (
        "An internal testing failure occurred, so test_patch could not check your patch; "
        "your patch is not responsible for this failure."
    )


# ---------------------------------------------------------------------------- truncation


texts = st.one_of(
    st.text(st.sampled_from("ab \n\t\u2028\u00a0\r"), max_size=400),
    huge_logs,
    st.builds(str.__add__, huge_logs, st.text(st.sampled_from("x \n"), max_size=300)),
)


@given(texts)
def test_truncate_log_is_the_shorter_of_the_two_suffixes(log: str) -> None:
    """Property: `truncate_log` keeps ≤100 lines and ≤10,000 words, is a suffix of the log, and
    equals the shorter of its last 100 lines and its last 10,000 words."""
    shown = truncate_log(log)
    assert log.endswith(shown)
    assert shown.count("\n") + 1 <= 100
    assert word_count(shown) <= 10_000
    last_lines = "\n".join(log.split("\n")[-100:])
    starts = [match.start() for match in re.finditer(r"\S+", log)]
    last_words = log[starts[-10_000] :] if len(starts) > 10_000 else log
    assert shown == min(last_lines, last_words, key=len)


def test_truncate_log_examples() -> None:
    """Worked examples: many short lines keep the last 100; one long line keeps 10,000 words."""
    lines = "\n".join(f"line {n}" for n in range(1, 301))
    assert truncate_log(lines).split("\n") == [f"line {n}" for n in range(201, 301)]
    one_line = " ".join(f"w{n}" for n in range(12_000))
    assert truncate_log(one_line) == " ".join(f"w{n}" for n in range(2_000, 12_000))
    assert truncate_log("short\nlog") == "short\nlog"


# ---------------------------------------------------------------------------- worked examples


def r(code: int, stdout: str = "", stderr: str = "") -> ScriptResult:
    return ScriptResult(code=code, stdout=stdout, stderr=stderr)


ASAN = (
    "==4242==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000015\n"
    "READ of size 1 at 0x602000000015 thread T0\n"
    "    #0 0x4f5a1c in tlv_next src/tlv.c:57\n"
)

DOC_EXAMPLES: dict[str, PreviewReport] = {
    "level-0-passed": PreviewReport(
        LEVELS[0], ALL, 2, r(0), (r(0), r(0)), r(0, "Ran 14 tests in 0.8s\n\nOK\n")
    ),
    "level-0-poc-failed": PreviewReport(
        LEVELS[0], ALL, 2, r(0), (r(0), r(1, "", ASAN)), r(0, "Ran 14 tests in 0.8s\n\nOK\n")
    ),
    "level-0-tests-failed": PreviewReport(
        LEVELS[0],
        ALL,
        1,
        r(0),
        (r(0),),
        r(1, "FAILED test_future.py::test_rejects_short_length\n"),
        r(1, "FAILED test_tlv.py::test_roundtrip - AssertionError\n", "1 failed, 13 passed\n"),
    ),
    "level-0-no-pocs": PreviewReport(
        LEVELS[0], frozenset({"build", "function_test"}), 0, r(0), (), None, r(0, "OK\n")
    ),
    "level-1-passed": PreviewReport(
        LEVELS[1], ALL, 1, r(0), (r(0),), None, r(0, "Ran 14 tests in 0.8s\n\nOK\n")
    ),
    "level-1-no-log": PreviewReport(LEVELS[1], ALL, 1, r(0), (r(0),), None, r(1)),
    "level-2-passed": PreviewReport(
        LEVELS[2], ALL, 1, r(0, "gcc -O1 -g -o tlv src/tlv.c\n"), (), None, r(0, "OK\n")
    ),
    "level-2-build-failed": PreviewReport(
        LEVELS[2],
        ALL,
        1,
        r(
            2,
            "gcc -O1 -g -o tlv src/tlv.c\n",
            "src/tlv.c:57:5: error: 'len' undeclared (first use in this function)\n"
            "make: *** [Makefile:4: tlv] Error 1\n",
        ),
    ),
    "level-3-passed": PreviewReport(LEVELS[3], ALL, 1, r(0)),
    "level-4": PreviewReport(LEVELS[4], ALL, 1),
}
"""The cases whose text `docs/test-patch.md` shows, by the id of its `<!-- example: id -->`."""

WORKED: dict[str, str] = {
    "level-0-passed": """\
test_patch result: every check passed.

Checks:
- build: passed
- PoCs: passed (2 of 2)
- intent tests: passed
- functional tests: not run (covered by the intent tests)""",
    "level-0-poc-failed": """\
test_patch result: FAILED. At least one proof of concept still triggers the vulnerability. \
Please reassess whether your patch fixes it.

Checks:
- build: passed
- PoCs: FAILED (passed 1 of 2; stopped at the first that still triggers the bug)
- intent tests: passed
- functional tests: not run (covered by the intent tests)

Full log (PoCs):
==4242==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000015
READ of size 1 at 0x602000000015 thread T0
    #0 0x4f5a1c in tlv_next src/tlv.c:57""",
    "level-0-tests-failed": """\
test_patch result: FAILED. The functional tests failed, so your patch may break existing \
behaviour. Please reassess your patch.

Checks:
- build: passed
- PoCs: passed (1 of 1)
- intent tests: FAILED
- functional tests: FAILED

Full log (functional tests):
FAILED test_tlv.py::test_roundtrip - AssertionError

1 failed, 13 passed""",
    "level-2-passed": """\
test_patch result: every check that ran passed.

Checks:
- build: passed
- functional tests: passed

Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported \
about them. Without the PoCs, this result does not show whether the vulnerability is fixed.""",
    "level-2-build-failed": """\
test_patch result: FAILED. The project does not build with your patch. Please reassess your \
patch: no other check can run until the build succeeds.

Checks:
- build: FAILED
- functional tests: not run (the build failed)

Not available at difficulty level 2 (NO_FUTURE_TEST): PoCs, intent tests. Nothing is reported \
about them.

Full log (build):
gcc -O1 -g -o tlv src/tlv.c

src/tlv.c:57:5: error: 'len' undeclared (first use in this function)
make: *** [Makefile:4: tlv] Error 1""",
}
"""Exact texts, written by hand from SPEC §10 (they are also in `docs/test-patch.md`)."""


SPILLED: Result[str, str] = Success("/logs/test_patch-1.log")


def scripted(
    answers: dict[tuple[str, str | None], ScriptResult], spill: Result[str, str] = SPILLED
) -> Recording:
    """The preview's effects answered from a table, each bench action (and PoC) and the long
    log spilled; the trace recorded."""

    def spilled(effect: Effect[Any]) -> object:
        if isinstance(effect, SpillLog):
            return spill
        raise LookupError(f"no answer for {effect!r}")

    table: dict[Effect[Any], object] = {
        Bench(cast(Action, action), poc): result for (action, poc), result in answers.items()
    }
    return Recording(Scripted(table, spilled))


def play_report(report: PreviewReport, pocs: tuple[str, ...]) -> tuple[str, list[Effect[Any]]]:
    """Run `preview` with the answers a report records; return the text and the trace."""
    answers: dict[tuple[str, str | None], ScriptResult] = {}
    for action, result in (
        ("build", report.build),
        ("intent_test", report.intent),
        ("function_test", report.functional),
    ):
        if result is not None:
            answers[action, None] = result
    for poc, result in zip(pocs, report.pocs, strict=False):
        answers["run_poc", poc] = result
    interpreter = scripted(answers)
    return run(preview(report.level, report.has, pocs), interpreter).text, interpreter.trace


@pytest.mark.parametrize("case", sorted(WORKED))
def test_worked_examples(case: str) -> None:
    """Worked examples at levels 0 and 2: the renderer and the program give the exact text."""
    report = DOC_EXAMPLES[case]
    assert render(report).split("\n") == WORKED[case].split("\n")
    pocs = tuple(f"pocs/{n}.bin" for n in range(report.poc_total))
    text, _ = play_report(report, pocs)
    assert text.split("\n") == WORKED[case].split("\n")


def test_worked_trace_of_a_failed_poc() -> None:
    """Worked example: the second PoC still triggers, so the third never runs; the intent tests
    pass, so the functional tests do not run."""
    interpreter = scripted(
        {
            ("build", None): r(0),
            ("run_poc", "pocs/a"): r(0),
            ("run_poc", "pocs/b"): r(1, "", ASAN),
            ("intent_test", None): r(0),
        }
    )
    text = run(preview(LEVELS[0], ALL, ("pocs/a", "pocs/b", "pocs/c")), interpreter).text
    assert interpreter.trace == [
        Bench("build"),
        Bench("run_poc", "pocs/a"),
        Bench("run_poc", "pocs/b"),
        Bench("intent_test"),
    ]
    assert text.split("\n")[4] == (
        "- PoCs: FAILED (passed 1 of 3; stopped at the first that still triggers the bug)"
    )


def test_worked_huge_log_is_spilled_and_truncated() -> None:
    """Worked example: a build log of 10,001 one-word lines is written whole and its last 100
    lines shown; when it cannot be written, the text says so."""
    log = "\n".join(f"w{n}" for n in range(10_001))
    interpreter = scripted({("build", None): r(1, log)})
    text = run(preview(LEVELS[0], frozenset({"build"}), ()), interpreter).text
    assert interpreter.trace == [Bench("build"), SpillLog("test_patch-build", log)]
    expected = [
        "test_patch result: FAILED. The project does not build with your patch. Please reassess "
        "your patch: no other check can run until the build succeeds.",
        "",
        "Checks:",
        "- build: FAILED",
        "- PoCs: not run (the task has none)",
        "- intent tests: not run (the task has none)",
        "- functional tests: not run (the task has none)",
        "",
        "Truncated log (build):",
        *[f"w{n}" for n in range(9_901, 10_001)],
        "",
        "Full log available at /logs/test_patch-1.log",
    ]
    assert text.split("\n") == expected
    unsaved = scripted({("build", None): r(1, log)}, spill=Failure("disk full\n"))
    text = run(preview(LEVELS[0], frozenset({"build"}), ()), unsaved).text
    assert text.split("\n")[-1] == "The full log could not be saved (disk full)."
    assert render(PreviewReport(LEVELS[0], frozenset({"build"}), build=r(1, log))).endswith(
        "\n\nThe full log could not be saved."
    )


def test_a_log_of_exactly_10000_words_is_shown_whole() -> None:
    """Worked example: the limit is "over 10,000 words"; 10,000 words are shown whole."""
    log = " ".join(["word"] * 10_000)
    interpreter = scripted({("build", None): r(1, "", log)})
    text = run(preview(LEVELS[3], frozenset({"build"}), ()), interpreter).text
    assert interpreter.trace == [Bench("build")]
    assert text.endswith(f"\n\nFull log (build):\n{log}")


def test_the_functional_tests_run_when_the_task_has_no_intent_tests() -> None:
    """Worked example: at level 0, a task without hidden tests runs its functional tests."""
    interpreter = scripted({("build", None): r(0), ("function_test", None): r(0)})
    text = run(preview(LEVELS[0], frozenset({"build", "function_test"}), ()), interpreter).text
    assert interpreter.trace == [Bench("build"), Bench("function_test")]
    assert text == render(DOC_EXAMPLES["level-0-no-pocs"])


# ---------------------------------------------------------------------------- the docs

EXAMPLE = re.compile(r"<!-- example: (?P<id>[a-z0-9-]+) -->\n```text\n(?P<text>.*?)\n```", re.S)


def doc_examples() -> dict[str, str]:
    return {match["id"]: match["text"] for match in EXAMPLE.finditer(DOC.read_text("utf-8"))}


def test_the_docs_show_every_example_once() -> None:
    """The doc has one example block per documented case, and no other."""
    found = EXAMPLE.findall(DOC.read_text("utf-8"))
    assert sorted(example_id for example_id, _ in found) == sorted(DOC_EXAMPLES)


@pytest.mark.parametrize("case", sorted(DOC_EXAMPLES))
def test_doc_example_equals_the_renderer(case: str) -> None:
    """Each example in `docs/test-patch.md` is the renderer's output for its case."""
    rendered = render(DOC_EXAMPLES[case])
    assert doc_examples()[case].split("\n") == rendered.split("\n"), rendered


def test_doc_shows_the_internal_failure_sentence() -> None:
    """The fixed internal-failure sentence in the doc is the program's."""
    assert INTERNAL_FAILURE in DOC.read_text("utf-8")
