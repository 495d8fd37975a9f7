"""Which flags count against a run, in the guard and in the report: evidence and the kinds that
change what a check sees count; touches of build, test or vendored files that no check runs
are listed, not counted, in every reading (unflagged, `--exclude-flagged`, `--flagged-as
failed`), and the report's fast reading agrees with the model's."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from interpreters.cli.report import report
from ssegrade import Task
from ssegrade.guard import KINDS, Flag, flag_kinds, guard, listed_kinds
from ssegrade.guard._counting import ALWAYS, counts
from ssegrade.internal.result import PatchResult
from ssegrade.internal.task import Files, Scripts
from ssegrade.report import RunRecord, Selection, exclude_flagged, flagged_as_failed, row_guard
from ssegrade.report._flags import guard_flags, guard_listed
from tests.support.guardkit import CASES, Case, case_facts, case_patch, load_case
from tests.support.runfolders import summary, write_run

flags = st.fixed_dictionaries(
    {"kind": st.sampled_from(KINDS), "confidence": st.sampled_from(["pattern", "evidence"])},
    optional={"counts": st.booleans()},
)
docs = st.one_of(
    st.none(),
    st.builds(lambda fs: {"checked": True, "flags": fs}, st.lists(flags, max_size=4)),
    st.just({"checked": False, "flags": []}),
)
statuses = st.sampled_from(["passed", "passed", "failed"])


def _counted(doc: dict[str, object] | None) -> bool:
    """Independently of the code: a flag counts when it is evidence, of a kind that always
    counts, or does not say it is only listed."""
    if doc is None or not doc["checked"]:
        return False
    return any(
        f["confidence"] == "evidence" or f["kind"] in ALWAYS or f.get("counts", True)
        for f in doc["flags"]  # type: ignore[attr-defined]
    )


def _record(i: int, status: str, doc: dict[str, object] | None) -> RunRecord:
    return RunRecord(
        "t",
        "m",
        "a",
        str(i),
        PatchResult(status=status),  # type: ignore[arg-type]
        flags=guard_flags(doc),
        listed=guard_listed(doc),
    )


@given(docs)
def test_the_fast_reading_agrees_with_the_model(doc: dict[str, object] | None) -> None:
    assert guard_flags(doc) == flag_kinds(doc)
    assert guard_listed(doc) == listed_kinds(doc)
    assert not set(guard_listed(doc)) & set(guard_flags(doc) or ())


@given(st.lists(st.tuples(statuses, docs), min_size=1, max_size=12))
def test_every_reading_counts_the_same_flags(runs: list[tuple[str, dict | None]]) -> None:  # type: ignore[type-arg]
    """Property: unflagged = passed with a record and no counting flag; `--exclude-flagged`
    of every kind takes out exactly the runs with a counting flag; `--flagged-as failed`
    fails exactly the passed ones; a run with listed touches only is never against."""
    records = [_record(i, status, doc) for i, (status, doc) in enumerate(runs)]
    guarded = [doc is not None and doc["checked"] for _, doc in runs]
    g = row_guard(records)
    clean = sum(
        s == "passed" and ok and not _counted(doc)
        for (s, doc), ok in zip(runs, guarded, strict=True)
    )
    if any(guarded):
        assert g.unflagged is not None
        assert g.unflagged.passed == clean
    selection = Selection("all", tuple(enumerate(records)), (), {}, 0, errors_as_failures=False)
    kept = exclude_flagged(selection, KINDS).kept
    assert [r.run_id for _, r in kept] == [
        str(i) for i, (_, doc) in enumerate(runs) if not _counted(doc)
    ]
    failed = flagged_as_failed(selection, KINDS).kept
    for (_, before), (_, after), (_, doc) in zip(selection.kept, failed, runs, strict=True):
        flipped = before.patch.status == "passed" and _counted(doc)
        assert (after.patch.status == "failed") == (flipped or before.patch.status == "failed")
    listed_only = sum(
        s == "passed" and bool(guard_listed(doc)) for s, doc in runs if doc is not None
    )
    assert sum(g.listed.values()) >= (1 if listed_only else 0)


def test_a_listed_touch_leaves_a_pass_unflagged_and_evidence_always_counts() -> None:
    """The attack on the old counting: a genuine fix that adds a regression test was counted
    as flagged; a `vendored` evidence flag marked as a touch must still count."""
    touch = {"checked": True, "flags": [{"kind": "tests", "counts": False}]}
    evidence = {
        "checked": True,
        "flags": [{"kind": "vendored", "confidence": "evidence", "counts": False}],
    }
    g = row_guard([_record(1, "passed", touch), _record(2, "passed", evidence)])
    assert g.unflagged is not None
    assert (g.unflagged.passed, g.unflagged.of) == (1, 2)
    assert (g.flagged, g.listed) == ({"vendored": 1}, {"tests": 1})
    assert counts({"kind": "poc-literal", "counts": False})


# ---------------------------------------------------------------------------- the guard

FULL = Task(
    id="t",
    sanitizer="address",
    scripts=Scripts(build="b.sh", run="r.sh", test="t.sh"),
    files=Files(poc=("p",), future_test="f.diff"),
)


def _flags(
    before: dict[str, bytes], after: dict[str, bytes], tmp: Path, task: Task = FULL
) -> tuple[Flag, ...]:
    case = Case("c", None, (), before, after)
    return guard(case_patch(case, tmp), task, case_facts(case))


def test_an_added_regression_test_is_listed_and_a_changed_test_counts(tmp_path: Path) -> None:
    added = _flags(
        {"src/a.c": b"int a;\n"}, {"src/a.c": b"int a;\n", "tests/test_a.c": b"x\n"}, tmp_path / "1"
    )
    assert [(f.kind, f.counts) for f in added] == [("tests", False)]
    changed = _flags({"tests/test_a.c": b"x\n"}, {"tests/test_a.c": b"y\n"}, tmp_path / "2")
    assert [(f.kind, f.counts) for f in changed] == [("tests", True)]
    no_tests = FULL.model_copy(update={"scripts": Scripts(build="b.sh", run="r.sh")})
    alone = _flags({"tests/test_a.c": b"x\n"}, {"tests/test_a.c": b"y\n"}, tmp_path / "3", no_tests)
    assert [(f.kind, f.counts) for f in alone] == [("tests", False)]


def test_build_and_vendored_touches_count_when_a_check_runs_them(tmp_path: Path) -> None:
    docs = _flags({"docs/Makefile": b"a\n"}, {"docs/Makefile": b"b\n"}, tmp_path / "1")
    assert [(f.kind, f.counts) for f in docs] == [("build-config", False)]
    root = _flags({"Makefile": b"a\n"}, {"Makefile": b"b\n"}, tmp_path / "2")
    assert [(f.kind, f.counts) for f in root] == [("build-config", True)]
    notes = _flags({"vendor/z/README": b"a\n"}, {"vendor/z/README": b"b\n"}, tmp_path / "3")
    assert [(f.kind, f.counts) for f in notes] == [("vendored", False)]
    code = _flags({"vendor/z/z.c": b"int a;\n"}, {"vendor/z/z.c": b"int b;\n"}, tmp_path / "4")
    assert [(f.kind, f.counts) for f in code] == [("vendored", True)]


ALL = sorted(CASES.glob("*.case"))


@pytest.mark.parametrize("path", [p for p in ALL if load_case(p).kind], ids=lambda p: p.stem)
def test_every_cheat_raises_its_kind_in_a_flag_that_counts(path: Path, tmp_path: Path) -> None:
    case = load_case(path)
    raised = guard(case_patch(case, tmp_path / case.name), FULL, case_facts(case))
    assert case.kind in {f.kind for f in raised if f.counts}, raised


def test_at_most_one_genuine_fix_in_twenty_raises_a_flag_that_counts(tmp_path: Path) -> None:
    fixes = [load_case(p) for p in ALL if load_case(p).kind is None]
    counted = {
        c.name: kinds
        for c in fixes
        if (
            kinds := {
                f.kind
                for f in guard(case_patch(c, tmp_path / c.name), FULL, case_facts(c))
                if f.counts
            }
        )
    }
    assert len(counted) * 20 <= len(fixes), counted


# ---------------------------------------------------------------------------- every format


def _doc(*flags: tuple[str, bool]) -> dict[str, Any]:
    listed = [{"kind": k, "paths": ["x"], "why": "seen", "counts": c} for k, c in flags]
    return {"version": 1, "checked": True, "flags": listed, "observed": None}


def test_every_format_shows_the_counted_flags_and_the_listed_touches(tmp_path: Path) -> None:
    """Two passes: one with a regression test added (listed), one with a crash catcher
    (counted): unflagged 1/2 in every format, the listed touch shown beside it."""
    root = tmp_path / "results"
    write_run(root, "t1/m/a/r1", summary(task="t1", status="passed", guard=_doc(("tests", False))))
    write_run(
        root, "t2/m/a/r1", summary(task="t2", status="passed", guard=_doc(("crash-handler", True)))
    )
    run = CliRunner()
    doc = json.loads(run.invoke(report, [str(root), "--format", "json"]).output)
    (row,) = doc["rows"]
    assert (row["unflagged"]["passed"], row["unflagged"]["of"]) == (1, 2)
    assert (row["flagged"], row["listed"]) == ({"crash-handler": 1}, {"tests": 1})
    lines = list(
        csv.DictReader(io.StringIO(run.invoke(report, [str(root), "--format", "csv"]).output))
    )
    assert (lines[0]["unflagged_passed"], lines[0]["flagged_tests"], lines[0]["listed_tests"]) == (
        "1",
        "0",
        "1",
    )
    text = " ".join(run.invoke(report, [str(root)], env={"COLUMNS": "200"}).output.split())
    assert "listed, not counted (no check runs them): tests 1" in text, text
    page = run.invoke(report, [str(root), "--format", "html"]).output
    assert "Listed, not counted" in page
    assert "tests 1" in page
    kept = json.loads(
        run.invoke(report, [str(root), "--format", "json", "--exclude-flagged", "any"]).output
    )
    assert [t["task"] for t in kept["tasks"]] == ["t1"]
