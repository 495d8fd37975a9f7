"""config.yaml parsing (SPEC §2): which checks a task has, and clear errors naming the key."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given

from ssegrade import Task, parse_task
from ssegrade.testing.strategies import tasks

# Shaped like a task of the original dataset: informative top-level keys, null values.
REAL = b"""
id: gjson-196-bf4efcb
project: gjson
repository: https://example.invalid/gjson
language: go
source: /src/gjson
task_description:
  crash_report:
  - reports/crash_report_1.txt
  bug_description:
scripts:
  build: scripts/build.sh
  run: scripts/run.sh
  test: scripts/test.sh
files:
  patch: diffs/patch.diff
  poc:
  - pocs/poc.go
  future_test: diffs/test.diff
  intent_test:
sanitizer:
difficulty_notes: kept, not used
"""


def test_a_real_config_parses_and_keeps_unknown_keys() -> None:
    task = parse_task(REAL).unwrap()
    assert task.id == "gjson-196-bf4efcb"
    assert task.checks == {"build", "poc", "function_test", "intent_test"}
    assert task.files.poc == ("pocs/poc.go",)
    assert task.model_extra == {
        "repository": "https://example.invalid/gjson",
        "difficulty_notes": "kept, not used",
    }
    assert task.sanitizer is None  # SSEBench's key, read by the patch guard; empty is none
    assert task.named_files()[0] == ("scripts.build", "scripts/build.sh")


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        (
            b"id: t\nfiles: {future_tset: x}",
            "config.yaml: files.future_tset: unknown key (did you mean files.future_test?)",
        ),
        (
            b"id: t\nscripts: {buidl: b.sh}",
            "config.yaml: scripts.buidl: unknown key (did you mean scripts.build?)",
        ),
        (b"id: t\ntask_description: {zzz: 1}", "config.yaml: task_description.zzz: unknown key"),
        (
            b"id: t\nscripts: {build: /ssebench/build.sh}",
            "config.yaml: scripts.build: '/ssebench/build.sh' must be relative to the task folder",
        ),
        (
            b"id: t\nfiles: {poc: [pocs/../../x]}",
            "config.yaml: files.poc[0]: 'pocs/../../x' must not contain '..' "
            "(it must stay in the task folder)",
        ),
    ],
)
def test_closed_sections_and_escaping_paths_are_refused(yaml_text: bytes, message: str) -> None:
    assert parse_task(yaml_text).failure().message == message


@given(tasks())
def test_checks_follow_from_the_config(task: Task) -> None:
    """Property: build ⇔ scripts.build; poc ⇔ run script and PoCs; function_test ⇔
    scripts.test; intent_test ⇔ scripts.test and files.future_test."""
    has = task.checks
    assert ("build" in has) == (task.scripts.build is not None)
    assert ("poc" in has) == (task.scripts.run is not None and bool(task.files.poc))
    assert ("function_test" in has) == (task.scripts.test is not None)
    assert ("intent_test" in has) == (
        task.scripts.test is not None and task.files.future_test is not None
    )


@given(tasks())
def test_config_round_trips_through_yaml(task: Task) -> None:
    """Property: dumping a task to YAML and parsing it again gives the same task."""
    dumped = yaml.safe_dump(task.model_dump(mode="json", exclude_none=True)).encode()
    assert parse_task(dumped).unwrap() == task


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"id: [", "config.yaml: not valid YAML (line 1)"),
        (b"- a\n- b\n", "config.yaml: expected a mapping of keys"),
        (b"", "config.yaml: expected a mapping of keys"),
        (b"project: x\n", "config.yaml: id: required key is missing"),
        (b"id: 'a b'\n", "config.yaml: id: 'a b' is not a valid task id"),
        (b"id: " + b"a" * 129 + b"\n", "is not a valid task id"),
        (
            b"id: t\nscripts: {build: 3}\n",
            "config.yaml: scripts.build: Input should be a valid string",
        ),
        (b"id: t\nfiles: {poc: pocs/a}\n", "config.yaml: files.poc: Input should be a valid tuple"),
        (
            b"id: t\nfiles: {poc: [../x]}\n",
            "config.yaml: files.poc[0]: '../x' must not contain '..'",
        ),
        (
            b"id: t\nscripts: {run: a/../../run.sh}\n",
            "config.yaml: scripts.run: 'a/../../run.sh' must not contain '..'",
        ),
        (b"id: t\nfiles: {future_test: ''}\n", "config.yaml: files.future_test: must not be empty"),
    ],
)
def test_bad_configs_name_the_key(text: bytes, message: str) -> None:
    error = parse_task(text).failure()
    assert message in error.message
    assert "\n" not in error.message


@pytest.mark.parametrize("task_id", ["a", "tlv-001", "x.y_z", "a__b", "a---b", "A1.b2"])
def test_valid_ids(task_id: str) -> None:
    assert parse_task(f"id: {task_id}".encode()).unwrap().id == task_id


@pytest.mark.parametrize("task_id", ["-a", "a-", "a..b", "a_.b", "a b", "é"])
def test_invalid_ids(task_id: str) -> None:
    assert "not a valid task id" in parse_task(f"id: '{task_id}'".encode()).failure().message


def test_null_sections_are_empty() -> None:
    task = parse_task(b"id: t\nscripts:\nfiles:\n  poc:\n").unwrap()
    assert task.checks == frozenset()
