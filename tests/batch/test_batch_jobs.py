"""The pure rules of a batch (`ssegrade.batch`): job lines, duplicates, the digest, the tally;
and which progress a batch shows."""

from __future__ import annotations

import io
import json
import os
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from interpreters.batch.progress import LineProgress, LiveProgress, make_reporter
from ssegrade.batch import Tally, duplicate_problems, job_digest, parse_jobs, run_parts

names = st.text(st.characters(codec="utf-8", exclude_characters="/\x00"), min_size=1).filter(
    lambda s: s not in (".", "..") and s.isprintable() and len(s.encode()) <= 255
)


@st.composite
def good_jobs(draw: st.DrawFn) -> dict[str, Any]:
    job: dict[str, Any] = {"task": draw(names), "patch": draw(names)}
    if draw(st.booleans()):
        job["model"] = "/".join(draw(st.lists(names, min_size=1, max_size=3)))
    if draw(st.booleans()):
        job["agent"] = draw(names)
    if draw(st.booleans()):
        job["run_id"] = draw(names)
    if draw(st.booleans()):
        job["agent_duration"] = draw(st.integers(0, 10**6))
    if draw(st.booleans()):
        job["spend"] = draw(st.floats(0, 100) | st.integers(0, 100))
    if draw(st.booleans()):
        job["reference_run"] = draw(st.booleans())
    return job


bad_lines = st.sampled_from(
    [
        "{",
        "[1, 2]",
        '{"patch": "p"}',
        '{"task": "t", "patch": "p", "modle": "m"}',
        '{"task": "t", "patch": "p", "agent_duration": -1}',
        '{"task": "t", "patch": "p", "model": "a/../b"}',
        '{"task": "t", "patch": "p", "agent": "a/b"}',
        '{"task": 3, "patch": "p"}',
        '{"task": "t", "patch": "p", "reference_run": "yes"}',
        '{"task": "t", "patch": "p", "started_at": "yesterday"}',
    ]
)


@given(st.lists(st.one_of(good_jobs(), bad_lines, st.just("")), max_size=12))
def test_every_bad_line_is_reported_with_its_number_and_good_ones_parse(
    lines: list[dict[str, Any] | str],
) -> None:
    text = "\n".join(json.dumps(line) if isinstance(line, dict) else line for line in lines)
    jobs, problems = parse_jobs(text.encode())
    bad = [n for n, line in enumerate(lines, 1) if isinstance(line, str) and line]
    good = [n for n, line in enumerate(lines, 1) if isinstance(line, dict)]
    assert sorted({p.line for p in problems}) == bad
    assert [p.line for p in problems] == sorted(p.line for p in problems)
    assert [n for n, _ in jobs] == good
    for (n, job), original in zip(jobs, [lines[n - 1] for n in good], strict=True):
        assert isinstance(original, dict)
        assert (job.task, job.patch) == (original["task"], original["patch"])
        assert job.model == original.get("model", "unknown")
        assert run_parts("t", job.model, job.agent, "r")[1:-2] == tuple(job.model.split("/"))
        assert n >= 1


@given(st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from("xy")), max_size=10))
def test_duplicates_are_every_repeat_after_the_first(keys: list[tuple[str, str]]) -> None:
    numbered = [(n, ("t", model, "a", run)) for n, (model, run) in enumerate(keys, 1)]
    repeats = [n for n, key in numbered if key in [k for m, k in numbered if m < n]]
    assert [p.line for p in duplicate_problems(numbered)] == repeats


parts = st.tuples(
    st.text(max_size=5), st.binary(max_size=5), st.text(max_size=5), st.text(max_size=5)
)


@given(parts, parts)
def test_the_digest_changes_with_each_part(a: tuple[str, bytes, str, str], b: Any) -> None:
    assert (job_digest(*a) == job_digest(*b)) == (a == b)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["graded", "cached", "skipped"]),
            st.sampled_from(["passed", "failed", "error"]),
        )
    )
)
def test_the_tally_adds_up(finished: list[Any]) -> None:
    tally = Tally(total=len(finished))
    for outcome, status in finished:
        tally.add(outcome, status)
    assert tally.done == len(finished)
    assert tally.passed + tally.failed + tally.error == tally.graded + tally.cached
    assert tally.ungraded == any(status == "error" for _, status in finished)
    line = tally.line(1.0)
    assert line.startswith(f"{tally.graded} graded, {tally.passed} passed, ")
    assert line.endswith(f"{tally.cached} cached, {tally.skipped} skipped in 1.0 s")


def test_a_terminal_gets_a_live_bar_and_a_pipe_one_line_per_job() -> None:
    main, other = os.openpty()
    with os.fdopen(other, "w") as tty:
        assert isinstance(make_reporter(tty), LiveProgress)
    os.close(main)
    stream = io.StringIO()
    reporter = make_reporter(stream)
    assert isinstance(reporter, LineProgress)
    tally = Tally(total=2)
    reporter.begin(tally)
    tally.add("graded", "passed")
    reporter.finished(tally, "passed t/m/a/r1 (1.0 s)")
    reporter.end(tally.line(2.0))
    assert stream.getvalue().splitlines() == [
        "[1/2] passed t/m/a/r1 (1.0 s)",
        "1 graded, 1 passed, 0 failed, 0 error, 0 cached, 0 skipped in 2.0 s",
    ]
