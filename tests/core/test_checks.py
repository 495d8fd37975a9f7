"""The checks table (`ssegrade.internal.checks`) is the one source of what the core says about a
check.

Three kinds of test: the table says what SPEC §3, §9, §10 and §11 say (expectations written
here by hand); changing a row of the table changes the verdict, the grading order and the
preview accordingly (so they read it, rather than agree with it by chance); and no other
module of the core or the interpreters writes a check's words again.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Success

from ssegrade.internal import checks
from ssegrade.internal.checks import CHECKS, CheckSpec, grading_order, spec, spec_of_action
from ssegrade.internal.effects import Archive, Bench, Effect, Prepared, PrepareGrading, ScriptResult
from ssegrade.internal.program import GradeOptions, grade
from ssegrade.internal.result import PatchResult
from ssegrade.internal.run import run
from ssegrade.internal.task import Files, Scripts, Task
from ssegrade.internal.verdict import CheckOutcome, Outcomes, decide
from ssegrade.preview import preview
from ssegrade.protocol import ACTIONS, LEVELS
from ssegrade.report import Excluded, Row, TaskRow, TaskRun

FULL = Task(
    id="t",
    scripts=Scripts(build="build.sh", run="run.sh", test="test.sh"),
    files=Files(poc=("pocs/a", "pocs/b"), future_test="future.diff"),
)

TOP = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------------- the SPEC


def test_the_table_says_what_the_spec_says() -> None:
    """Names, actions, failure messages, fields, the three orders and the labels (SPEC §3,
    §9, §10, §11), written here from the SPEC."""
    assert [c.name for c in grading_order()] == ["build", "poc", "function_test", "intent_test"]
    assert [c.action for c in CHECKS] == ["build", "run_poc", "function_test", "intent_test"]
    assert [c.failure_message("/ssebench/pocs/p") for c in CHECKS] == [
        "Build failed",
        "PoC failed: /ssebench/pocs/p",
        "Function test failed",
        "Intent test failed",
    ]
    assert [c.fields for c in CHECKS] == [
        ("build_success",),
        ("pov_passed", "pov_total"),
        ("func_test_success",),
        ("intent_test_success",),
    ]
    assert [c.name for c in checks.preview_order()] == [
        "build",
        "poc",
        "intent_test",
        "function_test",
    ]
    assert [c.name for c in checks.preview_precedence()] == [
        "build",
        "function_test",
        "poc",
        "intent_test",
    ]
    assert [c.text for c in CHECKS] == ["build", "PoCs", "functional tests", "intent tests"]
    assert [c.label for c in CHECKS] == ["build", "poc", "func", "intent"]
    assert [c.name for c in CHECKS if c.proves_fix] == ["poc", "intent_test"]
    for check in CHECKS:
        assert spec(check.name) is check
        assert spec_of_action(check.action) is check


def test_the_levels_are_the_gate_column() -> None:
    """The difficulty levels open what SPEC §9's table opens, and that is each check's gate."""
    spec_table = {
        0: {"build", "function_test", "run_poc", "intent_test"},
        1: {"build", "function_test", "run_poc"},
        2: {"build", "function_test"},
        3: {"build"},
        4: set(),
    }
    assert {level.number: set(level.actions) for level in LEVELS} == spec_table
    for level in LEVELS:
        assert level.actions == {c.action for c in CHECKS if level.number <= c.gate}
    assert tuple(c.action for c in grading_order()) == ACTIONS


def test_the_fields_and_labels_exist_where_they_are_read() -> None:
    """Each check's fields are `patch_result`'s, in its order; each label is a field of every
    report document that has a column per check."""
    fields = list(PatchResult.model_fields)
    named = [field for check in CHECKS for field in check.fields]
    assert named == [field for field in fields if field in named]
    for model in (Row, TaskRow, TaskRun, Excluded):
        assert {check.label for check in CHECKS} <= set(model.model_fields), model


# ---------------------------------------------------------------------------- the table is read


@contextmanager
def patched(table: tuple[CheckSpec, ...]) -> Iterator[None]:
    """The core runs with `table` as its checks table."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checks, "CHECKS", table)
        yield


def _renamed(draw: st.DrawFn, check: CheckSpec) -> CheckSpec:
    word = draw(st.text("abcdefghij ", min_size=1, max_size=12).map(str.strip).filter(bool))
    failure = "{poc} " + word if check.name == "poc" else word
    return dataclasses.replace(check, failure=failure, text=word, reason=f"{word}.")


