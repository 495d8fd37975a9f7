"""The verification rule (`ssegrade.batch.judge`): properties and the sentences."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ssegrade import PatchResult, Task, status_of
from ssegrade.batch import CONTROLS, Control, ControlRun, expected_outcomes, judge
from ssegrade.internal.bencher import task_path
from ssegrade.internal.effects import CheckRecord
from ssegrade.internal.task import Files, Scripts

FOLDER = "/ssebench"


@st.composite
def tasks(draw: st.DrawFn) -> Task:
    """A task with at least one check."""
    build = draw(st.booleans())
    pocs = draw(st.lists(st.sampled_from(["pocs/a.bin", "pocs/b.bin", "p/c"]), unique=True))
    test = draw(st.booleans())
    intent = test and draw(st.booleans())
    if not (build or pocs or test):
        build = True
    return Task(
        id="t",
        scripts=Scripts(
            build="b.sh" if build else None,
            run="r.sh" if pocs else None,
            test="t.sh" if test else None,
        ),
        files=Files(poc=tuple(pocs), future_test="f.diff" if intent else None, patch="fix.diff"),
    )


def make_run(task: Task, control: Control, n: int, seen: dict[str, bool | None]) -> ControlRun:
    """A run showing `seen` (keys as `expected_outcomes` names them)."""
    pocs = [p for p in task.files.poc if f"poc:{p}" in seen]
    ran = [(p, seen[f"poc:{p}"]) for p in pocs if seen[f"poc:{p}"] is not None]
    fields = {
        "build_success": seen.get("build"),
        "pov_passed": sum(1 for _, ok in ran if ok) if ran else None,
        "pov_total": len(pocs) if ran else None,
        "func_test_success": seen.get("function_test"),
        "intent_test_success": seen.get("intent_test"),
    }
    finished = seen.get("finished", True) is not False
    status = status_of(**fields, unfinished=not finished)  # type: ignore[arg-type]
    message = None
    if seen.get("apply") is False:
        message = "Patch apply failed"
    elif not finished:
        message = "Timeout (10s)"

    def record(name: str, ok: bool | None, poc: str | None = None) -> CheckRecord:
        log = f"/r/{control}/{n}/logs/{name}{'-' + poc.split('/')[-1] if poc else ''}.log"
        return CheckRecord(name, poc, 0 if ok else 1, 0.1, False, log, bool(ok))

    records = [record("prepare", seen.get("apply") is not False)]
    if seen.get("build") is not None:
        records.append(record("build", seen["build"]))
    records += [record("poc", ok, task_path(FOLDER, p)) for p, ok in ran]
    for name in ("function_test", "intent_test"):
        if seen.get(name) is not None:
            records.append(record(name, seen[name]))
    if not finished:  # how the grading ended: its `end` record
        ending = CheckRecord("end", None, 1, 0.0, True, None, False, ended=message)
        records.append(ending)
    patch = PatchResult(status=status, error_msg=message, **fields)  # type: ignore[arg-type]
    return ControlRun(control, n, patch, tuple(records))


def log_of(key: str) -> str:
    """The end of the log file name `make_run` gives the check of `key`."""
    if key.startswith("poc:"):
        return f"poc-{key.rsplit('/', maxsplit=1)[-1]}.log"
    return {"apply": "prepare.log"}.get(key, f"{key}.log")


def good_runs(task: Task, repeat: int) -> list[ControlRun]:
    return [
        make_run(task, control, n, dict(expected_outcomes(task, control)))
        for control in CONTROLS
        for n in range(1, repeat + 1)
    ]


def names(key: str) -> tuple[str, ...]:
    """Words a sentence about `key` must hold (one of them)."""
    return {
        "build": ("build",),
        "function_test": ("functional tests", "function_test"),
        "intent_test": ("intent tests", "intent_test"),
        "apply": ("appl",),
        "finished": ("error", "finished"),
    }.get(key, (key.removeprefix("poc:"),))


WHERE = {"empty": "unfixed project", "reference": "reference patch"}


@given(tasks(), st.integers(1, 3))
def test_a_task_whose_runs_all_show_the_expected_outcomes_is_ok(task: Task, repeat: int) -> None:
    verdict = judge(task, FOLDER, good_runs(task, repeat))
    assert (verdict.verdict, verdict.problems, verdict.flaky) == ("ok", (), ())


@given(tasks(), st.integers(1, 3), st.sampled_from(CONTROLS), st.data())
def test_one_check_deviating_in_every_repeat_makes_the_task_broken_and_is_named(
    task: Task, repeat: int, control: Control, data: st.DataObject
) -> None:
    want = expected_outcomes(task, control)
    key = data.draw(st.sampled_from(sorted(want)))
    runs = good_runs(task, repeat)
    runs = [
        make_run(task, r.control, r.n, {**want, key: not want[key]}) if r.control == control else r
        for r in runs
    ]
    verdict = judge(task, FOLDER, runs)
    assert verdict.verdict == "broken"
    assert verdict.flaky == ()
    assert len(verdict.problems) >= 1
    text = " ".join(verdict.problems)
    assert any(word in text for word in names(key)), (key, verdict.problems)
    assert WHERE[control] in text
    # Each problem comes with the run that shows it and the log of the check that failed.
    assert [e.about for e in verdict.evidence] == list(verdict.problems)
    (shown,) = [e for e in verdict.evidence if any(w in e.about for w in names(key))]
    assert (shown.control, shown.n) == (control, 1)
    if key != "finished":  # the check ran and failed: its log (a stopped grading has none)
        assert shown.log is not None
        assert shown.log.endswith(log_of(key))
        assert shown.log.startswith(f"/r/{control}/1/")


@given(tasks(), st.integers(2, 4), st.sampled_from(CONTROLS), st.data())
def test_one_check_differing_between_repeats_is_flaky_with_its_counts(
    task: Task, repeat: int, control: Control, data: st.DataObject
) -> None:
    want = expected_outcomes(task, control)
    key = data.draw(st.sampled_from(sorted(want)))
    odd = data.draw(st.sets(st.integers(1, repeat), min_size=1, max_size=repeat - 1))
    runs = [
        make_run(task, r.control, r.n, {**want, key: not want[key]})
        if r.control == control and r.n in odd
        else r
        for r in good_runs(task, repeat)
    ]
    verdict = judge(task, FOLDER, runs)
    assert verdict.verdict == "flaky"
    assert verdict.problems == ()
    line = next(line for line in verdict.flaky if any(word in line for word in names(key)))
    passing = len(odd) if not want[key] else repeat - len(odd)
    assert f"{passing} of {repeat}" in line
    assert WHERE[control].split()[-1] in line
    # The evidence of a flaky check is a run where it showed the wrong outcome.
    assert [e.about for e in verdict.evidence] == list(verdict.flaky)
    shown = next(e for e in verdict.evidence if e.about == line)
    assert (shown.control, shown.n in odd) == (control, True)
    if key not in ("finished", "apply"):
        assert shown.log is not None
        assert shown.log.endswith(log_of(key))


outcome = st.sampled_from([True, False, None])


@given(tasks(), st.integers(1, 4), st.data())
def test_repeats_that_agree_are_never_flaky(task: Task, repeat: int, data: st.DataObject) -> None:
    runs: list[ControlRun] = []
    for control in CONTROLS:
        seen = {key: data.draw(outcome) for key in expected_outcomes(task, control)}
        run = make_run(task, control, 1, seen)
        runs += [ControlRun(control, n, run.patch, run.checks) for n in range(1, repeat + 1)]
    verdict = judge(task, FOLDER, runs)
    assert verdict.verdict != "flaky"
    assert verdict.flaky == ()


@given(tasks())
def test_a_task_without_a_reference_patch_is_broken_whatever_its_runs_show(task: Task) -> None:
    verdict = judge(task, FOLDER, good_runs(task, 1), has_reference=False)
    assert verdict.verdict == "broken"
    assert verdict.problems == ("the task has no reference patch",)


# ---------------------------------------------------------------------------- the sentences

FULL = Task(
    id="t",
    scripts=Scripts(build="b.sh", run="r.sh", test="t.sh"),
    files=Files(poc=("pocs/a.bin", "pocs/b.bin"), future_test="f.diff", patch="fix.diff"),
)


def runs_with(control: Control, **changes: bool | None) -> list[ControlRun]:
    runs = good_runs(FULL, 1)
    want = {
        **expected_outcomes(FULL, control),
        **{k.replace("__", ":"): v for k, v in changes.items()},
    }
    return [make_run(FULL, control, 1, want) if r.control == control else r for r in runs]


def test_the_sentences_name_the_check_and_the_control() -> None:
    poc = judge(FULL, FOLDER, runs_with("empty", **{"poc__pocs/b.bin": True}))
    assert poc.problems == ("PoC pocs/b.bin does not trigger on the unfixed project",)
    func = judge(FULL, FOLDER, runs_with("reference", function_test=False))
    assert func.problems == ("reference patch fails the functional tests",)
    tests = judge(FULL, FOLDER, runs_with("empty", function_test=False))
    assert tests.problems == ("the functional tests fail on the unfixed project",)
    intent = judge(FULL, FOLDER, runs_with("empty", intent_test=True))
    assert intent.problems == ("the intent tests pass on the unfixed project",)
    still = judge(FULL, FOLDER, runs_with("reference", **{"poc__pocs/a.bin": False}))
    assert still.problems == ("PoC pocs/a.bin still triggers with the reference patch",)


def test_a_patch_that_does_not_apply_is_named_alone() -> None:
    fields = {"build": False, "function_test": False, "intent_test": False}
    runs = runs_with("reference", apply=False, **fields)
    runs = [
        make_run(FULL, "reference", 1, {"apply": False, "finished": True, **fields})
        if r.control == "reference"
        else r
        for r in runs
    ]
    assert judge(FULL, FOLDER, runs).problems == ("reference patch does not apply",)


def test_checks_that_did_not_run_after_a_failed_build_are_not_named() -> None:
    seen = {"build": False, "function_test": None, "intent_test": None, "finished": True}
    seen |= {"poc:pocs/a.bin": None, "poc:pocs/b.bin": None}
    runs = [r for r in good_runs(FULL, 1) if r.control == "reference"]
    runs.append(make_run(FULL, "empty", 1, seen))
    assert judge(FULL, FOLDER, runs).problems == ("the build fails on the unfixed project",)


def test_flaky_sentence_has_the_counts() -> None:
    task = Task(id="t", scripts=Scripts(test="t.sh"), files=Files(patch="fix.diff"))
    runs = [
        make_run(task, "empty", 1, {"function_test": True}),
        *[
            make_run(task, "reference", n, {"function_test": n != 2, "apply": True})
            for n in (1, 2, 3)
        ],
    ]
    verdict = judge(task, FOLDER, runs)
    assert verdict.verdict == "flaky"
    assert verdict.flaky[0] == "function_test passed 2 of 3 with the reference patch"
    assert "grading finished without error 2 of 3 times with the reference patch" not in (
        verdict.flaky
    )
