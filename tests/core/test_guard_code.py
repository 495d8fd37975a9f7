"""The guard reads code as code: comments can neither hide a call nor make one (property),
the guard degrades to its line rules with a note when the parsers are missing, and a
`guard.json` written before flags said how sure they are still reads."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ssegrade import Task
from ssegrade.guard import GuardReport, guard, guard_report
from tests.support.guardkit import Edit, make_patch

TASK = Task(id="t", sanitizer="address")
CALLS = st.sampled_from(
    [
        ("signal(SIGSEGV, h);", "crash-handler"),
        ("bsd_signal(11, h);", "crash-handler"),
        ("syscall(SYS_rt_sigaction, SIGBUS, &sa, 0, 8);", "crash-handler"),
        ("__sanitizer_set_death_callback(done);", "sanitizer"),
        ("__lsan_disable();", "sanitizer"),
    ]
)
_TOKENS = re.compile(r"\w+|[^\w\s]")
comments = st.text(st.characters(codec="ascii", exclude_characters="*/\0"), max_size=12)


def _kinds(path: str, lines: tuple[bytes, ...]) -> set[str]:
    return {f.kind for f in guard(make_patch([Edit(path, (), lines)]), TASK)}


@given(CALLS, st.lists(comments, min_size=1, max_size=8), st.randoms(use_true_random=False))
def test_comments_between_tokens_never_hide_a_call(
    call: tuple[str, str], notes: list[str], rng: random.Random
) -> None:
    line, kind = call
    tokens = _TOKENS.findall(line)
    out = []
    for token in tokens:
        out.append(token)
        if rng.random() < 0.5:
            out.append(f"/*{rng.choice(notes)}*/")
    code = "void f(void) {\n    /**/ " + " ".join(out) + "\n}"
    assert kind in _kinds("src/x.c", tuple(code.encode().split(b"\n")))


@given(CALLS, st.sampled_from(["// ", "/* "]))
def test_a_call_in_a_comment_is_no_call(call: tuple[str, str], opener: str) -> None:
    line, kind = call
    closer = " */" if opener == "/* " else ""
    code = f"void f(void) {{\n    {opener}{line}{closer}\n}}"
    assert kind not in _kinds("src/x.c", tuple(code.encode().split(b"\n")))


def test_without_the_parsers_the_guard_reads_lines_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("ssegrade.guard._reading.available", lambda: False)
    monkeypatch.setattr("ssegrade.guard._check.available", lambda: False)
    patch = make_patch([Edit("src/x.c", (), (b"    signal(SIGSEGV, h);",))])
    report = guard_report(patch, TASK, None)
    assert "crash-handler" in report.kinds
    assert any("parsers" in note for note in report.notes)


def test_an_older_guard_json_still_reads() -> None:
    flag = b'{"kind":"tests","paths":["a_test.go"],"why":"x"}'
    old = b'{"version":1,"checked":true,"flags":[' + flag + b'],"observed":null}'
    report = GuardReport.model_validate_json(old)
    (read,) = report.flags
    assert (read.confidence, read.where, report.notes) == ("pattern", None, ())


def test_the_checks_record_says_how_sure_each_flag_is_and_where() -> None:
    from interpreters.real.resultsfolder.writer import guard_record

    patch = make_patch([Edit("src/x.c", (), (b"void f(void) { signal(SIGSEGV, h); }",))])
    record = guard_record(guard_report(patch, TASK, None), "/results/guard.json")
    assert record["flags"] == ["crash-handler"]
    assert record["seen"] == [
        {"kind": "crash-handler", "confidence": "pattern", "where": "src/x.c:1"}
    ]


def test_a_hook_in_a_test_harness_object_is_no_evidence() -> None:
    """Fuzz and test harnesses set their own sanitizer options: a project's own, not a cheat."""
    from ssegrade.guard import GuardFacts, ObjectScan

    hooks = (("__lsan_default_options", "build/fuzz/fuzz_parse.o"),)
    facts = GuardFacts(objects=ObjectScan(3, (("address", "build/a.o"),), hooks=hooks))
    assert guard(b"", TASK, facts) == ()
    cheat = (("__asan_default_options", "build/src/main.o"),)
    facts = GuardFacts(objects=ObjectScan(3, (("address", "build/a.o"),), hooks=cheat))
    assert [(f.kind, f.confidence) for f in guard(b"", TASK, facts)] == [("sanitizer", "evidence")]


def test_a_rust_regression_test_beside_the_fix_is_not_the_fix(tmp_path: Path) -> None:
    """Rust keeps tests in the file they test: a `#[cfg(test)]` module holding the PoC's bytes
    and catching its panic is a regression test, not a catcher nor a special case."""
    from tests.support.guardkit import CASES, case_facts, case_patch, load_case

    case = load_case(CASES / "fix_rust_regression_test.case")
    assert guard(case_patch(case, tmp_path / "repo"), TASK, case_facts(case)) == ()