@st.composite
def tables(draw: st.DrawFn) -> tuple[CheckSpec, ...]:
    """The table with its rows in any grading order, any run order and precedence of
    `test_patch` (the build first in both: nothing runs before it), and new words."""
    rows = [_renamed(draw, check) for check in draw(st.permutations(CHECKS))]
    others = [check for check in rows if check.name != "build"]
    runs = ["build", *(c.name for c in draw(st.permutations(others)))]
    precedence = ["build", *(c.name for c in draw(st.permutations(others)))]
    return tuple(
        dataclasses.replace(
            row, preview_rank=runs.index(row.name), precedence_rank=precedence.index(row.name)
        )
        for row in rows
    )


@given(tables(), st.data())
def test_the_verdict_says_the_tables_failure(table: tuple[CheckSpec, ...], data: Any) -> None:
    """Property: the `error_msg` of a failed check is its failure in the table."""
    failing = data.draw(st.sampled_from(table))
    runs = (CheckOutcome(failing.name, False, "log", "/t/p" if failing.name == "poc" else None),)
    pocs = ("/t/p",) if failing.name == "poc" else ()
    with patched(table):
        result = decide(Outcomes(has=frozenset({failing.name}), pocs=pocs, runs=runs))
    assert result.error_msg == failing.failure.format(poc="/t/p")


@given(tables())
def test_grading_runs_the_checks_in_the_tables_order(table: tuple[CheckSpec, ...]) -> None:
    """Property: the grading program runs the checks in the table's order."""
    asked: list[str] = []

    def answer(effect: Effect[Any]) -> object:
        if isinstance(effect, PrepareGrading):
            return Success(Prepared(patch_bytes=1, empty=False))
        if isinstance(effect, Archive):
            return Success(None)
        if isinstance(effect, Bench):
            asked.append(effect.action)
            return ScriptResult(0)
        return None

    with patched(table):
        run(grade(GradeOptions(task=FULL, folder="/t")), answer)
    expected = [c.action for c in table for _ in (FULL.files.poc if c.name == "poc" else (0,))]
    assert asked == expected


@given(tables())
def test_the_preview_follows_the_tables_order_and_words(table: tuple[CheckSpec, ...]) -> None:
    """Property: `test_patch` runs and lists the checks in the table's run order (the
    functional tests only when the intent tests did not pass before them), names them with
    the table's words, and heads a failure with the first failed check in its precedence."""
    asked: list[Bench] = []

    def answer(effect: Effect[Any]) -> object:
        assert isinstance(effect, Bench)
        asked.append(effect)
        return ScriptResult(0 if effect.action in ("build", "intent_test") else 1)

    with patched(table):
        found = run(preview(LEVELS[0], frozenset(c.name for c in table), ("p1", "p2")), answer)
    order = sorted(table, key=lambda c: c.preview_rank)
    intent_first = [c.name for c in order].index("intent_test") < [c.name for c in order].index(
        "function_test"
    )
    ran = [c for c in order if not (c.name == "function_test" and intent_first)]
    assert [bench.action for bench in asked] == [c.action for c in ran]  # the first PoC fails
    assert [line.check for line in found.checks] == [c.name for c in order]
    for line, check in zip(found.text.split("\n\n")[1].split("\n")[1:], order, strict=True):
        assert line.startswith(f"- {check.text}: ")
    failing = [c for c in ran if c.name in ("poc", "function_test")]
    failed = next(c for c in sorted(table, key=lambda c: c.precedence_rank) if c in failing)
    assert found.failed == failed.name
    assert found.text.split("\n")[0] == f"test_patch result: FAILED. {failed.reason}"


# ---------------------------------------------------------------------------- written once


def _strings(path: Path) -> Iterator[tuple[int, str]]:
    """The string constants of a module, its docstrings left out."""
    tree = ast.parse(path.read_text("utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            docstrings.add(id(node.value))  # attribute docstrings
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            yield node.lineno, node.value


def test_no_other_module_writes_a_checks_words() -> None:
    """Every failure message, `test_patch` name and reason and report title of a check is
    written in `ssegrade/internal/checks.py` only (no other string of the code is one of them):
    the other modules read it from there. Sentences that speak of checks in passing ("covered
    by the intent tests") are the modules' own."""
    words = {
        word
        for check in CHECKS
        for word in (
            check.failure.split("{")[0].strip(),
            check.text,
            check.reason,
            check.title,
            check.short_title,
        )
        if word != check.name  # the name of a check is the vocabulary itself
    }
    found = [
        f"{path.relative_to(TOP)}:{line}: {text!r}"
        for folder in ("ssegrade", "interpreters")
        for path in sorted((TOP / folder).rglob("*.py"))
        if path != TOP / "ssegrade" / "internal" / "checks.py"
        for line, text in _strings(path)
        if text.strip() in words
    ]
    assert found == []
