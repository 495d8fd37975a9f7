"""What `ssegrade batch` writes reads with SSEBench's own models (`tests.support.ssebench_models`).

The run config of a job line (with `ssebench run`'s defaults for what it leaves out) is
`summary.json`'s `config`, key for key; the task config in `summary.json` has only the keys
of SSEBench's task model; `task_problems` says exactly when that model refuses a config; the
bundled examples' configs are valid for it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from ssegrade.batch import Job, parse_jobs, summary_document
from ssegrade.guard import Flag, GuardReport
from ssegrade.internal.result import EvaluationResult, PatchResult, RuntimeResult
from ssegrade.internal.ssebench import summary_problem, task_document, task_problems
from ssegrade.internal.task import Task, parse_task
from ssegrade.internal.verdict import Outcomes, TimedOut, document
from tests.support.ssebench_models import RUN_CONFIG_FIELDS, TASK_FIELDS, RunSummary, TaskModel

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

GRADE = EvaluationResult(
    patch_result=PatchResult(status="passed", build_success=True, pov_passed=1, pov_total=1),
    runtime_result=RuntimeResult(agent_duration=12),
)


def example(name: str) -> Task:
    return parse_task((EXAMPLES / name / "task" / "config.yaml").read_bytes()).unwrap()


@pytest.mark.parametrize("name", ["tlv", "kvconf", "rle"])
def test_the_examples_are_valid_ssebench_tasks(name: str) -> None:
    raw = yaml.safe_load((EXAMPLES / name / "task" / "config.yaml").read_bytes())
    TaskModel.model_validate(raw)
    assert task_problems(example(name)) == ()


@pytest.mark.parametrize("name", ["tlv", "kvconf", "rle"])
def test_a_batch_summary_reads_as_ssebench_run_summary(name: str) -> None:
    job = Job(task="t", patch="p", model="openai/gpt-5", agent="codex", spend=0.5)
    doc = json.loads(json.dumps(summary_document(example(name), job, "r1", GRADE, "d" * 64)))
    summary = RunSummary.model_validate(doc)
    assert set(doc["config"]) == RUN_CONFIG_FIELDS
    assert set(doc["task"]) <= TASK_FIELDS
    assert summary.config.model_dump() == {
        "agent": "codex",
        "model": "openai/gpt-5",
        "mode": "sandbox",
        "timeout": 3600,
        "difficulty": 2,
        "tool_layer": "sandbox",
        "egress": "restricted",
        "reference_run": False,
        "plugins": [],
    }
    assert summary.spend == 0.5


def test_the_summarys_task_keeps_the_sanitizer_and_its_guard_reads_too() -> None:
    """`sanitizer` is a field of ssegrade's task model (the patch guard reads it) and a key of
    SSEBench's: the summary keeps it; the guard's record beside it is a key SSEBench's run
    summary model ignores."""
    task = example("rle")
    assert task.sanitizer == "address"
    guard = GuardReport(flags=(Flag(kind="sanitizer", why="no runtime"),))
    job = Job(task="t", patch="p", model="m", agent="a", spend=0.1)
    doc = summary_document(task, job, "r1", GRADE, "d" * 64, guard=guard)
    doc = json.loads(json.dumps(doc))
    assert doc["task"]["sanitizer"] == "address"
    assert doc["guard"]["flags"][0]["kind"] == "sanitizer"
    summary = RunSummary.model_validate(doc)
    assert TaskModel.model_validate(doc["task"]).sanitizer == "address"
    assert summary.patch_result.status == "passed"


@given(
    st.datetimes(
        datetime(1900, 1, 1), datetime(2200, 1, 1), timezones=st.one_of(st.none(), st.timezones())
    ),
    st.sampled_from(["T", " "]),
    st.sampled_from(["auto", "seconds", "microseconds"]),
)
def test_the_start_time_carries_its_offset_as_ssebenchs_runner_writes_it(
    moment: datetime, sep: str, timespec: str
) -> None:
    """SSEBench's report orders the runs of a group by their start times, and cannot compare
    a time without an offset with one that has it (or with a run that has none): every start
    time batch writes carries one, the same instant, a time without one taken as UTC."""
    job = Job(task="t", patch="p", started_at=moment.isoformat(sep, timespec))
    doc = json.loads(json.dumps(summary_document(example("tlv"), job, "r1", GRADE, "d" * 64)))
    written = RunSummary.model_validate(doc).started_at
    assert written is not None
    assert written.tzinfo is not None
    given = datetime.fromisoformat(job.started_at or "")
    assert written == (given if given.tzinfo is not None else given.replace(tzinfo=UTC))
    assert written > datetime.min.replace(tzinfo=UTC)  # comparable with a run without a time


def test_a_job_without_spend_gets_a_number_and_says_it_is_unknown() -> None:
    doc = summary_document(example("tlv"), Job(task="t", patch="p"), "r1", GRADE, "d" * 64)
    assert (doc["spend"], doc["spend_recorded"]) == (0.0, False)
    RunSummary.model_validate(json.loads(json.dumps(doc)))


run_configs = st.fixed_dictionaries(
    {},
    optional={
        "mode": st.sampled_from(["sandbox", "sidecar"]),
        "timeout": st.integers(0, 10**6),
        "difficulty": st.integers(0, 4),
        "tool_layer": st.none() | st.sampled_from(["generic", "default"]),
        "egress": st.sampled_from(["restricted", "open"]),
        "plugins": st.lists(st.sampled_from(["oracle", "artifact"]), max_size=2),
        "reference_run": st.booleans(),
    },
)


@given(run_configs)
def test_the_run_config_of_a_job_line_is_the_summarys(given_config: dict[str, Any]) -> None:
    line = json.dumps({"task": "t", "patch": "p", "agent": "a", "model": "m", **given_config})
    [(_, job)], problems = parse_jobs(line.encode())
    assert problems == []
    doc = json.loads(json.dumps(summary_document(example("tlv"), job, "r", GRADE, "d" * 64)))
    config = RunSummary.model_validate(doc).config.model_dump()
    assert set(doc["config"]) == RUN_CONFIG_FIELDS
    defaults = {"mode": "sandbox", "timeout": 3600, "difficulty": 2}
    defaults |= {"egress": "restricted", "plugins": [], "reference_run": False}
    # `ssebench run` builds a sandbox run with its default tool layer when none is named; a
    # sidecar run has none.
    sandbox = given_config.get("mode", "sandbox") == "sandbox"
    tool_layer = given_config.get("tool_layer") or ("sandbox" if sandbox else None)
    expected = {"agent": "a", "model": "m"} | defaults | given_config | {"tool_layer": tool_layer}
    assert config == expected


@pytest.mark.parametrize(
    ("given", "reference"),
    [
        ({"agent": "reference"}, True),
        ({"agent": "reference", "reference_run": False}, False),
        ({"agent": "codex", "reference_run": True}, True),
        ({"agent": "codex"}, False),
    ],
)
def test_the_reference_agents_runs_are_reference_runs(
    given: dict[str, Any], reference: bool
) -> None:
    """`ssebench run` records a run of its `reference` agent (which applies the task's known
    fix) as a reference run, which its report never scores; a job line that says so decides."""
    [(_, job)], problems = parse_jobs(json.dumps({"task": "t", "patch": "p", **given}).encode())
    assert problems == []
    doc = json.loads(json.dumps(summary_document(example("tlv"), job, "r", GRADE, "d" * 64)))
    assert RunSummary.model_validate(doc).config.reference_run is reference
    assert doc["reference_run"] is reference


@pytest.mark.parametrize(
    "bad",
    [
        {"mode": "docker"},
        {"difficulty": 5},
        {"egress": "closed"},
        {"timeout": "1h"},
        {"plugins": "oracle"},
    ],
)
def test_a_bad_run_config_is_a_bad_line(bad: dict[str, Any]) -> None:
    _, problems = parse_jobs(json.dumps({"task": "t", "patch": "p", **bad}).encode())
    assert [p.line for p in problems] == [1]
    assert problems[0].message.startswith(next(iter(bad)))


configs = st.fixed_dictionaries(
    {"id": st.just("demo-1")},
    optional={
        "project": st.sampled_from(["demo", " "]),
        "repository": st.sampled_from(
            ["https://example.org/demo", " https://example.org/demo ", "http://x", "git@x:y"]
        ),
        "language": st.sampled_from(["c", "go", "rust", "python", "C"]),
        "source": st.sampled_from(["/src/demo", " /src/demo", "../demo", "src"]),
        "task_description": st.sampled_from(
            [
                {"issue": "it crashes"},
                {"crash_report": ["reports/a.txt"]},
                {"bug_description": "  "},
                {"crash_report": ["/abs/a.txt"]},
                {"crash_report": [" "]},
                {"issue": "it crashes", "crash_report": [" /abs/a.txt"]},
            ]
        ),
        # A section left out is refused by SSEBench's model; so is a path that is blank or
        # absolute once the spaces around it are stripped (the model strips every text).
        "scripts": st.sampled_from(
            [{"build": "build.sh"}, {}, {"build": " build.sh "}, {"run": "\t"}, {"test": " /t.sh"}]
        ),
        "files": st.sampled_from(
            [{"poc": ["pocs/a"]}, {}, {"poc": ["pocs/a", " "]}, {"patch": " /fix.diff"}]
        ),
        "type": st.just("UAF"),
        "sanitizer": st.sampled_from(["address", "memory", " "]),
        "private_note": st.just("not SSEBench's"),
    },
)


def _refused(raw: dict[str, Any]) -> bool:
    try:
        TaskModel.model_validate(raw)
    except ValidationError:
        return True
    return False


@given(configs)
def test_task_problems_are_exactly_when_ssebench_refuses(raw: dict[str, Any]) -> None:
    task = parse_task(yaml.safe_dump(raw).encode()).unwrap()
    assert bool(task_problems(task)) == _refused(raw), task_problems(task)


# One change to a valid config, each a case SSEBench's task model decides on its own: a section
# it wants left out, a path blank or absolute once stripped, texts it reads after stripping.
CONFIG_EDITS: list[tuple[str, tuple[str, ...], object]] = [
    ("drop", ("scripts",), None),
    ("drop", ("files",), None),
    ("set", ("scripts", "build"), " "),
    ("set", ("scripts", "run"), " /scripts/run.sh"),
    ("set", ("scripts", "test"), " scripts/test.sh "),
    ("set", ("files", "patch"), "\t"),
    ("set", ("files", "future_test"), " /tests/future_test.diff"),
    ("set", ("files", "poc"), ["pocs/overread.bin", " "]),
    ("set", ("files", "poc"), [" pocs/overread.bin"]),
    ("set", ("task_description", "crash_report"), [" "]),
    ("set", ("task_description", "crash_report"), [" /reports/a.txt"]),
    ("set", ("source",), " /src/tlvparse "),
    ("set", ("repository",), " https://example.invalid/tlvparse"),
    ("set", ("repository",), "https://example.invalid/a b"),
    ("set", ("project",), "\t"),
]


@pytest.mark.parametrize("edit", CONFIG_EDITS)
def test_one_change_to_a_valid_config_is_refused_iff_ssebench_refuses_it(
    edit: tuple[str, tuple[str, ...], object],
) -> None:
    raw = yaml.safe_load((EXAMPLES / "tlv" / "task" / "config.yaml").read_bytes())
    how, where, value = edit
    parent = raw
    for key in where[:-1]:
        parent = parent[key]
    if how == "drop":
        del parent[where[-1]]
    else:
        parent[where[-1]] = value
    task = parse_task(yaml.safe_dump(raw).encode()).unwrap()
    assert bool(task_problems(task)) == _refused(raw), (edit, task_problems(task))


@given(configs)
def test_the_summarys_task_leaves_out_only_unknown_keys(raw: dict[str, Any]) -> None:
    """The summary's task reads with SSEBench's task model whenever the config would, its
    unknown keys aside (they are left out)."""
    doc = task_document(parse_task(yaml.safe_dump(raw).encode()).unwrap())
    assert set(doc) <= TASK_FIELDS
    assert doc.get("sanitizer") == ((raw.get("sanitizer") or "").strip() or None)
    if not _refused({k: v for k, v in raw.items() if k in TASK_FIELDS}):
        TaskModel.model_validate(json.loads(json.dumps(doc)))


SUMMARY: dict[str, Any] = {
    "task": {
        "id": "demo-1",
        "project": "demo",
        "repository": "https://example.org/demo",
        "language": "go",
        "source": "/src/demo",
        "task_description": {"issue": "it crashes"},
        "scripts": {"build": "build.sh"},
        "files": {"poc": ["pocs/a"]},
    },
    "config": {"agent": "a", "model": "m", "mode": "sandbox", "timeout": 60, "difficulty": 2},
    "patch_result": {"status": "failed", "build_success": False},
    "runtime_result": {"agent_duration": 1, "agent_timeout": False, "evaluator_timeout": False},
    "spend": 0.5,
}
EDITS: list[tuple[tuple[str, ...], Any]] = [
    (("task", "task_description", "crash_report"), None),
    (("task", "task_description", "crash_report"), []),
    (("task", "task_description", "crash_report"), ["reports/a.txt"]),
    (("task", "task_description", "crash_report"), ["/abs.txt"]),
    (("task", "task_description", "issue"), None),
    (("task", "task_description", "issue"), " "),
    (("task", "task_description", "extra"), "x"),
    (("task", "files", "poc"), None),
    (("task", "files", "poc"), ["../pocs/a"]),
    (("task", "files", "poc"), [" "]),
    (("task", "files", "intent_test"), None),
    (("task", "scripts", "run"), None),
    (("task", "scripts", "build"), "/b.sh"),
    (("task", "id"), "bad id"),
    (("task", "project"), " demo "),
    (("task", "project"), " "),
    (("task", "language"), " c "),
    (("task", "language"), "python"),
    (("task", "repository"), "http://x"),
    (("task", "source"), "src"),
    (("task", "type"), 3),
    (("task", "reference"), "https://x"),
    (("task", "originality"), "stolen"),
    (("task", "private_note"), "not SSEBench's"),
    (("config", "difficulty"), 9),
    (("config", "mode"), "docker"),
    (("patch_result", "status"), "odd"),
    (("patch_result", "status"), "error"),
    (("spend",), "lots"),
    (("plugin_results",), [{"name": "oracle", "hook": "post", "status": "ok"}]),
    (("plugin_results",), ["oracle"]),
    (("started_at",), "2026-06-01T10:00:00Z"),
    (("started_at",), "yesterday"),
    (("digest",), "d" * 64),
]


def edited(edits: list[tuple[tuple[str, ...], Any]]) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(json.dumps(SUMMARY))
    for path, value in edits:
        *parents, key = path
        here = doc
        for part in parents:
            here = here[part]
        here[key] = value
    return doc


summaries = st.lists(st.sampled_from(EDITS), max_size=3).map(edited)


@given(summaries)
def test_summary_problem_is_exactly_when_ssebenchs_run_summary_model_refuses(
    doc: dict[str, Any],
) -> None:
    """A summary SSEBench's runner writes for a task without crash reports or PoCs (null) is
    read; one its run summary model refuses (a closed key, an absolute path, a bad run config,
    a plugin outcome that is no object) is not."""
    data = json.dumps(doc).encode()
    try:
        RunSummary.model_validate_json(data)
        refused = False
    except ValidationError:
        refused = True
    assert (summary_problem(data) is not None) == refused, summary_problem(data)


def test_a_summary_of_a_task_without_crash_reports_is_read() -> None:
    doc = summary_document(example("tlv"), Job(task="t", patch="p"), "r1", GRADE, "d" * 64)
    assert doc["task"]["task_description"]["crash_report"] is None
    assert summary_problem(json.dumps(doc).encode()) is None


def test_an_error_with_its_kind_reads_as_ssebench_run_summary() -> None:
    """`runtime_result.error_kind` is a key SSEBench's runtime model does not name: its model
    ignores it (as it does `agent_exit_code`), so the summary of an `error` still reads."""
    timed = document(Outcomes(frozenset({"build"}), ending=TimedOut(60)), RuntimeResult())
    job = Job(task="t", patch="p", model="m", agent="a")
    doc = json.loads(json.dumps(summary_document(example("tlv"), job, "r1", timed, "d" * 64)))
    assert doc["runtime_result"]["error_kind"] == "timeout"
    summary = RunSummary.model_validate(doc)
    assert summary.patch_result.status == "error"
    assert summary.runtime_result.evaluator_timeout is True
