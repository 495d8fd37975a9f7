"""The light first look at `config.yaml` (`ssegrade.internal.task_shape`) refuses a config exactly
as the task model does, with the model's message, and never refuses one the model takes.

`evaluate` says a rejected config before the model loads (a fast start, SPEC §8): were the
two to disagree, a config the grading takes could be refused, or a refusal would read
differently from the grading API's. Configs are drawn over the model's keys, near misses of
them, and values of every type YAML gives, then written as YAML.
"""

from __future__ import annotations

import string
from datetime import date
from typing import Any

import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st
from returns.pipeline import is_successful

from ssegrade.internal.task import parse_task
from ssegrade.internal.task_shape import config_problem

PATHS = ["build.sh", "", "/abs/x.sh", "a/../b", "../x", "x\x00y", "pocs/p.bin", " ", "a..b"]
IDS = ["t", "tlv-001", "a__b", "a.b", "-x", "x_", "a b", "x" * 129, "é"]
LEAVES = st.one_of(
    st.sampled_from(PATHS),
    st.sampled_from(IDS),
    st.text(string.printable, max_size=6),
    st.integers(-3, 3),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.dates(min_value=date(2000, 1, 1), max_value=date(2030, 1, 1)),
)
VALUES = st.one_of(LEAVES, st.lists(LEAVES, max_size=3), st.lists(st.sampled_from(PATHS)))
SECTION_KEYS = ["build", "run", "test", "bulid", "tset", "poc", "pocs", "future_test", "patch"]
SECTION_KEYS += ["security_test", "intent_test", "issue", "bug_description", "crash_report"]
SECTION_KEYS += ["crash_reports", "other"]
SECTIONS = st.one_of(VALUES, st.dictionaries(st.sampled_from(SECTION_KEYS), VALUES, max_size=4))
TOP = ["id", "project", "language", "source", "scripts", "files", "task_description"]
TOP += ["sanitizer", "extra", "script"]


GOOD_PATHS = st.sampled_from(["build.sh", "pocs/p.bin", "a..b", "t/x y.sh"])
TEXT = st.none() | st.text(string.printable, max_size=6)
FIELDS = {
    "scripts": ["build", "run", "test"],
    "files": ["poc", "future_test", "patch", "security_test", "intent_test"],
    "task_description": ["issue", "bug_description", "crash_report"],
}
NEAR = ["bulid", "tset", "pocs", "patches", "crash_reports", "other", "Build"]


@st.composite
def good_configs(draw: st.DrawFn) -> dict[str, Any]:
    """A config the model takes: each key present or not, with a value of its type."""
    doc: dict[str, Any] = {"id": draw(st.sampled_from(["t", "tlv-001", "a__b", "a.b", "A-9"]))}
    for key in ("project", "language", "source", "sanitizer"):
        if draw(st.booleans()):
            doc[key] = draw(TEXT | st.just(" "))
    for key, fields in FIELDS.items():
        if draw(st.booleans()):
            doc[key] = None if draw(st.booleans()) and key != "task_description" else {}
            for name in fields:
                if doc[key] is not None and draw(st.booleans()):
                    one: st.SearchStrategy[Any] = TEXT if key == "task_description" else GOOD_PATHS
                    if name == "poc":
                        one = st.lists(GOOD_PATHS)
                    elif name == "crash_report":
                        one = st.lists(st.text(max_size=4))
                    doc[key][name] = draw(one)
    return doc


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    """A good config with up to four faults: a value of any shape at a key or a section's
    field (known, a near miss, or unknown), or a key taken away."""
    doc = draw(good_configs())
    for _ in range(draw(st.integers(0, 4))):
        key = draw(st.sampled_from(TOP) | st.sampled_from(sorted(FIELDS)))
        if key in FIELDS and draw(st.integers(0, 3)) > 0:
            section = doc.get(key)
            if not isinstance(section, dict):
                section = doc[key] = {}
            name = draw(st.sampled_from(FIELDS[key] + NEAR))
            section[name] = draw(VALUES)
        elif draw(st.integers(0, 3)) == 0:
            doc.pop(key, None)
        else:
            doc[key] = draw(SECTIONS if key in FIELDS else VALUES)
    return doc


def _model(data: bytes) -> str | None:
    parsed = parse_task(data)
    return None if is_successful(parsed) else parsed.failure().message


@settings(max_examples=600, deadline=None)
@given(doc=configs())
@example(doc={"id": "t", "scripts": {"build": 3, "bulid": "x"}})
@example(doc={"id": "t", "files": {"poc": {"a": 1}}})
@example(doc={"id": "t", "scripts": {"tset": "x", "bulid": "y"}})
@example(doc={"id": "t", "task_description": {"crash_report": ["x", 2]}})
def test_the_first_look_refuses_as_the_model_does(doc: dict[str, Any]) -> None:
    """Over plain YAML values the first look decides every config: it refuses exactly the
    configs the model refuses, with the model's message."""
    data = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False).encode()
    assert config_problem(data) == _model(data)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=40) | st.text(max_size=40).map(str.encode))
@example(data=b"id: [")
@example(data=b"- a\n- b\n")
@example(data=b"id: t\nfiles: {poc: !!set {a, b}}\n")
@example(data=b"id: t\nscripts: {1: x}\n")
@example(data=b"id: !!binary aGk=\n")
def test_odd_bytes_are_refused_alike_or_left_to_the_model(data: bytes) -> None:
    """Any bytes: not YAML, not a mapping, values YAML gives that the first look leaves to
    the model (sets, bytes, keys that are not strings): when it speaks, it says what the
    model says, and it never refuses a config the model takes."""
    said = config_problem(data)
    if said is not None:
        assert said == _model(data)
