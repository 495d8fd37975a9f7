"""What `ssegrade batch` writes reads with SSEBench's own models (`tests.ssebench_models`).

The run config of a job line (with `ssebench run`'s defaults for what it leaves out) is
`summary.json`'s `config`, key for key; the task config in `summary.json` has only the keys
of SSEBench's task model; `task_problems` says exactly when that model refuses a config; the
bundled examples' configs are valid for it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from ssegrade.batch import Job, parse_jobs, summary_document
from ssegrade.result import EvaluationResult, PatchResult, RuntimeResult
from ssegrade.ssebench import task_document, task_problems
from ssegrade.task import Task, parse_task
from tests.ssebench_models import RUN_CONFIG_FIELDS, TASK_FIELDS, RunSummary, TaskModel

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

GRADE = EvaluationResult(
    patch_result=PatchResult(status="passed", build_success=True, pov_passed=1, pov_total=1),
    runtime_result=RuntimeResult(agent_duration=12),
)


def example(name: str) -> Task:
    return parse_task((EXAMPLES / name / "task" / "config.yaml").read_bytes()).unwrap()


@pytest.mark.parametrize("name", ["tlv", "kvconf"])
def test_the_examples_are_valid_ssebench_tasks(name: str) -> None:
    raw = yaml.safe_load((EXAMPLES / name / "task" / "config.yaml").read_bytes())
    TaskModel.model_validate(raw)
    assert task_problems(example(name)) == ()


@pytest.mark.parametrize("name", ["tlv", "kvconf"])
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
        "tool_layer": None,
        "egress": "restricted",
        "reference_run": False,
        "plugins": [],
    }
    assert summary.spend == 0.5


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
    defaults = {"mode": "sandbox", "timeout": 3600, "difficulty": 2, "tool_layer": None}
    defaults |= {"egress": "restricted", "plugins": [], "reference_run": False}
    assert config == {"agent": "a", "model": "m"} | defaults | given_config


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
        "repository": st.sampled_from(["https://example.org/demo", "http://x", "git@x:y"]),
        "language": st.sampled_from(["c", "go", "rust", "python", "C"]),
        "source": st.sampled_from(["/src/demo", "../demo", "src"]),
        "task_description": st.sampled_from(
            [
                {"issue": "it crashes"},
                {"crash_report": ["reports/a.txt"]},
                {"bug_description": "  "},
                {"crash_report": ["/abs/a.txt"]},
            ]
        ),
        "scripts": st.just({"build": "build.sh"}),
        "files": st.just({"poc": ["pocs/a"]}),
        "type": st.just("UAF"),
        "private_note": st.just("not SSEBench's"),
    },
)


def _refused(raw: dict[str, Any]) -> bool:
    try:
        TaskModel.model_validate({"scripts": {}, "files": {}} | raw)
    except ValidationError:
        return True
    return False


@given(configs)
def test_task_problems_are_exactly_when_ssebench_refuses(raw: dict[str, Any]) -> None:
    task = parse_task(yaml.safe_dump(raw).encode()).unwrap()
    assert bool(task_problems(task)) == _refused(raw), task_problems(task)


@given(configs)
def test_the_summarys_task_leaves_out_only_unknown_keys(raw: dict[str, Any]) -> None:
    """The summary's task reads with SSEBench's task model whenever the config would, its
    unknown keys aside (they are left out)."""
    doc = task_document(parse_task(yaml.safe_dump(raw).encode()).unwrap())
    assert set(doc) <= TASK_FIELDS
    if not _refused({k: v for k, v in raw.items() if k in TASK_FIELDS}):
        TaskModel.model_validate(json.loads(json.dumps(doc)))
