"""result.json (SPEC §7): field order, compact JSON, extra keys kept, status derivation, schema."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from ssegrade import (
    EvaluationResult,
    PatchResult,
    RuntimeResult,
    parse_result,
    result_schema,
    status_of,
)
from ssegrade.internal.result import WITHOUT_LOG

flags = st.none() | st.booleans()


@st.composite
def patch_results(draw: st.DrawFn) -> PatchResult:
    total = draw(st.none() | st.integers(0, 5))
    passed = None if total is None else draw(st.integers(0, total))
    build, func, intent = draw(flags), draw(flags), draw(flags)
    status = status_of(
        build_success=build,
        pov_passed=passed,
        pov_total=total,
        func_test_success=func,
        intent_test_success=intent,
    )
    return PatchResult(
        status=status,
        build_success=build,
        pov_passed=passed,
        pov_total=total,
        func_test_success=func,
        intent_test_success=intent,
        error_msg=draw(st.none() | st.text(max_size=5)),
    )


def test_exact_bytes_of_a_document() -> None:
    doc = EvaluationResult(
        patch_result=PatchResult(
            status="failed",
            build_success=True,
            pov_passed=0,
            pov_total=1,
            func_test_success=True,
            intent_test_success=False,
            error_msg="PoC failed: /ssebench/pocs/poc.go",
            error_log="panic",
        ),
        runtime_result=RuntimeResult(),
    )
    assert doc.to_json() == (
        b'{"patch_result":{"status":"failed","build_success":true,"pov_passed":0,"pov_total":1,'
        b'"func_test_success":true,"intent_test_success":false,'
        b'"error_msg":"PoC failed: /ssebench/pocs/poc.go","error_log":"panic"},'
        b'"runtime_result":{"agent_duration":0,"agent_timeout":false,"evaluator_timeout":false,'
        b'"agent_exit_code":null,"error_kind":null}}'
    )


@given(patch_results(), st.dictionaries(st.sampled_from(["config", "run", "x"]), st.integers()))
def test_read_write_round_trip_keeps_extra_keys(patch: PatchResult, extra: dict[str, int]) -> None:
    """Property: writing, reading and writing again gives the same bytes, extra keys included
    and placed after the known ones."""
    first = EvaluationResult.model_validate({"patch_result": patch, **extra}).to_json()
    again = parse_result(first).unwrap().to_json()
    assert again == first
    assert list(json.loads(again))[:2] == ["patch_result", "runtime_result"]
    assert set(json.loads(again)) == {"patch_result", "runtime_result", *extra}


@given(patch_results())
def test_missing_status_is_derived_by_the_rule(patch: PatchResult) -> None:
    """Property: a document without status reads back with the status the rule gives."""
    raw = json.loads(EvaluationResult(patch_result=patch).to_json())
    del raw["patch_result"]["status"]
    assert parse_result(json.dumps(raw)).unwrap().patch_result.status == patch.status


odd = st.none() | st.integers() | st.text(max_size=5) | st.lists(st.integers(), max_size=2)


@given(patch_results(), st.sampled_from([{}, {"status": None}]), st.booleans(), odd)
def test_lenient_reading_derives_a_missing_status_and_can_skip_the_log(
    patch: PatchResult, without_status: dict[str, None], unfinished: bool, log: object
) -> None:
    """Property: `PatchResult.lenient` reads a `patch_result` without status (missing or null)
    as the document with the status the rule gives; one with a status as `model_validate`
    does. Without the log, whatever `error_log` holds is neither checked nor kept."""
    fields = patch.model_dump(exclude={"status"})
    derived = status_of(
        build_success=patch.build_success,
        pov_passed=patch.pov_passed,
        pov_total=patch.pov_total,
        func_test_success=patch.func_test_success,
        intent_test_success=patch.intent_test_success,
        unfinished=unfinished,
    )
    read = PatchResult.lenient({**fields, **without_status}, unfinished=unfinished)
    assert read == patch.model_copy(update={"status": derived})
    assert PatchResult.lenient(patch.model_dump(), unfinished=unfinished) == patch
    logged = {**patch.model_dump(), "error_log": log}
    assert PatchResult.lenient(logged, keep_log=False) == patch
    assert PatchResult.model_validate(logged, context=WITHOUT_LOG) == patch


def test_derived_status_sees_timeouts_and_exceptions() -> None:
    timed = b'{"patch_result":{"build_success":true},"runtime_result":{"evaluator_timeout":true}}'
    assert parse_result(timed).unwrap().patch_result.status == "error"
    crashed = b'{"patch_result":{"build_success":true,"error_msg":"Exception: boom"}}'
    assert parse_result(crashed).unwrap().patch_result.status == "error"


def test_unreadable_results_say_why() -> None:
    assert "not JSON" in str(parse_result(b"{").failure())
    assert "patch_result" in str(parse_result(b"{}").failure())
    assert "pov_total" in str(parse_result(b'{"patch_result":{"pov_total":"x"}}').failure())


def test_schema_describes_the_document() -> None:
    schema = result_schema()
    assert schema["$schema"].endswith("2020-12/schema")
    patch = schema["$defs"]["PatchResult"]
    assert list(patch["properties"]) == [
        "status",
        "build_success",
        "pov_passed",
        "pov_total",
        "func_test_success",
        "intent_test_success",
        "error_msg",
        "error_log",
    ]
    assert patch["properties"]["status"]["enum"] == ["passed", "failed", "error"]
