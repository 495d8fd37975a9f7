"""The grade's other readers (the daemon's wire, SSEBench's run summary) derive their fields
from `PatchResult` instead of restating them: a field added to it shows up in both."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from ssegrade.internal.result import PatchResult
from ssegrade.internal.ssebench import _Grade
from ssegrade.protocol._wire import WirePatchResult

ADDED = """
import importlib
import ssegrade.internal.result
from ssegrade.internal.result import PatchResult

class Grown(PatchResult):
    reviewed: bool | None = None

ssegrade.internal.result.PatchResult = Grown  # as if the field had been written in PatchResult
import ssegrade.protocol._wire as wire
import ssegrade.internal.ssebench as ssebench
wire, ssebench = importlib.reload(wire), importlib.reload(ssebench)
print(list(wire.WirePatchResult.model_fields))
print(list(ssebench._Grade.model_fields))
print(wire.wire_result(b'{"patch_result": {"status": "passed", "reviewed": true},'
                       b' "runtime_result": {"agent_duration": 1, "agent_timeout": false,'
                       b' "evaluator_timeout": false}}')["patch_result"]["reviewed"])
"""


def test_a_field_added_to_patch_result_shows_up_on_the_wire_and_in_the_summary() -> None:
    """In a process of its own (the models are rebuilt there): PatchResult grown by one
    field, the wire's grade and SSEBench's grade have it too, and the wire carries it."""
    done = subprocess.run(
        [sys.executable, "-c", ADDED], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    fields = [*PatchResult.model_fields, "reviewed"]
    assert done.stdout.splitlines() == [str(fields), str(fields), "True"]


def test_the_derived_models_keep_their_own_rules() -> None:
    """Same fields in the same order; the wire still refuses a key the original does not
    send and requires every check field, SSEBench's summary still reads a grade without
    `status` and refuses one whose status is not a grade."""
    assert list(WirePatchResult.model_fields) == list(PatchResult.model_fields)
    assert not WirePatchResult.model_fields["status"].is_required()
    assert all(
        info.is_required()
        for name, info in WirePatchResult.model_fields.items()
        if name != "status"
    )
    assert WirePatchResult.model_config.get("extra") == "forbid"
    assert _Grade.model_validate({"build_success": True}).model_dump()["status"] is None
    with pytest.raises(ValidationError):
        _Grade.model_validate({"status": "odd"})
